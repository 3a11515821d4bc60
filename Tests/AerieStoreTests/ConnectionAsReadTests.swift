import AerieCore
import AerieStore
import AerieTesting
import Foundation
import Testing

/// schema/0037: a connection read without a lock, written back behind a queued check that locks
/// the row and fails unless it is still as read (`ConnectionRepository.lockAsRead`), so a
/// Response is applied in one round trip.
@Suite(.timeLimit(.minutes(10))) struct ConnectionAsReadTests {
    static let verkeyA = KeyRepositoryTests.verkeyA
    static let verkeyB = KeyRepositoryTests.verkeyB

    /// The check on `read`, the row written back as `next`, then a key queued after it: true when
    /// it committed.
    @Sendable static func writeBack(
        _ db: any TenantDatabase, read: ConnectionRecord, next: ConnectionRecord, verkey: String
    ) async throws -> Bool {
        do {
            try await db.rerunnableTransaction { tx in
                try tx.connections.lockAsRead(read)
                try tx.connections.updateQueued(next)
                try tx.keys.insert(verkey: verkey, sealedSecret: [1])
            }
            return true
        } catch {
            #expect(ConnectionAsRead.changed(error), "\(String(reflecting: error))")
            #expect((error as? AerieError)?.code == .conflict)
            return false
        }
    }

    @Test func aRowStillAsReadIsWrittenBackInOneRoundTripAndAChangedOneIsNot() async throws {
        try await StoreFixture.with(maxConnections: 1) { fixture in
            let a = fixture.runtime.sealed(try await fixture.createTenant("A").id)
            let b = fixture.runtime.sealed(try await fixture.createTenant("B").id)
            let roundTrips = { try await fixture.runtime.pool.withConnection { $0.roundTripCount } }
            // Twenty rows, so the read `updatedAt` (microseconds through a Date) is matched for many.
            let records = (0..<20).map { ConnectionStoreTests.record(invitationId: "inv-\($0)", key: "KEY\($0)") }
            try await a.transaction { tx in for record in records { try tx.connections.insert(record) } }
            // Changed once since their insert, so the check compares `updated_at` as read (a row
            // never changed is checked as unchanged: `RecentRecipientsTests`).
            try await a.transaction { tx in for record in records { try tx.connections.updateQueued(record) } }
            let read = try await a.read { tx in try records.map { try #require(try tx.connections.get($0.id)) } }
            #expect(read.allSatisfy { $0.updatedAt > $0.createdAt })
            for record in read.dropFirst() {
                try await a.rerunnableTransaction { tx in try tx.connections.lockAsRead(record) }
            }

            var accepted = read[0]
            accepted.state = .requested
            accepted.theirDid = "did:peer:them"
            let next = accepted
            let before = try await roundTrips()
            #expect(try await Self.writeBack(a, read: read[0], next: next, verkey: Self.verkeyA))
            #expect(try await roundTrips() - before == 1)
            let written = try #require(try await a.read { try $0.connections.get(next.id) })
            #expect(written.state == .requested && written.theirDid == "did:peer:them")
            #expect(try await a.read { try $0.keys.sealedSecret(verkey: Self.verkeyA) } == [1])

            // The same read again (a rerun after its first run committed, or a second copy of the
            // message): the row changed since, so nothing after the check is stored.
            var again = read[0]
            again.theirDid = "did:peer:second"
            #expect(try await Self.writeBack(a, read: read[0], next: again, verkey: Self.verkeyB) == false)
            #expect(try await a.read { try $0.connections.get(next.id) }?.theirDid == "did:peer:them")
            #expect(try await a.read { try $0.keys.sealedSecret(verkey: Self.verkeyB) } == nil)

            // Another tenant's row is not there for B: B's check fails, A's row is untouched.
            #expect(try await Self.writeBack(b, read: read[1], next: again, verkey: Self.verkeyB) == false)
            #expect(try await b.read { try $0.keys.sealedSecret(verkey: Self.verkeyB) } == nil)
            #expect(try await a.read { try $0.connections.get(read[1].id) } == read[1])
        }
    }

    /// A change of anything but the state (here the label) moves `updated_at`: the check fails
    /// on it too. A transaction holding the row when the check runs is waited for, and its
    /// change then fails the check.
    @Test func aChangeCommittedMeanwhileOrHeldWhileTheCheckRunsFailsIt() async throws {
        try await StoreFixture.with(maxConnections: 2) { fixture in
            let a = fixture.runtime.sealed(try await fixture.createTenant("A").id)
            let record = ConnectionStoreTests.record(invitationId: "inv-1", key: "KEY1")
            try await a.transaction { try $0.connections.insert(record) }
            let read = try #require(try await a.read { try $0.connections.get(record.id) })

            var changed = read
            changed.label = "Faber College"
            let relabelled = changed
            try await a.transaction { tx in _ = try tx.connections.update(relabelled) }
            #expect(try await Self.writeBack(a, read: read, next: read, verkey: Self.verkeyA) == false)
            #expect(try await a.read { try $0.connections.get(record.id) }?.label == "Faber College")

            let current = try #require(try await a.read { try $0.connections.get(record.id) })
            let (locked, holding) = AsyncStream.makeStream(of: Void.self)
            let holder = Task {
                try await a.transaction { tx in
                    guard var row = try tx.connections.getForUpdate(record.id) else { return }
                    row.label = "held"
                    try tx.connections.update(row)
                    holding.yield()
                    Thread.sleep(forTimeInterval: 0.5)
                }
            }
            var waiting = locked.makeAsyncIterator()
            _ = await waiting.next()
            // Without the wait the check would pass on the row before the holder's change, and the
            // write back would then overwrite "held".
            #expect(try await Self.writeBack(a, read: current, next: current, verkey: Self.verkeyA) == false)
            try await holder.value
            #expect(try await a.read { try $0.connections.get(record.id) }?.label == "held")
            #expect(try await a.read { try $0.keys.sealedSecret(verkey: Self.verkeyA) } == nil)
        }
    }
}
