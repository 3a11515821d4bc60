import AerieCore
import AerieStore
import AerieTesting
import Foundation
import Testing

/// `AerieDatabase.markOutboxSent(_:)`: delivered rows without a message, of several tenants,
/// marked sent in one round trip (the delivery service's batches, `OutboxSentMarks`).
@Suite(.timeLimit(.minutes(10))) struct OutboxMarkBatchTests {
    @Test func rowsOfTwoTenantsAreMarkedInOneRoundTripAndNothingElse() async throws {
        try await StoreFixture.with(maxConnections: 1) { fixture in
            let a = try await fixture.createLoggedTenant("A").id
            let b = try await fixture.createTenant("B").id
            var rows: [TenantID: [OutboxItem]] = [:]
            for tenant in [a, b] {
                let record = ConnectionStoreTests.record(invitationId: "inv", key: "KEY")
                let message = MailboxMessage(
                    connectionId: record.id, recipientVerkey: "THEIRKEY", senderVerkey: "MYVERKEY", messageId: "m-1",
                    type: "https://didcomm.org/basicmessage/1.0/message", threadId: nil, status: MailboxMessage.queued,
                    payload: ["@id": "m-1"], direction: .sent)
                // Four handshake rows, then one carrying a message.
                let items = (0..<4).map { _ in OutboxItem(connectionId: record.id, endpoint: "http://peer", envelope: [1]) }
                    + [OutboxItem(connectionId: record.id, endpoint: "http://peer", envelope: [2], messageUid: message.uid)]
                try await fixture.runtime.sealed(tenant).transaction { tx in
                    try tx.connections.insert(record)
                    #expect(try tx.mailbox.insertSent(message))
                    for item in items { try tx.outbox.enqueue(item) }
                }
                rows[tenant] = items
            }
            let (aRows, bRows) = (rows[a]!, rows[b]!)
            let (heard, listener) = try await fixture.listen()
            defer { listener.stop() }
            let roundTrips = { try await fixture.runtime.pool.withConnection { $0.roundTripCount } }

            let before = try await roundTrips()
            // A's first two rows and its message row (never marked here: it has a message), B's
            // third row and A's rows named again under B (not B's: nothing happens to them).
            try await fixture.runtime.markOutboxSent([
                a: [aRows[0].id, aRows[1].id, aRows[4].id], b: [bRows[2].id, aRows[3].id],
            ])
            #expect(try await roundTrips() - before == 1)

            let left = try await fixture.asSuperuser { session -> Set<String> in
                let result = try session.query("SELECT tenant_id::text || '/' || id::text FROM aerie.outbox")
                return Set((0..<result.rowCount).compactMap { result.string($0, 0) })
            }
            let expected = Set(
                [aRows[2], aRows[3], aRows[4]].map { "\(a.rawValue)/\($0.id.lowercasedString)" }
                    + [bRows[0], bRows[1], bRows[3], bRows[4]].map { "\(b.rawValue)/\($0.id.lowercasedString)" })
            #expect(left == expected)
            // The message stays queued: its row was not marked.
            let status = try await fixture.asSuperuser { session in
                try session.query("SELECT status FROM aerie.mailbox WHERE tenant_id = $1::uuid", [.text(a.rawValue)]).string(0, 0)
            }
            #expect(status == MailboxMessage.queued)
            // A (a backend's tenant) logs a delivery event per row marked, B (the operator's) none.
            let events = try await fixture.asSuperuser { session -> [String] in
                let result = try session.query(
                    "SELECT tenant_id::text || '/' || (data->>'outboxId') FROM aerie.events WHERE kind = 'delivery' ORDER BY id")
                return (0..<result.rowCount).compactMap { result.string($0, 0) }
            }
            #expect(Set(events) == Set([aRows[0], aRows[1]].map { "\(a.rawValue)/\($0.id.lowercasedString)" }))
            for _ in 0..<100 where heard.payloads.withLock({ $0.count }) < 2 { try await Task.sleep(for: .milliseconds(20)) }
            #expect(heard.payloads.withLock { $0.filter { $0.contains("\"delivery\"") }.count } == 2)

            // Rows already gone are skipped; an empty batch sends nothing.
            try await fixture.runtime.markOutboxSent([a: [aRows[0].id, aRows[2].id]])
            let afterGone = try await roundTrips()
            try await fixture.runtime.markOutboxSent([:])
            try await fixture.runtime.markOutboxSent([b: []])
            #expect(try await roundTrips() == afterGone)
            #expect(try await fixture.asSuperuser { session in
                try session.query("SELECT count(*)::int FROM aerie.outbox WHERE tenant_id = $1::uuid", [.text(a.rawValue)]).int(0, 0)
            } == 2)
        }
    }
}
