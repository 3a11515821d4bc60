import AerieCore
import AerieStore
import AerieTesting
import Foundation
import Testing

/// Which stripe of a tenant's count a store takes (schema/0077): the session's own
/// (`pg_backend_pid() % 16`) unless another transaction holds it, else a free one, so a store
/// never waits for another transaction's commit on the count. The sessions here share a stripe on
/// purpose (opened until two do): with the session's stripe alone, the second waited for the
/// first, and in the lock order below the two deadlocked. Two tenants, each with its own count.
@Suite(.timeLimit(.minutes(10))) struct UsageStripeTests {
    /// A runtime session whose transactions are run with explicit statements.
    final class Session: @unchecked Sendable {
        let connection: PostgresConnection
        let pid: Int

        init(_ conninfo: String) throws {
            connection = try PostgresConnection(conninfo: conninfo)
            pid = try connection.query("SELECT pg_backend_pid()").int(0, 0) ?? -1
        }

        /// Begins a transaction of `tenant` in which nothing waits a lock longer than 5 s.
        func begin(_ tenant: TenantID) throws {
            try connection.query("BEGIN")
            try connection.query("SET LOCAL lock_timeout = '5s'")
            try connection.query("SELECT set_config('aerie.tenant_id', $1, true)", [.text(tenant.rawValue)])
        }

        func storeMessage(_ tenant: TenantID) throws {
            try connection.query(
                """
                INSERT INTO aerie.mailbox (tenant_id, uid, recipient_verkey, message_id, type, status, sealed)
                VALUES ($1::uuid, gen_random_uuid(), 'VERKEY', gen_random_uuid()::text, 'https://didcomm.org/basicmessage/1.0/message',
                    'MS-103', '\\x01'::bytea)
                """, [.text(tenant.rawValue)])
        }
    }

    /// Two runtime sessions on one stripe: sessions are opened until one shares the first's.
    static func sessionsSharingAStripe(_ conninfo: String) throws -> (Session, Session) {
        let first = try Session(conninfo)
        var others: [Session] = []
        defer { others.forEach { $0.connection.close() } }
        for _ in 0..<96 {
            let next = try Session(conninfo)
            if next.pid % 16 == first.pid % 16 { return (first, next) }
            others.append(next)
        }
        throw AerieError.internalError(details: "no two of 97 sessions shared a stripe")
    }

    static func counts(_ fixture: StoreFixture, _ tenant: TenantID) async throws -> (stored: Int, counted: Int, stripes: Int) {
        try await MailboxQuotaTests.counts(fixture, tenant)
    }

    /// A store whose session's stripe another open transaction holds counts into another stripe
    /// at once (under a 5 s lock timeout); the sum of the stripes is every stored message.
    @Test func aStoreNeverWaitsForAStripeAnotherTransactionHolds() async throws {
        try await StoreFixture.with { fixture in
            let a = try await fixture.createTenant("A").id
            let b = try await fixture.createTenant("B").id
            let (holder, second) = try Self.sessionsSharingAStripe(fixture.database.runtimeConninfo)
            defer { [holder, second].forEach { $0.connection.close() } }

            try holder.begin(a)
            try holder.storeMessage(a)
            let started = ContinuousClock.now
            try second.begin(a)
            try second.storeMessage(a)
            try second.connection.query("COMMIT")
            #expect(ContinuousClock.now - started < .seconds(2), "the second store waited for the first's stripe")
            try holder.connection.query("COMMIT")

            let countsA = try await Self.counts(fixture, a)
            #expect(countsA.stored == 2 && countsA.counted == 2 && countsA.stripes == 2, "\(countsA)")
            // The same session again alone takes its own stripe back: no third row.
            try second.begin(a)
            try second.storeMessage(a)
            try second.connection.query("COMMIT")
            let again = try await Self.counts(fixture, a)
            #expect(again.stored == 3 && again.counted == 3 && again.stripes == 2, "\(again)")
            // B's count is its own.
            try holder.begin(b)
            try holder.storeMessage(b)
            try holder.connection.query("COMMIT")
            let countsB = try await Self.counts(fixture, b)
            #expect(countsB.stored == 1 && countsB.counted == 1, "\(countsB)")
            #expect(try await Self.counts(fixture, a).counted == 3)
        }
    }

    /// The lock order of a remembered recipient's store (its connection locked, then the count)
    /// against a handler's (the count, then its connection locked), on sessions sharing a stripe:
    /// the store counts into another stripe and commits, then the handler goes on. With the
    /// session's stripe alone, each waited for the other, and PostgreSQL broke the deadlock by
    /// failing one of them after `deadlock_timeout`.
    @Test func aStoreLockingItsConnectionFirstDoesNotDeadlockWithAHandler() async throws {
        try await StoreFixture.with { fixture in
            let a = try await fixture.createTenant("A").id
            let b = try await fixture.createTenant("B").id
            let connection = UUID().lowercasedString
            _ = try await fixture.asSuperuser { session in
                try session.execute(
                    "INSERT INTO aerie.connections (tenant_id, id, state, invitation_kind) VALUES ($1::uuid, $2::uuid, 'accepted', 'x')",
                    [.text(a.rawValue), .text(connection)])
            }
            let (handler, store) = try Self.sessionsSharingAStripe(fixture.database.runtimeConninfo)
            defer { [handler, store].forEach { $0.connection.close() } }

            // The handler counts first (its message stored ahead of its body)...
            try handler.begin(a)
            try handler.storeMessage(a)
            // ...the remembered store locks its connection against a delete...
            try store.begin(a)
            try store.connection.query(
                "SELECT FROM aerie.connections WHERE tenant_id = $1::uuid AND id = $2::uuid FOR KEY SHARE",
                [.text(a.rawValue), .text(connection)])
            // ...the handler's body locks the connection, and waits for the store's commit...
            let locking = Task {
                try await offPool {
                    try handler.connection.query(
                        "SELECT FROM aerie.connections WHERE tenant_id = $1::uuid AND id = $2::uuid FOR UPDATE",
                        [.text(a.rawValue), .text(connection)])
                    try handler.connection.query("COMMIT")
                }
            }
            try await Task.sleep(for: .milliseconds(300))
            // ...and the store counts: into a free stripe, so it commits instead of deadlocking.
            try await offPool {
                try store.storeMessage(a)
                try store.connection.query("COMMIT")
            }
            try await locking.value

            let countsA = try await Self.counts(fixture, a)
            #expect(countsA.stored == 2 && countsA.counted == 2, "\(countsA)")
            #expect(try await Self.counts(fixture, b).counted == 0)
        }
    }
}
