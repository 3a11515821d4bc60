import AerieCore
import AerieStore
import AerieTesting
import Foundation
import Testing

/// Sent messages in `aerie.mailbox` (schema/0016) and the outbox statements that carry their
/// delivery outcome, on a real PostgreSQL, with two tenants.
@Suite(.timeLimit(.minutes(10))) struct SentMessageStoreTests {
    static let basic = "https://didcomm.org/basicmessage/1.0/message"

    @Test func deliveryOutcomeMovesTheSentMessageInTheSameStatement() async throws {
        try await StoreFixture.with { fixture in
            let aID = try await fixture.createTenant("A").id
            let a = fixture.runtime.sealed(aID)
            let b = fixture.runtime.sealed(try await fixture.createTenant("B").id)
            var record = ConnectionStoreTests.record(invitationId: "inv-1", key: "KEY1")
            record.state = .accepted
            record.myDid = "MYDID"
            record.myVerkey = "MYVERKEY"
            record.theirVerkey = "THEIRKEY"
            let connection = record
            try await a.transaction { try $0.connections.insert(connection) }
            let sent: @Sendable (String, String?) -> MailboxMessage = { id, thread in
                MailboxMessage(
                    connectionId: connection.id, recipientVerkey: "THEIRKEY", senderVerkey: "MYVERKEY", messageId: id,
                    type: Self.basic, threadId: thread, status: MailboxMessage.queued, payload: ["@id": .string(id)], direction: .sent)
            }
            let delivered = sent("s-1", nil)
            let failing = sent("s-2", "t-1")
            let deliveredRow = OutboxItem(connectionId: connection.id, endpoint: "http://peer", envelope: [1], messageUid: delivered.uid)
            let failingRow = OutboxItem(connectionId: connection.id, endpoint: "http://peer", envelope: [2], messageUid: failing.uid)
            let duplicate = try await a.transaction { tx -> Bool in
                #expect(try tx.mailbox.insertSent(delivered))
                try tx.outbox.enqueue(deliveredRow)
                #expect(try tx.mailbox.insertSent(failing))
                try tx.outbox.enqueue(failingRow)
                return try tx.mailbox.insertSent(sent("s-1", nil))  // the same @id to the same peer
            }
            #expect(!duplicate)
            let rows = try await a.transaction { try $0.outbox.list(connectionId: connection.id, limit: 10) }
            #expect(Set(rows.map(\.messageUid)) == [delivered.uid, failing.uid])

            try await fixture.runtime.markOutboxSent(deliveredRow.id, tenant: aID)
            try await a.transaction { tx in
                try tx.outbox.recordFailure(failingRow.id, attempts: 1, nextAttemptAt: Date().addingTimeInterval(60), error: "HTTP 500")
            }
            var now = try await a.transaction { tx in (try tx.mailbox.get(delivered.uid), try tx.mailbox.get(failing.uid)) }
            #expect(now.0?.status == MailboxMessage.sent && now.0?.direction == .sent)
            #expect(now.1?.status == MailboxMessage.queued && now.1?.deliveryError == nil, "a retried failure stays queued")
            try await a.transaction { tx in
                try tx.outbox.recordFailure(failingRow.id, attempts: 2, nextAttemptAt: nil, error: "connection refused")
            }
            now = try await a.transaction { tx in (try tx.mailbox.get(delivered.uid), try tx.mailbox.get(failing.uid)) }
            #expect(now.1?.status == MailboxMessage.deliveryFailed)
            #expect(now.1?.deliveryError == "connection refused")

            // A sent message's status is its delivery's; a reply is only ever a received message.
            #expect(try await a.transaction { try $0.mailbox.updateStatus([delivered.uid], pairwiseDid: "MYDID", to: MailboxMessage.reviewed) }.isEmpty)
            #expect(try await a.transaction { try $0.mailbox.receivedReply(connectionId: connection.id, threadId: "t-1", type: Self.basic) } == nil)
            let reply = MailboxMessage(
                connectionId: connection.id, recipientVerkey: "MYVERKEY", senderVerkey: "THEIRKEY", messageId: "r-1", type: Self.basic,
                threadId: "t-1", payload: ["@id": "r-1"])
            _ = try await a.transaction { try $0.mailbox.insert(reply) }
            #expect(try await a.transaction { try $0.mailbox.receivedReply(connectionId: connection.id, threadId: "t-1", type: Self.basic) }?.uid == reply.uid)
            // Received-message readers: the default download lists only the received one.
            let pending = try await a.transaction { try $0.mailbox.download(MailboxQuery(statuses: [MailboxMessage.received], limit: 10)) }
            #expect(pending.map(\.uid) == [reply.uid])

            // Tenant B sees none of it, and cannot move it.
            #expect(try await b.transaction { try $0.mailbox.get(delivered.uid) } == nil)
            #expect(try await b.transaction {
                try $0.mailbox.download(MailboxQuery(statuses: ["MS-101", "MS-102", "MS-103", "MS-105"], limit: 10))
            }.isEmpty)
            try await fixture.runtime.markOutboxSent(failingRow.id, tenant: fixture.createTenant("C").id)
            #expect(try await a.transaction { try $0.mailbox.get(failing.uid) }?.status == MailboxMessage.deliveryFailed)
        }
    }

    /// A connection's Request-like row (no message) and many sent messages of two tenants: a mark
    /// or a final failure moves exactly the message its own row names (the statement probes the
    /// message by key, schema-independent of how many the tenant has), nothing of the other tenant.
    @Test func aMarkMovesOnlyItsOwnMessageAmongMany() async throws {
        try await StoreFixture.with { fixture in
            var ids: [TenantID] = []
            var rows: [TenantID: [OutboxItem]] = [:]
            var messages: [TenantID: [MailboxMessage]] = [:]
            for label in ["A", "B"] {
                let id = try await fixture.createTenant(label).id
                ids.append(id)
                var record = ConnectionStoreTests.record(invitationId: "inv-\(label)", key: "KEY\(label)")
                record.state = .accepted
                record.myVerkey = "MYVERKEY"
                record.theirVerkey = "THEIRKEY"
                let connection = record
                // The same @ids in both tenants.
                let sent = (0..<40).map { n in
                    MailboxMessage(
                        connectionId: connection.id, recipientVerkey: "THEIRKEY", senderVerkey: "MYVERKEY", messageId: "s-\(n)",
                        type: Self.basic, threadId: nil, status: MailboxMessage.queued, payload: ["@id": .string("s-\(n)")], direction: .sent)
                }
                let outbox = sent.map { OutboxItem(connectionId: connection.id, endpoint: "http://peer", envelope: [1], messageUid: $0.uid) }
                    + [OutboxItem(connectionId: connection.id, endpoint: "http://peer", envelope: [2])]
                try await fixture.runtime.sealed(id).transaction { tx in
                    try tx.connections.insert(connection)
                    for message in sent { #expect(try tx.mailbox.insertSent(message)) }
                    for row in outbox { try tx.outbox.enqueue(row) }
                }
                rows[id] = outbox
                messages[id] = sent
            }
            let (a, b) = (ids[0], ids[1])
            let aRows = rows[a]!
            try await fixture.runtime.markOutboxSent(aRows[7].id, tenant: a)
            try await fixture.runtime.markOutboxSent([a: [aRows[40].id]])  // no message
            // The form without the mailbox never marks a row that carries a message.
            try await fixture.runtime.markOutboxSent([a: [aRows[11].id]])
            try await fixture.runtime.sealed(a).transaction { tx in
                try tx.outbox.recordFailure(aRows[9].id, attempts: 3, nextAttemptAt: nil, error: "gone")
                try tx.outbox.recordFailure(aRows[10].id, attempts: 1, nextAttemptAt: Date().addingTimeInterval(60), error: "later")
            }
            let statuses = try await fixture.asSuperuser { session -> [String: String] in
                let result = try session.query(
                    "SELECT tenant_id::text || '/' || message_id, status FROM aerie.mailbox WHERE direction = 'sent'")
                return Dictionary(uniqueKeysWithValues: (0..<result.rowCount).map { (result.string($0, 0)!, result.string($0, 1)!) })
            }
            #expect(statuses.count == 80)
            for (key, status) in statuses {
                let expected =
                    key == "\(a.rawValue)/s-7" ? MailboxMessage.sent : key == "\(a.rawValue)/s-9" ? MailboxMessage.deliveryFailed : MailboxMessage.queued
                #expect(status == expected, "\(key)")
            }
            #expect(messages[b]?.count == 40)
            let outboxStatuses = try await fixture.asSuperuser { session -> [String: String] in
                let result = try session.query("SELECT tenant_id::text || '/' || id::text, status FROM aerie.outbox")
                return Dictionary(uniqueKeysWithValues: (0..<result.rowCount).map { (result.string($0, 0)!, result.string($0, 1)!) })
            }
            // The two delivered rows and the failed one are gone (the outbox holds what is still
            // to be sent); the other tenant's rows of the same ids are all there.
            let ended = [7, 40, 9].map { "\(a.rawValue)/\(aRows[$0].id.lowercasedString)" }
            #expect(outboxStatuses.count == 79)
            #expect(ended.allSatisfy { outboxStatuses[$0] == nil })
            #expect(outboxStatuses.values.allSatisfy { $0 == "pending" })
        }
    }

    /// An outbox row's delivery is logged once and leaves the tenant's pending rows (what the
    /// quota counts, schema/0034): sent (the mark) and failed for good (the status trigger) each
    /// once, a retry neither, and a pending row deleted leaves them too.
    @Test func aDeliveryThatEndsLeavesThePendingRowsAndIsLoggedOnce() async throws {
        try await StoreFixture.with { fixture in
            let a = try await fixture.createLoggedTenant("A").id
            let b = try await fixture.createLoggedTenant("B").id
            let rows = (0..<4).map { _ in OutboxItem(connectionId: nil, endpoint: "http://peer", envelope: [1]) }
            for tenant in [a, b] {
                try await fixture.runtime.sealed(tenant).transaction { tx in for row in rows { try tx.outbox.enqueue(row) } }
            }
            let state: @Sendable (TenantID) async throws -> (pending: Int, events: [String]) = { tenant in
                try await fixture.asSuperuser { session in
                    let pending = try StoreFixture.pendingOutboxRows(session, tenant)
                    let events = try session.query(
                        "SELECT (data->>'outboxId') || ':' || (data->>'status') FROM aerie.events WHERE tenant_id = $1::uuid AND kind = 'delivery' ORDER BY id",
                        [.text(tenant.rawValue)])
                    return (pending, (0..<events.rowCount).map { events.string($0, 0)! })
                }
            }
            #expect(try await state(a).pending == 4)
            try await fixture.runtime.markOutboxSent(rows[0].id, tenant: a)
            try await fixture.runtime.sealed(a).transaction { tx in
                try tx.outbox.recordFailure(rows[1].id, attempts: 1, nextAttemptAt: Date().addingTimeInterval(60), error: "retry")
            }
            var now = try await state(a)
            #expect(now.pending == 3)
            #expect(now.events == ["\(rows[0].id.lowercasedString):sent"])
            try await fixture.runtime.sealed(a).transaction { tx in
                try tx.outbox.recordFailure(rows[1].id, attempts: 2, nextAttemptAt: nil, error: "gone")
            }
            // Marking a row that is no longer pending logs nothing more and counts nothing twice.
            try await fixture.runtime.markOutboxSent(rows[0].id, tenant: a)
            _ = try await fixture.asSuperuser { session in
                try session.execute("DELETE FROM aerie.outbox WHERE tenant_id = $1::uuid AND id = $2::uuid", [.text(a.rawValue), .text(rows[2].id.lowercasedString)])
            }
            now = try await state(a)
            #expect(now.pending == 1)
            #expect(now.events == ["\(rows[0].id.lowercasedString):sent", "\(rows[1].id.lowercasedString):failed"])
            // The other tenant's rows of the same ids are untouched.
            let other = try await state(b)
            #expect(other.pending == 4)
            #expect(other.events.isEmpty)
        }
    }

    /// A delivered row's event is written by the mark's statement, a failed one's by the status
    /// trigger (schema/0032): the two write the same members, in two tenants, and a message's
    /// uid and a connection-less row's null alike.
    @Test func sentAndFailedDeliveryEventsHaveOneShape() async throws {
        try await StoreFixture.with { fixture in
            for tenant in [try await fixture.createLoggedTenant("A").id, try await fixture.createLoggedTenant("B").id] {
                let rows = (0..<2).map { _ in OutboxItem(connectionId: nil, endpoint: "http://peer", envelope: [1], messageUid: UUID()) }
                try await fixture.runtime.sealed(tenant).transaction { tx in for row in rows { try tx.outbox.enqueue(row) } }
                try await fixture.runtime.markOutboxSent(rows[0].id, tenant: tenant)
                try await fixture.runtime.sealed(tenant).transaction { tx in
                    try tx.outbox.recordFailure(rows[1].id, attempts: 6, nextAttemptAt: nil, error: "gone")
                }
                let events = try await fixture.asSuperuser { session in
                    try session.query(
                        """
                        SELECT data->>'status', (SELECT string_agg(k, ',' ORDER BY k) FROM jsonb_object_keys(data) k),
                            data->>'outboxId', data->>'messageUid', jsonb_typeof(data->'connectionId')
                        FROM aerie.events WHERE tenant_id = $1::uuid AND kind = 'delivery' ORDER BY id
                        """, [.text(tenant.rawValue)]
                    ).allRows()
                }
                let keys = "connectionId,messageUid,outboxId,status"
                #expect(events == [
                    ["sent", keys, rows[0].id.lowercasedString, rows[0].messageUid!.lowercasedString, "null"],
                    ["failed", keys, rows[1].id.lowercasedString, rows[1].messageUid!.lowercasedString, "null"],
                ])
            }
        }
    }

    /// schema/0033: a delivery's event row and its NOTIFY (the log's alone: nothing pushes it)
    /// are written for a backend's tenant only. A with a backend logs and NOTIFYs the sent row
    /// (the mark's statement) and the failed one (the status trigger); B without one, neither,
    /// while its rows are delivered, failed and uncounted all the same.
    @Test func aDeliveryIsLoggedAndNotifiedForABackendsTenantOnly() async throws {
        try await StoreFixture.with { fixture in
            let a = try await fixture.createLoggedTenant("A").id
            let b = try await fixture.createTenant("B").id
            let (heard, listener) = try await fixture.listen()
            defer { listener.stop() }
            var rows: [TenantID: [OutboxItem]] = [:]
            for tenant in [a, b] {
                let made = (0..<2).map { _ in OutboxItem(connectionId: nil, endpoint: "http://peer", envelope: [1]) }
                rows[tenant] = made
                try await fixture.runtime.sealed(tenant).transaction { tx in for row in made { try tx.outbox.enqueue(row) } }
                try await fixture.runtime.markOutboxSent(made[0].id, tenant: tenant)
                try await fixture.runtime.sealed(tenant).transaction { tx in
                    try tx.outbox.recordFailure(made[1].id, attempts: 6, nextAttemptAt: nil, error: "gone")
                }
            }
            let state: @Sendable (TenantID) async throws -> (pending: Int, statuses: [String], logged: [String]) = { tenant in
                try await fixture.asSuperuser { session in
                    let pending = try StoreFixture.pendingOutboxRows(session, tenant)
                    let statuses = try session.query(
                        "SELECT status FROM aerie.outbox WHERE tenant_id = $1::uuid ORDER BY status", [.text(tenant.rawValue)])
                    let logged = try session.query(
                        "SELECT (data->>'outboxId') || ':' || (data->>'status') FROM aerie.events WHERE tenant_id = $1::uuid ORDER BY id",
                        [.text(tenant.rawValue)])
                    return (pending, (0..<statuses.rowCount).map { statuses.string($0, 0)! }, (0..<logged.rowCount).map { logged.string($0, 0)! })
                }
            }
            let expected = { (tenant: TenantID) in
                ["\(rows[tenant]![0].id.lowercasedString):sent", "\(rows[tenant]![1].id.lowercasedString):failed"]
            }
            let ofA = try await state(a)
            let ofB = try await state(b)
            #expect(ofA.pending == 0 && ofA.statuses.isEmpty && ofA.logged == expected(a))
            #expect(ofB.pending == 0 && ofB.statuses.isEmpty && ofB.logged.isEmpty)

            // A's two NOTIFYs arrive; none of B's was sent (B's would have come after A's).
            _ = try await heard.parsed(kind: "delivery", atLeast: 2)
            try await Task.sleep(for: .milliseconds(200))
            let notified = try await heard.parsed(kind: "delivery", atLeast: 0)
            #expect(notified.map { "\($0["outboxId"]?.stringValue ?? ""):\($0["status"]?.stringValue ?? "")" } == expected(a))
            #expect(notified.allSatisfy { $0["tenant"] == .string(a.rawValue) })
        }
    }

    /// The mark after delivery commits without waiting for its WAL flush (a crash may lose it:
    /// the row is then sent again), and only it: the setting lasts its own implicit transaction,
    /// so the next user of the connection, and every tenant transaction, commits durably.
    @Test func onlyTheMarkCommitsAsynchronously() async throws {
        try await StoreFixture.with(maxConnections: 1) { fixture in
            // The tests' cluster runs with synchronous_commit off; this database gets the
            // server's own default, before the pool's connection opens.
            let name = fixture.database.name
            _ = try await fixture.asSuperuser { session in
                try session.execute("ALTER DATABASE \"\(name)\" SET synchronous_commit = on")
            }
            let a = try await fixture.createTenant("A").id
            // What synchronous_commit each end of an outbox row's delivery ran under (a delivered
            // row is deleted; a failed one is marked, then deleted).
            try await fixture.asSuperuser { session in
                try session.execute("CREATE TABLE public.seen_commit_modes (mode text NOT NULL, status text NOT NULL)")
                try session.execute("GRANT INSERT, SELECT ON public.seen_commit_modes TO PUBLIC")
                try session.execute(
                    """
                    CREATE FUNCTION public.note_commit_mode() RETURNS trigger LANGUAGE plpgsql AS $$
                    BEGIN
                        INSERT INTO public.seen_commit_modes
                        VALUES (current_setting('synchronous_commit'), CASE TG_OP WHEN 'DELETE' THEN OLD.status || ' deleted' ELSE NEW.status END);
                        RETURN NULL;
                    END $$
                    """)
                try session.execute(
                    "CREATE TRIGGER note_commit_mode AFTER UPDATE OF status OR DELETE ON aerie.outbox FOR EACH ROW EXECUTE FUNCTION public.note_commit_mode()")
            }
            let rows = (0..<2).map { _ in OutboxItem(connectionId: nil, endpoint: "http://peer", envelope: [1]) }
            try await fixture.runtime.sealed(a).transaction { tx in for row in rows { try tx.outbox.enqueue(row) } }
            try await fixture.runtime.markOutboxSent(rows[0].id, tenant: a)
            let after = try await fixture.runtime.withSession { try $0.query("SHOW synchronous_commit").string(0, 0) }
            #expect(after == "on")
            try await fixture.runtime.sealed(a).transaction { tx in
                try tx.outbox.recordFailure(rows[1].id, attempts: 5, nextAttemptAt: nil, error: "gone")
            }
            let seen = try await fixture.asSuperuser { session in
                let result = try session.query("SELECT status || '=' || mode FROM public.seen_commit_modes ORDER BY status")
                return (0..<result.rowCount).map { result.string($0, 0)! }
            }
            #expect(Set(seen) == ["pending deleted=off", "failed=on", "failed deleted=on"] && seen.count == 3)
        }
    }
}
