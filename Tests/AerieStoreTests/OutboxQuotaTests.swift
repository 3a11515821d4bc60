import AerieCore
import AerieStore
import AerieTesting
import Foundation
import Logging
import Testing

/// The outbox quota checked by the insert itself (schema/0034): a row is queued only while fewer
/// of its tenant's rows are pending than `AERIE_OUTBOX_MAX_PENDING`; the one past it fails the
/// whole transaction with `quota_exceeded`. Two tenants, each with its own count.
@Suite(.timeLimit(.minutes(10))) struct OutboxQuotaTests {
    /// A runtime pool whose sessions carry an outbox limit of `limit`.
    static func withLimit(
        _ limit: Int, _ fixture: StoreFixture, connections: Int = 1, _ body: (AerieDatabase) async throws -> Void
    ) async throws {
        try await withPool(
            fixture.database.runtimeConninfo, maxConnections: connections,
            quotas: DatabaseConfiguration.Quotas(mailboxMessages: 0, mailboxBytes: 0, outboxPending: limit), body)
    }

    static func row() -> OutboxItem { OutboxItem(connectionId: nil, endpoint: "http://peer", envelope: [1]) }

    static func stored(_ fixture: StoreFixture, _ tenant: TenantID) async throws -> [String] {
        try await fixture.asSuperuser { session in
            let result = try session.query(
                "SELECT status FROM aerie.outbox WHERE tenant_id = $1::uuid ORDER BY status", [.text(tenant.rawValue)])
            return (0..<result.rowCount).map { result.string($0, 0)! }
        }
    }

    @Test func thePendingRowPastTheLimitFailsItsTransactionAndOnlyItsTenantsRowsCount() async throws {
        try await StoreFixture.with { fixture in
            let a = try await fixture.createTenant("A").id
            let b = try await fixture.createTenant("B").id
            try await Self.withLimit(2, fixture) { pool in
                let first = Self.row()
                try await pool.sealed(a).transaction { tx in
                    try tx.outbox.enqueue(first)
                    try tx.outbox.enqueue(Self.row())
                }
                // The third, with a setting written in the same transaction: nothing of it stays.
                let refused = await #expect(throws: AerieError.self) {
                    try await pool.sealed(a).transaction { tx in
                        try tx.settings.set("written-with-the-third", to: "x")
                        try tx.outbox.enqueue(Self.row())
                    }
                }
                #expect(refused?.code == .quotaExceeded)
                #expect(refused?.message.contains("AERIE_OUTBOX_MAX_PENDING") == true, "\(String(describing: refused))")
                #expect(try await Self.stored(fixture, a) == ["pending", "pending"])
                #expect(try await pool.sealed(a).read { try $0.settings.get("written-with-the-third") } == nil)

                // One transaction cannot pass the limit either: it sees its own rows.
                await #expect(throws: AerieError.self) {
                    try await pool.sealed(b).transaction { tx in
                        for _ in 0..<3 { try tx.outbox.enqueue(Self.row()) }
                    }
                }
                #expect(try await Self.stored(fixture, b).isEmpty)
                // B's room is its own: A's two pending rows do not count against it.
                try await pool.sealed(b).transaction { tx in
                    try tx.outbox.enqueue(Self.row())
                    try tx.outbox.enqueue(Self.row())
                }
                #expect(try await Self.stored(fixture, b) == ["pending", "pending"])

                // A row that failed for good, or was delivered, is gone: room again.
                try await pool.sealed(a).transaction { tx in
                    try tx.outbox.recordFailure(first.id, attempts: 6, nextAttemptAt: nil, error: "gone")
                }
                try await pool.sealed(a).transaction { tx in try tx.outbox.enqueue(Self.row()) }
                #expect(try await Self.stored(fixture, a) == ["pending", "pending"])
                // At the limit again; a delivered row (deleted by its mark) makes room.
                let delivered = Self.row()
                await #expect(throws: AerieError.self) {
                    try await pool.sealed(a).transaction { tx in try tx.outbox.enqueue(delivered) }
                }
                let pending = try await fixture.asSuperuser { session in
                    try session.query(
                        "SELECT id::text FROM aerie.outbox WHERE tenant_id = $1::uuid AND status = 'pending' LIMIT 1", [.text(a.rawValue)]
                    ).string(0, 0)
                }
                try await pool.markOutboxSent([a: [try #require(pending.flatMap { UUID(text: $0) })]])
                try await pool.sealed(a).transaction { tx in try tx.outbox.enqueue(delivered) }
                #expect(try await Self.stored(fixture, a) == ["pending", "pending"])
            }
        }
    }

    /// Sends racing at the limit: each counts the rows committed when it starts, so together they
    /// pass the limit by at most how many run at once (here the pool's 4 connections: 2 + 3), and
    /// each one refused stored nothing. Another tenant's room is untouched.
    @Test func sendsRacingAtTheLimitPassItByAtMostTheNumberRunningAtOnce() async throws {
        try await StoreFixture.with { fixture in
            let a = try await fixture.createTenant("A").id
            let b = try await fixture.createTenant("B").id
            try await Self.withLimit(2, fixture, connections: 4) { pool in
                let outcomes = await withTaskGroup(of: AerieError.Code?.self) { group in
                    for _ in 0..<12 {
                        group.addTask {
                            do {
                                try await pool.sealed(a).transaction { tx in try tx.outbox.enqueue(Self.row()) }
                                return nil
                            } catch let error as AerieError {
                                return error.code
                            } catch {
                                return .internalError
                            }
                        }
                    }
                    return await group.reduce(into: [AerieError.Code?]()) { $0.append($1) }
                }
                let queued = outcomes.filter { $0 == nil }.count
                let refusals = outcomes.compactMap { $0 }
                #expect(refusals.allSatisfy { $0 == AerieError.Code.quotaExceeded }, "\(outcomes)")
                #expect((2...5).contains(queued), "\(queued) queued")
                #expect(try await Self.stored(fixture, a).count == queued)
                try await pool.sealed(b).transaction { tx in
                    try tx.outbox.enqueue(Self.row())
                    try tx.outbox.enqueue(Self.row())
                }
                #expect(try await Self.stored(fixture, b).count == 2)
            }
        }
    }

    /// No limit (0): nothing is counted.
    @Test func noLimitQueuesAnyNumber() async throws {
        try await StoreFixture.with { fixture in
            let a = try await fixture.createTenant("A").id
            try await Self.withLimit(0, fixture) { pool in
                try await pool.sealed(a).transaction { tx in
                    for _ in 0..<25 { try tx.outbox.enqueue(Self.row()) }
                }
            }
            #expect(try await Self.stored(fixture, a).count == 25)
        }
    }
}
