import AerieCore
import AerieStore
import AerieTesting
import Foundation
import Testing

/// The mailbox quota over the striped count (schema/0071): each database session counts into its
/// own stripe of the tenant's usage, the check sums the stripes, and near the limit takes them
/// all, so the limit holds exactly. Two tenants, each with its own count.
@Suite(.timeLimit(.minutes(10))) struct MailboxQuotaTests {
    /// A runtime pool of `connections` sessions whose sessions carry a mailbox limit of `limit`.
    static func withLimit(
        _ limit: Int, _ fixture: StoreFixture, connections: Int, _ body: (AerieDatabase) async throws -> Void
    ) async throws {
        try await withPool(
            fixture.database.runtimeConninfo, maxConnections: connections,
            quotas: DatabaseConfiguration.Quotas(mailboxMessages: limit, mailboxBytes: 0, outboxPending: 0), body)
    }

    static func message() -> MailboxMessage {
        let id = UUID().lowercasedString
        return MailboxMessage(
            connectionId: nil, recipientVerkey: "VERKEY", senderVerkey: "THEIRS", messageId: id,
            type: "https://didcomm.org/basicmessage/1.0/message", threadId: nil, payload: ["@id": .string(id)])
    }

    /// The tenant's stored messages, the sum of its stripes, and how many stripes it has.
    static func counts(_ fixture: StoreFixture, _ tenant: TenantID) async throws -> (stored: Int, counted: Int, stripes: Int) {
        try await fixture.asSuperuser { session in
            let r = try session.query(
                """
                SELECT (SELECT count(*) FROM aerie.mailbox m WHERE m.tenant_id = $1::uuid),
                    (SELECT coalesce(sum(u.mailbox_messages), 0) FROM aerie.tenant_usage u WHERE u.tenant_id = $1::uuid),
                    (SELECT count(*) FROM aerie.tenant_usage u WHERE u.tenant_id = $1::uuid)
                """, [.text(tenant.rawValue)])
            return (r.int(0, 0) ?? -1, r.int(0, 1) ?? -1, r.int(0, 2) ?? -1)
        }
    }

    /// Stores racing towards the limit from 8 sessions, from far (no waiting) to the last free
    /// place (every stripe taken): exactly the limit is stored, each one refused stored nothing,
    /// and the count equals the rows. Another tenant's room is untouched; one transaction of many
    /// messages is held to it too.
    @Test func storesRacingAtTheLimitStoreExactlyTheLimit() async throws {
        try await StoreFixture.with { fixture in
            let a = try await fixture.createTenant("A").id
            let b = try await fixture.createTenant("B").id
            try await Self.withLimit(400, fixture, connections: 8) { pool in
                let outcomes = await withTaskGroup(of: AerieError.Code?.self) { group in
                    for _ in 0..<460 {
                        group.addTask {
                            do {
                                _ = try await pool.sealed(a).transaction { tx in try tx.mailbox.insert(Self.message()) }
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
                #expect(outcomes.compactMap { $0 }.allSatisfy { $0 == AerieError.Code.quotaExceeded }, "\(outcomes)")
                #expect(outcomes.filter { $0 == nil }.count == 400)
                let counts = try await Self.counts(fixture, a)
                #expect(counts.stored == 400 && counts.counted == 400, "\(counts)")
                #expect(counts.stripes > 1, "\(counts)")

                // Full, whichever session asks.
                for _ in 0..<8 {
                    await #expect(throws: AerieError.self) {
                        _ = try await pool.sealed(a).transaction { tx in try tx.mailbox.insert(Self.message()) }
                    }
                }
                // B's room is its own; one transaction cannot pass it either (it sees its own rows).
                await #expect(throws: AerieError.self) {
                    try await pool.sealed(b).transaction { tx in
                        for _ in 0..<401 { _ = try tx.mailbox.insert(Self.message()) }
                    }
                }
                #expect(try await Self.counts(fixture, b).stored == 0)
                try await pool.sealed(b).transaction { tx in
                    for _ in 0..<400 { _ = try tx.mailbox.insert(Self.message()) }
                }
                await #expect(throws: AerieError.self) {
                    _ = try await pool.sealed(b).transaction { tx in try tx.mailbox.insert(Self.message()) }
                }
                #expect(try await Self.counts(fixture, b).counted == 400)
            }
        }
    }

    /// A message counted in one session's stripe and deleted in another's leaves the sum right
    /// (a stripe may go below zero), and the room it made is taken again from any session.
    @Test func aDeleteInAnotherStripeMakesRoom() async throws {
        try await StoreFixture.with { fixture in
            let a = try await fixture.createTenant("A").id
            try await Self.withLimit(3, fixture, connections: 4) { pool in
                for _ in 0..<3 {
                    _ = try await pool.sealed(a).transaction { tx in try tx.mailbox.insert(Self.message()) }
                }
                await #expect(throws: AerieError.self) {
                    _ = try await pool.sealed(a).transaction { tx in try tx.mailbox.insert(Self.message()) }
                }
                // Deleted by the superuser's session: another backend, most likely another stripe.
                _ = try await fixture.asSuperuser { session in
                    try session.execute(
                        "DELETE FROM aerie.mailbox WHERE uid = (SELECT uid FROM aerie.mailbox WHERE tenant_id = $1::uuid LIMIT 1)",
                        [.text(a.rawValue)])
                }
                #expect(try await Self.counts(fixture, a).counted == 2)
                _ = try await pool.sealed(a).transaction { tx in try tx.mailbox.insert(Self.message()) }
                await #expect(throws: AerieError.self) {
                    _ = try await pool.sealed(a).transaction { tx in try tx.mailbox.insert(Self.message()) }
                }
                let counts = try await Self.counts(fixture, a)
                #expect(counts.stored == 3 && counts.counted == 3, "\(counts)")
            }
        }
    }
}
