import AerieCore
import AerieCrypto
import AerieStore
import AerieTesting
import Foundation
import Logging
import Synchronization
import Testing

@testable import AerieServer

/// The marks of delivered rows that carry a sent message (`OutboxMessageMarks`): made at once by
/// many deliveries of two tenants, every row goes, every message is `MS-102` with its delivery
/// event for its own tenant, whichever write carried it; a mark of a row already gone is a no-op.
@Suite(.timeLimit(.minutes(10))) struct OutboxMessageMarksTests {
    static let basic = "https://didcomm.org/basicmessage/1.0/message"

    @Test func marksMadeAtOnceAreAllWrittenWithTheirMessagesAndEvents() async throws {
        try await TestPostgres.shared.withFreshRuntime(maxConnections: 4) { database, runtime in
            let tenants = try await OutboxSentMarksTests.tenants(["A", "B"], in: runtime)
            let keyrings = Dictionary(uniqueKeysWithValues: tenants.map { ($0, FixedTenantKeyring(tenantID: $0, dataKey: DataKey.generate())) })
            let connection = UUID.random()
            var made: [(tenant: TenantID, row: UUID, message: UUID)] = []
            for tenant in tenants {
                let messages = (0..<12).map { index in
                    MailboxMessage(
                        connectionId: connection, recipientVerkey: "THEIRKEY", senderVerkey: "MYVERKEY", messageId: "s-\(index)",
                        type: Self.basic, threadId: nil, status: MailboxMessage.queued, payload: ["@id": .string("s-\(index)")],
                        direction: .sent)
                }
                let items = messages.map { OutboxItem(connectionId: connection, endpoint: "http://peer", envelope: [1], messageUid: $0.uid) }
                try await runtime.tenant(tenant).sealing(with: keyrings[tenant]!).transaction { tx in
                    for (message, item) in zip(messages, items) {
                        _ = try tx.mailbox.insertSent(message)
                        try tx.outbox.enqueue(item)
                    }
                }
                made += zip(items, messages).map { (tenant, $0.id, $1.uid) }
            }
            let heard = Mutex<[String]>([])
            let listener = PostgresEventListener(
                conninfo: database.runtimeConninfo, channel: "aerie_events", logger: Logger(label: "test")
            ) { payload in heard.withLock { $0.append(payload) } }
            listener.start()
            defer { listener.stop() }
            for _ in 0..<500 where !listener.isListening { try await Task.sleep(for: .milliseconds(20)) }

            let marks = OutboxMessageMarks(maxPerWrite: 5)
            let rows = made
            try await withThrowingTaskGroup(of: Void.self) { group in
                for entry in rows { group.addTask { try await marks.mark(entry.row, tenant: entry.tenant, database: runtime) } }
                // A row marked twice: the second finds it gone.
                group.addTask { try await marks.mark(rows[0].row, tenant: rows[0].tenant, database: runtime) }
                try await group.waitForAll()
            }

            for tenant in tenants {
                let (left, statuses) = try await runtime.tenant(tenant).sealing(with: keyrings[tenant]!).transaction { tx in
                    (
                        try tx.outbox.list(connectionId: connection, limit: 100).count,
                        try rows.filter { $0.tenant == tenant }.map { try tx.mailbox.get($0.message)?.status }
                    )
                }
                #expect(left == 0)
                #expect(statuses == Array(repeating: MailboxMessage.sent, count: 12))
            }
            var delivered: [String: Set<String>] = [:]
            for _ in 0..<500 {
                delivered = [:]
                for payload in heard.withLock({ $0 }) {
                    let event = try JSONValue(parsing: payload)
                    guard event["kind"] == "delivery", event["status"] == .string(MailboxMessage.sent),
                        let tenant = event["tenant"]?.stringValue, let uid = event["uid"]?.stringValue
                    else { continue }
                    delivered[tenant, default: []].insert(uid)
                }
                if delivered.values.map(\.count).reduce(0, +) >= rows.count { break }
                try await Task.sleep(for: .milliseconds(20))
            }
            for tenant in tenants {
                let expected: Set<String> = Set(rows.filter { $0.tenant == tenant }.map { $0.message.lowercasedString })
                let heardOfTenant: Set<String> = delivered[tenant.rawValue] ?? []
                #expect(heardOfTenant == expected)
            }
        }
    }

    /// A write that fails (the database cannot be reached) fails every mark it carried, each
    /// caller gets the error and none waits for good; the next marks write again (and fail the
    /// same way), so a failed write leaves no mark waiting for a writer.
    @Test func aFailedWriteFailsEveryMarkItCarriedAndTheNextOnesWriteAgain() async throws {
        var configuration = DatabaseConfiguration(conninfo: "host=/nonexistent-aerie-socket-dir dbname=none connect_timeout=1", maxConnections: 1)
        configuration.acquireTimeout = .seconds(2)
        let unreachable = AerieDatabase(configuration: configuration, logger: Logger(label: "test"))
        defer { Task { await unreachable.shutdown() } }
        let marks = OutboxMessageMarks(maxPerWrite: 3)
        let tenant = TenantID.random()
        for round in 0..<2 {
            let failures = try await withThrowingTaskGroup(of: Bool.self) { group in
                for _ in 0..<8 {
                    group.addTask {
                        do {
                            try await marks.mark(UUID.random(), tenant: tenant, database: unreachable)
                            return false
                        } catch {
                            return true
                        }
                    }
                }
                return try await group.reduce(0) { $0 + ($1 ? 1 : 0) }
            }
            #expect(failures == 8, "round \(round)")
        }
    }
}
