import AerieCore
import AerieStore
import AerieTesting
import Foundation
import Testing

/// Writes whose outcome a transaction does not read (`DatabaseSession.executeLater`: key and
/// connection inserts, outbox rows, updates of held rows) travel with the transaction's next
/// statement or its `COMMIT`: in order, all or nothing, their errors thrown by the transaction.
@Suite(.timeLimit(.minutes(10))) struct QueuedWritesTests {
    static let verkeyA = KeyRepositoryTests.verkeyA
    static let verkeyB = KeyRepositoryTests.verkeyB

    @Test func queuedWritesCommitWithTheTransactionAndAreSeenByItsLaterStatements() async throws {
        try await StoreFixture.with(maxConnections: 1) { fixture in
            let a = try await fixture.createTenant("A").id
            let b = try await fixture.createTenant("B").id
            // Only queued writes: BEGIN, the tenant, the writes and COMMIT in one pipeline.
            try await fixture.runtime.sealed(a).transaction { try $0.keys.insert(verkey: Self.verkeyA, sealedSecret: [1]) }
            // A queued write, then a statement of the same transaction that reads it.
            let seen = try await fixture.runtime.sealed(b).transaction { tx in
                try tx.keys.insert(verkey: Self.verkeyB, sealedSecret: [2])
                return try tx.keys.list(after: nil, limit: 10).map(\.verkey)
            }
            #expect(seen == [Self.verkeyB])
            #expect(try await fixture.runtime.sealed(a).read { try $0.keys.list(after: nil, limit: 10) }.map(\.verkey) == [Self.verkeyA])
            #expect(try await fixture.runtime.sealed(b).read { try $0.keys.sealedSecret(verkey: Self.verkeyB) } == [2])
        }
    }

    @Test func aFailedQueuedWriteRollsBackTheWholeTransaction() async throws {
        try await StoreFixture.with(maxConnections: 1) { fixture in
            let a = try await fixture.createTenant("A").id
            let b = try await fixture.createTenant("B").id
            try await fixture.runtime.sealed(a).transaction { try $0.keys.insert(verkey: Self.verkeyA, sealedSecret: [1]) }
            // B's setting is written at once, its key queued; the key is A's: the commit fails
            // with the key's own message and the setting is gone with it.
            let failed = await #expect(throws: AerieError.self) {
                try await fixture.runtime.sealed(b).transaction { tx in
                    try tx.settings.set("written", to: true)
                    try tx.keys.insert(verkey: Self.verkeyA, sealedSecret: [9])
                }
            }
            #expect(failed?.code == .conflict)
            #expect(failed?.message == "the key already exists")
            #expect(try await fixture.runtime.sealed(b).read { try $0.settings.get("written") } == nil)
            // Failing in front of a later statement: that statement throws, nothing is kept.
            let failedEarly = await #expect(throws: AerieError.self) {
                try await fixture.runtime.sealed(b).transaction { tx in
                    try tx.keys.insert(verkey: Self.verkeyA, sealedSecret: [9])
                    try tx.settings.set("written", to: true)
                }
            }
            #expect(failedEarly?.code == .conflict)
            #expect(try await fixture.runtime.sealed(b).read { try $0.settings.get("written") } == nil)
            // A body that throws after queueing sends nothing.
            await #expect(throws: AerieError.self) {
                try await fixture.runtime.sealed(b).transaction { tx in
                    try tx.keys.insert(verkey: Self.verkeyB, sealedSecret: [2])
                    throw AerieError.notFound("changed my mind")
                }
            }
            #expect(try await fixture.runtime.sealed(b).read { try $0.keys.sealedSecret(verkey: Self.verkeyB) } == nil)
            // The one connection is usable afterwards and A's key is untouched.
            try await fixture.runtime.sealed(b).transaction { try $0.keys.insert(verkey: Self.verkeyB, sealedSecret: [2]) }
            #expect(try await fixture.runtime.sealed(a).read { try $0.keys.sealedSecret(verkey: Self.verkeyA) } == [1])
        }
    }

    /// A transaction of queued writes only, on a pooled connection whose backend was terminated:
    /// the writes go out (with `BEGIN`) before the `COMMIT`, so the dead connection is found
    /// while nothing can have committed and the transaction runs again on a fresh one.
    @Test func onlyQueuedWritesOnADeadConnectionAreRetriedOnAFreshOne() async throws {
        try await StoreFixture.with(maxConnections: 1) { fixture in
            let a = try await fixture.createTenant("A").id
            #expect(try await fixture.runtime.sealed(a).read { try $0.keys.sealedSecret(verkey: Self.verkeyA) } == nil)
            #expect(try await fixture.killRuntimeSessions() >= 1)
            try await fixture.runtime.sealed(a).transaction { try $0.keys.insert(verkey: Self.verkeyA, sealedSecret: [1]) }
            #expect(try await fixture.runtime.sealed(a).read { try $0.keys.sealedSecret(verkey: Self.verkeyA) } == [1])
        }
    }
}
