import AerieCore
import AerieStore
import AerieTesting
import Foundation
import Testing

/// Keys a process made with their connections, kept for the inbound lookup (`RecentRecipients`,
/// `TenantDirectory.inboundRecipient`): what a committed tenant transaction adds, what it does
/// not, what takes entries away, and the Response's check on a connection as kept.
@Suite(.timeLimit(.minutes(10))) struct RecentRecipientsTests {
    static let verkeyA = KeyRepositoryTests.verkeyA
    static let verkeyB = KeyRepositoryTests.verkeyB
    static let verkeyD = "9fDZ5vQ1kLHf3mLpd6W7xJYbKXJ2UsKr8q4bTGmFhNfD"
    static let verkeyE = "Ex7eqZ9wL3pDkYV5QnX1uRzBm2cTa8sHf6Jg4KdNbWtE"
    static let verkeyF = "F3kP8wZrT5qYh2XbN6mVc9LdJ4sGa7uEf1RtKyBnQwxF"
    static let verkeyG = "G8tQ2mWx5RzK3vHn7YcJ9pLd4FsBa6eUg1NkTrDyVqwG"
    static let wrappedA = [UInt8](repeating: 0xA1, count: 72)
    static let wrappedB = [UInt8](repeating: 0xB2, count: 72)

    /// A fresh database whose runtime keeps recent recipients, its listener said to be in place
    /// (a server's `EventHub` says so), with tenants A and B.
    static func with(
        _ body: (StoreFixture, _ a: TenantID, _ b: TenantID) async throws -> Void
    ) async throws {
        try await StoreFixture.with(maxConnections: 1, configure: { $0.recentRecipientsSize = 16 }) { fixture in
            fixture.runtime.recentRecipients.listenerChanged(listening: true)
            let a = try await fixture.createTenant("A", wrappedDataKey: Self.wrappedA).id
            let b = try await fixture.createTenant("B", wrappedDataKey: Self.wrappedB).id
            try await body(fixture, a, b)
        }
    }

    /// Tenant `id`'s database as a server builds one for a call: sealing, with the wrapped data
    /// key it read (nil: as a database without it, which keeps nothing).
    static func database(_ fixture: StoreFixture, _ id: TenantID, wrapped: [UInt8]?) -> any TenantDatabase {
        fixture.runtime.tenant(id, wrappedDataKey: wrapped).sealing(with: TestKeys.keyring(id))
    }

    /// A connection as `connections.accept` makes it: our new key and the row, `requested`.
    static func requested(_ invitation: String, verkey: String) -> ConnectionRecord {
        var record = ConnectionStoreTests.record(invitationId: invitation, key: "INVITATIONKEY")
        record.state = .requested
        record.myVerkey = verkey
        record.myDid = "did:peer:\(invitation)"
        record.threadId = "thread-\(invitation)"
        return record
    }

    static func connect(_ db: any TenantDatabase, _ record: ConnectionRecord) async throws {
        try await db.transaction { tx in
            try tx.keys.insert(verkey: record.myVerkey ?? "", sealedSecret: Array((record.myVerkey ?? "").utf8))
            try tx.connections.insert(record)
        }
    }

    static func lookup(_ fixture: StoreFixture, _ verkeys: [String], recent: Bool = true) async throws -> InboundOwner? {
        try await fixture.runtime.tenants.inboundRecipient(verkeys: verkeys, recent: recent, sealer: { id, _ in TestKeys.sealer(id) })
    }

    @Test func aKeyMadeWithItsConnectionIsAnsweredWithoutARoundTripAsTheDatabaseAnswersIt() async throws {
        try await Self.with { fixture, a, b in
            let made = Self.requested("inv-a", verkey: Self.verkeyA)
            try await Self.connect(Self.database(fixture, a, wrapped: Self.wrappedA), made)
            try await Self.connect(Self.database(fixture, b, wrapped: Self.wrappedB), Self.requested("inv-b", verkey: Self.verkeyB))
            #expect(fixture.runtime.recentRecipients.count == 2)

            let roundTrips = { try await fixture.runtime.pool.withConnection { $0.roundTripCount } }
            let before = try await roundTrips()
            let recent = try #require(try await Self.lookup(fixture, [Self.verkeyA, Self.verkeyB]))
            #expect(try await roundTrips() == before)
            #expect(recent.remembered == .made)
            let read = try #require(try await Self.lookup(fixture, [Self.verkeyA, Self.verkeyB], recent: false))
            #expect(try await roundTrips() == before + 1)
            #expect(read.remembered == nil)

            // The same answer as the database's: tenant, its key as read, our key and its secret.
            #expect(recent.tenant == a && read.tenant == a)
            #expect(recent.activeWrappedDataKey == Self.wrappedA && read.activeWrappedDataKey == Self.wrappedA)
            #expect(recent.recipient?.verkey == Self.verkeyA && read.recipient?.verkey == Self.verkeyA)
            #expect(recent.recipient?.sealedSecret == read.recipient?.sealedSecret)
            // The connection as inserted: the stored row's, but for the times the database wrote,
            // which it stands for with `updatedAt == createdAt` (never changed since).
            var kept = try #require(recent.recipient?.connection)
            let stored = try #require(read.recipient?.connection)
            #expect(kept.updatedAt == kept.createdAt && stored.updatedAt == stored.createdAt)
            (kept.createdAt, kept.updatedAt) = (stored.createdAt, stored.updatedAt)
            #expect(kept == stored)

            // B's key names B; the first key of the list decides, as in the database.
            #expect(try await Self.lookup(fixture, [Self.verkeyB, Self.verkeyA])?.tenant == b)
            let unknownFirst = try #require(try await Self.lookup(fixture, [KeyRepositoryTests.verkeyC, Self.verkeyA]))
            #expect(unknownFirst.remembered == nil && unknownFirst.tenant == a)
        }
    }

    @Test func onlyWhatCommittedAsInsertedIsKeptAndALaterWriteTakesItAway() async throws {
        try await Self.with { fixture, a, b in
            let recent = fixture.runtime.recentRecipients
            let dbA = Self.database(fixture, a, wrapped: Self.wrappedA)
            struct Abort: Error {}
            // Rolled back: nothing kept.
            await #expect(throws: Abort.self) {
                try await dbA.transaction { tx in
                    try tx.keys.insert(verkey: Self.verkeyA, sealedSecret: [1])
                    try tx.connections.insert(Self.requested("inv-1", verkey: Self.verkeyA))
                    _ = try tx.connections.get(UUID())
                    throw Abort()
                }
            }
            #expect(recent.count == 0)
            // Inserted, then written again in the same transaction: not as inserted.
            try await dbA.transaction { tx in
                var record = Self.requested("inv-2", verkey: Self.verkeyA)
                try tx.keys.insert(verkey: Self.verkeyA, sealedSecret: [1])
                try tx.connections.insert(record)
                record.label = "renamed"
                try tx.connections.updateQueued(record)
            }
            #expect(recent.lookup(Self.verkeyA) == nil)
            // A connection without its key in the transaction, or a database not given the
            // tenant's key as read: nothing.
            try await dbA.transaction { tx in try tx.connections.insert(Self.requested("inv-3", verkey: Self.verkeyB)) }
            try await Self.connect(fixture.runtime.sealed(b), Self.requested("inv-4", verkey: KeyRepositoryTests.verkeyC))
            #expect(recent.count == 0)
            // A connection inserted in another state than `requested` (an invitation of ours,
            // an inviter's connection): no Response will come to its key, not kept.
            var invitation = Self.requested("inv-4b", verkey: Self.verkeyD)
            invitation.state = .initialized
            try await Self.connect(dbA, invitation)
            #expect(recent.count == 0)
            // A connection whose sealed row is over the bound (a large invitation): not kept.
            var large = Self.requested("inv-5", verkey: Self.verkeyG)
            large.invitation = ["@id": "inv-5", "padding": .string(String(repeating: "x", count: RecentRecipients.largestRow))]
            try await Self.connect(dbA, large)
            #expect(recent.count == 0)

            // Kept for A and for B; A's later write of its connection takes A's away at once, B's stays.
            let keptA = Self.requested("inv-6", verkey: Self.verkeyE)
            try await Self.connect(dbA, keptA)
            let keptB = Self.requested("inv-7", verkey: Self.verkeyF)
            try await Self.connect(Self.database(fixture, b, wrapped: Self.wrappedB), keptB)
            #expect(recent.lookup(Self.verkeyE)?.tenant == a)
            #expect(recent.lookup(Self.verkeyF)?.tenant == b)
            var failed = keptA
            failed.state = .failed
            try await fixture.runtime.sealed(a).transaction { [failed] tx in try tx.connections.updateQueued(failed) }
            #expect(recent.lookup(Self.verkeyE) == nil)
            #expect(recent.lookup(Self.verkeyF)?.tenant == b)
            // B's key deleted here, its connection left as it was: gone at once.
            try await fixture.runtime.sealed(b).transaction { tx in _ = try tx.keys.remove(verkey: Self.verkeyF) }
            #expect(recent.lookup(Self.verkeyF) == nil)
        }
    }

    /// The Response's check (`lockAsRead`) on a connection as kept: passes while the row is as
    /// inserted, in the one round trip; fails once anything changed it, and for another tenant.
    @Test func theResponseCheckPassesForAConnectionAsKeptUntilItsRowChanges() async throws {
        try await Self.with { fixture, a, b in
            let dbA = Self.database(fixture, a, wrapped: Self.wrappedA)
            try await Self.connect(dbA, Self.requested("inv-1", verkey: Self.verkeyA))
            try await Self.connect(dbA, Self.requested("inv-2", verkey: Self.verkeyB))
            let first = try #require(fixture.runtime.recentRecipients.lookup(Self.verkeyA)?.recipient.connection)
            let second = try #require(fixture.runtime.recentRecipients.lookup(Self.verkeyB)?.recipient.connection)

            var accepted = first
            accepted.state = .accepted
            accepted.theirDid = "did:peer:them"
            let roundTrips = { try await fixture.runtime.pool.withConnection { $0.roundTripCount } }
            let before = try await roundTrips()
            #expect(try await ConnectionAsReadTests.writeBack(dbA, read: first, next: accepted, verkey: KeyRepositoryTests.verkeyC))
            #expect(try await roundTrips() - before == 1)
            #expect(try await dbA.read { try $0.connections.get(first.id) }?.state == .accepted)
            // Kept as inserted, but the row changed since (here only its label, as another server
            // could have): the check fails and nothing after it is stored.
            var renamed = second
            renamed.label = "renamed"
            try await fixture.runtime.sealed(a).transaction { [renamed] tx in try tx.connections.updateQueued(renamed) }
            var late = second
            late.state = .accepted
            #expect(!(try await ConnectionAsReadTests.writeBack(dbA, read: second, next: late, verkey: Self.verkeyD)))
            #expect(try await dbA.read { try $0.keys.sealedSecret(verkey: Self.verkeyD) } == nil)
            // B's check of A's row, as kept: fails, A's row untouched.
            try await Self.connect(dbA, Self.requested("inv-3", verkey: Self.verkeyE))
            let third = try #require(fixture.runtime.recentRecipients.lookup(Self.verkeyE)?.recipient.connection)
            let dbB = Self.database(fixture, b, wrapped: Self.wrappedB)
            var stolen = third
            stolen.state = .accepted
            #expect(!(try await ConnectionAsReadTests.writeBack(dbB, read: third, next: stolen, verkey: Self.verkeyF)))
            #expect(try await dbA.read { try $0.connections.get(third.id) }?.state == .requested)
        }
    }

    // MARK: - The cache alone

    static func recipient(_ tenant: TenantID, verkey: String, state: ConnectionRecord.State = .requested) -> RecentRecipients.Recipient {
        var record = requested("inv-\(verkey)", verkey: verkey)
        record.state = state
        return RecentRecipients.Recipient(
            tenant: tenant, wrappedDataKey: [1],
            recipient: InboundRecipient(verkey: verkey, sealedSecret: [2], connection: record))
    }

    @Test func eventsTakeAwayWhatTheyNameAndOnlyOfTheirTenant() {
        let (a, b) = (TenantID.random(), TenantID.random())
        let recent = RecentRecipients(capacity: 16, maxAge: .seconds(60))
        recent.listenerChanged(listening: true)
        let a1 = Self.recipient(a, verkey: "A1"), a2 = Self.recipient(a, verkey: "A2"), b1 = Self.recipient(b, verkey: "B1")
        recent.remember([a1, a2, b1])
        let id = { (r: RecentRecipients.Recipient) in r.recipient.connection!.id }
        // The insert's own events (schema/0030: `initialized`, then its state) keep the entry.
        recent.connectionChanged(tenant: a, connectionId: id(a1), state: "initialized")
        recent.connectionChanged(tenant: a, connectionId: id(a1), state: "requested")
        #expect(recent.lookup("A1") != nil)
        // Another tenant's event naming A's connection id changes nothing of A's.
        recent.connectionChanged(tenant: b, connectionId: id(a1), state: "accepted")
        recent.connectionChanged(tenant: b, connectionId: id(a1), state: nil)
        #expect(recent.lookup("A1") != nil)
        // Another state, or any other change (schema/0028), takes it away.
        recent.connectionChanged(tenant: a, connectionId: id(a1), state: "accepted")
        #expect(recent.lookup("A1") == nil)
        recent.remember([a1])
        recent.connectionChanged(tenant: a, connectionId: id(a1), state: nil)
        #expect(recent.lookup("A1") == nil)
        // Several rows of A (no id), or a credential event of A: all of A's, none of B's.
        recent.remember([a1])
        recent.connectionChanged(tenant: a, connectionId: nil, state: nil)
        #expect(recent.lookup("A1") == nil && recent.lookup("A2") == nil && recent.lookup("B1") != nil)
        recent.remember([a1, a2])
        recent.forget(tenant: a)
        #expect(recent.count == 1 && recent.lookup("B1")?.tenant == b)
        // The listener going down drops everything; while down nothing is kept or answered.
        recent.listenerChanged(listening: false)
        recent.remember([a1])
        #expect(recent.count == 0 && recent.lookup("A1") == nil)
        recent.listenerChanged(listening: true)
        recent.remember([a1])
        #expect(recent.lookup("A1")?.tenant == a)
    }

    @Test func itHoldsAtMostItsCapacityOldestFirstAndNothingPastItsAge() async throws {
        let a = TenantID.random()
        let recent = RecentRecipients(capacity: 3, maxAge: .seconds(60))
        recent.listenerChanged(listening: true)
        recent.remember((1...5).map { Self.recipient(a, verkey: "K\($0)") })
        #expect(recent.count == 3)
        #expect(recent.lookup("K1") == nil && recent.lookup("K2") == nil && recent.lookup("K5") != nil)
        // Kept again: its new slot, so the next ones overwrite the others first.
        recent.remember([Self.recipient(a, verkey: "K3")])
        recent.remember([Self.recipient(a, verkey: "K6"), Self.recipient(a, verkey: "K7")])
        #expect(recent.lookup("K3") != nil && recent.lookup("K6") != nil && recent.lookup("K7") != nil)
        #expect(recent.count == 3)

        let short = RecentRecipients(capacity: 3, maxAge: .milliseconds(50))
        short.listenerChanged(listening: true)
        short.remember([Self.recipient(a, verkey: "K1")])
        #expect(short.lookup("K1") != nil)
        try await Task.sleep(for: .milliseconds(120))
        #expect(short.lookup("K1") == nil && short.count == 0)
        // Off: nothing kept.
        let off = RecentRecipients.off
        off.listenerChanged(listening: true)
        off.remember([Self.recipient(a, verkey: "K1")])
        #expect(off.lookup("K1") == nil)
    }
}
