import AerieCore
import AerieStore
import AerieTesting
import Foundation
import Testing

/// schema/0036: `connections.accept`'s duplicate match as a check queued with its writes
/// (`ConnectionRepository.requireNoMatch`), and the transaction that sends a body of queued writes
/// in one round trip (`TenantDatabase.rerunnableTransaction`).
@Suite(.timeLimit(.minutes(10))) struct ConnectionMatchCheckTests {
    static let verkeyA = KeyRepositoryTests.verkeyA
    static let verkeyB = KeyRepositoryTests.verkeyB

    @Test func theCheckFailsTheTransactionWhenAConnectionMatchesAndStoresNothing() async throws {
        try await StoreFixture.with(maxConnections: 1) { fixture in
            let a = fixture.runtime.sealed(try await fixture.createTenant("A").id)
            let b = fixture.runtime.sealed(try await fixture.createTenant("B").id)
            let stored = ConnectionStoreTests.record(invitationId: "inv-1", key: "KEY1", publicDid: "DIDX")
            var deleted = ConnectionStoreTests.record(invitationId: "inv-gone", key: "KEY-GONE")
            deleted.state = .deleted
            let deletedRow = deleted
            try await a.transaction { tx in
                try tx.connections.insert(stored)
                try tx.connections.insert(deletedRow)
            }

            /// The check for these keys, then a key queued after it: true when it committed.
            @Sendable func connect(_ db: any TenantDatabase, id: String?, did: String?, key: String?, verkey: String) async throws -> Bool {
                do {
                    try await db.rerunnableTransaction { tx in
                        try tx.connections.requireNoMatch(invitationId: id, publicDid: did, firstRecipientKey: key)
                        try tx.keys.insert(verkey: verkey, sealedSecret: [1])
                    }
                    return true
                } catch {
                    #expect(MatchingConnection.exists(error), "\(String(reflecting: error))")
                    #expect((error as? AerieError)?.code == .conflict)
                    return false
                }
            }
            // Each key alone matches, as findMatching does; the key queued after the check is not stored.
            #expect(try await connect(a, id: "inv-1", did: nil, key: nil, verkey: Self.verkeyA) == false)
            #expect(try await connect(a, id: "new", did: "DIDX", key: nil, verkey: Self.verkeyA) == false)
            #expect(try await connect(a, id: "new", did: nil, key: "KEY1", verkey: Self.verkeyA) == false)
            #expect(try await a.read { try $0.keys.sealedSecret(verkey: Self.verkeyA) } == nil)
            // A deleted connection does not match; nor does another tenant's.
            #expect(try await connect(a, id: "inv-gone", did: nil, key: "KEY-GONE", verkey: Self.verkeyA))
            #expect(try await connect(b, id: "inv-1", did: "DIDX", key: "KEY1", verkey: Self.verkeyB))
            #expect(try await a.read { try $0.keys.sealedSecret(verkey: Self.verkeyA) } == [1])
            #expect(try await b.read { try $0.keys.sealedSecret(verkey: Self.verkeyB) } == [1])
            // A body that reads after the check (the out-of-band plugin's store) is an ordinary
            // transaction: the check fails at that read, which throws, and nothing is kept.
            let failedAtRead = await #expect(throws: AerieError.self) {
                try await a.rerunnableTransaction { tx in
                    try tx.connections.requireNoMatch(invitationId: "inv-1", publicDid: nil, firstRecipientKey: nil)
                    try tx.settings.set("after the check", to: true)
                }
            }
            #expect(failedAtRead.map(MatchingConnection.exists) == true)
            #expect(try await a.read { try $0.settings.get("after the check") } == nil)
            // No key: nothing to check.
            try await b.rerunnableTransaction { tx in
                try tx.connections.requireNoMatch(invitationId: nil, publicDid: nil, firstRecipientKey: nil)
            }
        }
    }

    @Test func aRerunnableTransactionOfQueuedWritesIsOneRoundTrip() async throws {
        try await StoreFixture.with(maxConnections: 1) { fixture in
            let a = fixture.runtime.sealed(try await fixture.createTenant("A").id)
            let b = fixture.runtime.sealed(try await fixture.createTenant("B").id)
            let roundTrips = { try await fixture.runtime.pool.withConnection { $0.roundTripCount } }

            let before = try await roundTrips()
            try await a.rerunnableTransaction { try $0.keys.insert(verkey: Self.verkeyA, sealedSecret: [1]) }
            let afterRerunnable = try await roundTrips()
            try await b.transaction { try $0.keys.insert(verkey: Self.verkeyB, sealedSecret: [2]) }
            let afterTransaction = try await roundTrips()
            #expect(afterRerunnable - before == 1)
            #expect(afterTransaction - afterRerunnable == 2)
            #expect(try await a.read { try $0.keys.sealedSecret(verkey: Self.verkeyA) } == [1])
            #expect(try await b.read { try $0.keys.sealedSecret(verkey: Self.verkeyB) } == [2])

            // A body that reads is an ordinary transaction: its writes still commit as one.
            let seen = try await b.rerunnableTransaction { tx in
                try tx.settings.set("written", to: true)
                return try tx.keys.list(after: nil, limit: 10).map(\.verkey)
            }
            #expect(seen == [Self.verkeyB])
            #expect(try await b.read { try $0.settings.get("written") } == .bool(true))
            // A failed queued write stores nothing of the implicit transaction: C, queued before
            // the insert of a key that exists (A's), is gone with it.
            let failed = await #expect(throws: AerieError.self) {
                try await b.rerunnableTransaction { tx in
                    try tx.keys.insert(verkey: KeyRepositoryTests.verkeyC, sealedSecret: [3])
                    try tx.keys.insert(verkey: Self.verkeyA, sealedSecret: [9])
                }
            }
            #expect(failed?.code == .conflict)
            #expect(try await b.read { try $0.keys.sealedSecret(verkey: KeyRepositoryTests.verkeyC) } == nil)
            // The connection is left with no tenant set.
            let left = try await fixture.runtime.pool.read { session in
                try session.query("SELECT coalesce(current_setting('aerie.tenant_id', true), '')").string(0, 0)
            }
            #expect(left == "")
        }
    }

    /// A connection found dead when the one pipeline is sent runs the body again on a fresh one
    /// (the pooled connection is killed first, as a database restart would). Run twice after it
    /// committed, the check finds what the first run stored.
    @Test func aRerunnableTransactionOnADeadConnectionRunsAgainAndItsCheckFindsTheFirstRun() async throws {
        try await StoreFixture.with(maxConnections: 1) { fixture in
            let a = fixture.runtime.sealed(try await fixture.createTenant("A").id)
            let b = fixture.runtime.sealed(try await fixture.createTenant("B").id)
            #expect(try await a.read { try $0.keys.sealedSecret(verkey: Self.verkeyA) } == nil)
            #expect(try await fixture.killRuntimeSessions() >= 1)
            let record = ConnectionStoreTests.record(invitationId: "inv-1", key: "KEY1")
            @Sendable func accept(_ db: any TenantDatabase, verkey: String) async throws {
                try await db.rerunnableTransaction { tx in
                    try tx.connections.requireNoMatch(invitationId: "inv-1", publicDid: nil, firstRecipientKey: "KEY1")
                    try tx.keys.insert(verkey: verkey, sealedSecret: [1])
                    try tx.connections.insert(record)
                }
            }
            try await accept(a, verkey: Self.verkeyA)
            #expect(try await a.read { try $0.keys.sealedSecret(verkey: Self.verkeyA) } == [1])
            #expect(try await a.read { try $0.connections.get(record.id) }?.invitationId == "inv-1")
            // The same body again, as a rerun after an unknown outcome would be: refused by its check.
            let again = await #expect(throws: AerieError.self) { try await accept(a, verkey: Self.verkeyB) }
            #expect(again.map(MatchingConnection.exists) == true)
            #expect(try await a.read { try $0.keys.sealedSecret(verkey: Self.verkeyB) } == nil)
            // B's own copy of the invitation is not A's connection.
            try await accept(b, verkey: Self.verkeyB)
            #expect(try await b.read { try $0.connections.get(record.id) }?.invitationId == "inv-1")
        }
    }
}
