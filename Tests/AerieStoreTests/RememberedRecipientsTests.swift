import AerieCore
import AerieStore
import AerieTesting
import Foundation
import Testing

/// Established connections' recipients remembered as read (`RecentRecipients`, origin `.read`):
/// what a database lookup keeps and what it does not, what an invalidation during the read does,
/// and the store's check of a recipient as read (`MailboxRepository.claimQueued(_:asRead:)`),
/// which stores in one round trip while all is as read and nothing once anything it stands for
/// changed: the connection, our key, the tenant's status or data key, or another tenant's rows.
@Suite(.timeLimit(.minutes(10))) struct RememberedRecipientsTests {
    typealias Recent = RecentRecipientsTests

    /// A connection as a finished handshake leaves it: our key, the peer's key and endpoint.
    static func established(_ invitation: String, verkey: String) -> ConnectionRecord {
        var record = Recent.requested(invitation, verkey: verkey)
        record.state = .accepted
        record.theirDid = "did:peer:them-\(invitation)"
        record.theirVerkey = "THEIR\(verkey)"
        record.theirEndpoint = "http://peer.example/\(invitation)"
        return record
    }

    /// Writes `record` with its key through a database that keeps nothing in memory (the key
    /// and connection then come only from a lookup).
    static func insert(_ fixture: StoreFixture, _ tenant: TenantID, _ record: ConnectionRecord) async throws {
        try await Recent.connect(fixture.runtime.sealed(tenant), record)
    }

    /// The recipient of `verkey` as the pipeline holds it after a lookup: remembered as read.
    static func asRead(_ fixture: StoreFixture, _ verkey: String) async throws -> RecipientAsRead {
        _ = try await Recent.lookup(fixture, [verkey], recent: false)
        let held = try #require(fixture.runtime.recentRecipients.lookup(verkey))
        #expect(held.origin == .read)
        return RecipientAsRead(connection: try #require(held.recipient.connection), wrappedDataKey: held.wrappedDataKey)
    }

    /// A peer's basic message to `verkey`, as the pipeline makes its receipt.
    static func receipt(_ verkey: String, _ asRead: RecipientAsRead, messageId: String = UUID().uuidString) -> InboundReceipt {
        InboundReceipt(
            message: MailboxMessage(
                connectionId: asRead.connection.id, recipientVerkey: verkey, senderVerkey: asRead.connection.theirVerkey,
                messageId: messageId, type: "https://didcomm.org/basicmessage/1.0/message", threadId: nil,
                payload: ["content": "hello"]),
            asRead: asRead)
    }

    /// Stores `receipt` and expects it refused as no longer as read, nothing stored.
    static func expectRefused(_ db: any TenantDatabase, _ receipt: InboundReceipt, _ comment: Comment) async throws {
        do {
            _ = try await db.store(receipt)
            Issue.record("stored: \(comment)")
        } catch {
            #expect(ConnectionAsRead.changed(error), "\(comment): \(String(reflecting: error))")
        }
        #expect(try await db.read { try $0.mailbox.get(receipt.message.uid) } == nil, comment)
    }

    @Test func anEstablishedConnectionReadIsRememberedAndAnsweredWithoutARoundTrip() async throws {
        try await Recent.with { fixture, a, b in
            let recent = fixture.runtime.recentRecipients
            try await Self.insert(fixture, a, Self.established("inv-a", verkey: Recent.verkeyA))
            try await Self.insert(fixture, b, Self.established("inv-b", verkey: Recent.verkeyB))
            try await Self.insert(fixture, a, Recent.requested("inv-d", verkey: Recent.verkeyD))
            #expect(recent.count == 0)

            let read = try #require(try await Recent.lookup(fixture, [Recent.verkeyA]))
            #expect(read.remembered == nil && read.tenant == a)
            #expect(recent.lookup(Recent.verkeyA)?.origin == .read)
            let roundTrips = { try await fixture.runtime.pool.withConnection { $0.roundTripCount } }
            let before = try await roundTrips()
            let again = try #require(try await Recent.lookup(fixture, [Recent.verkeyA, Recent.verkeyB]))
            #expect(try await roundTrips() == before)
            // The database's answer: tenant, its key as read, our key, its secret, the connection.
            #expect(again.remembered == .read && again.tenant == a && again.activeWrappedDataKey == Recent.wrappedA)
            #expect(again.recipient?.verkey == Recent.verkeyA && again.recipient?.sealedSecret == read.recipient?.sealedSecret)
            #expect(again.recipient?.connection == read.recipient?.connection)
            // B's its own; a lookup that does not ask for memory reads the database.
            #expect(try await Recent.lookup(fixture, [Recent.verkeyB])?.tenant == b)
            #expect(recent.lookup(Recent.verkeyB)?.tenant == b)
            #expect(try await Recent.lookup(fixture, [Recent.verkeyB], recent: false)?.remembered == nil)
            #expect(try await roundTrips() == before + 2)
            // A connection not established (waiting for its Response): read, never remembered.
            #expect(try await Recent.lookup(fixture, [Recent.verkeyD])?.remembered == nil)
            #expect(recent.lookup(Recent.verkeyD) == nil)
            // Nor one whose sealed row is over the bound (a large invitation): read every time.
            var large = Self.established("inv-g", verkey: Recent.verkeyG)
            large.invitation = ["@id": "inv-g", "padding": .string(String(repeating: "x", count: RecentRecipients.largestRow))]
            try await Self.insert(fixture, a, large)
            #expect(try await Recent.lookup(fixture, [Recent.verkeyG])?.recipient?.connection?.invitation == large.invitation)
            #expect(recent.lookup(Recent.verkeyG) == nil)

            // A read during which something was invalidated keeps nothing: it may have read the
            // row before the change the invalidation stands for.
            let entry = try #require(recent.lookup(Recent.verkeyA))
            recent.forget(tenant: a)
            let generation = try #require(recent.generation)
            recent.connectionChanged(tenant: b, connectionId: UUID(), state: nil)
            recent.remember(read: entry, generation: generation)
            #expect(recent.lookup(Recent.verkeyA) == nil)
            recent.remember(read: entry, generation: try #require(recent.generation))
            #expect(recent.lookup(Recent.verkeyA)?.tenant == a)
            // A's write of the connection takes it away at once, B's stays.
            var renamed = try #require(entry.recipient.connection)
            renamed.label = "renamed"
            try await fixture.runtime.sealed(a).transaction { [renamed] tx in try tx.connections.updateQueued(renamed) }
            #expect(recent.lookup(Recent.verkeyA) == nil && recent.lookup(Recent.verkeyB)?.tenant == b)
            // The LISTEN down: nothing served, kept, or filled by a read.
            recent.listenerChanged(listening: false)
            #expect(recent.generation == nil)
            #expect(try await Recent.lookup(fixture, [Recent.verkeyB])?.remembered == nil)
            #expect(recent.count == 0)
        }
    }

    @Test func theStoreOfARecipientAsReadStoresOnlyWhileAllItStandsForIsAsRead() async throws {
        try await Recent.with { fixture, a, b in
            let keys = [Recent.verkeyA, Recent.verkeyD, Recent.verkeyE, Recent.verkeyF]
            for (index, verkey) in keys.enumerated() {
                try await Self.insert(fixture, a, Self.established("inv-a\(index)", verkey: verkey))
            }
            try await Self.insert(fixture, b, Self.established("inv-b", verkey: Recent.verkeyB))
            let dbA = Recent.database(fixture, a, wrapped: Recent.wrappedA)
            let dbB = Recent.database(fixture, b, wrapped: Recent.wrappedB)
            let writeA = fixture.runtime.sealed(a)

            // As read: stored, handled, in one round trip.
            let readA = try await Self.asRead(fixture, Recent.verkeyA)
            let roundTrips = { try await fixture.runtime.pool.withConnection { $0.roundTripCount } }
            let before = try await roundTrips()
            let first = Self.receipt(Recent.verkeyA, readA, messageId: "m-1")
            #expect(try await dbA.store(first) == .new(first.message.uid))
            #expect(try await roundTrips() - before == 1)
            #expect(try await dbA.read { try $0.mailbox.get(first.message.uid) }?.connectionId == readA.connection.id)
            // The same message again: the stored copy is found, nothing more is stored.
            let copy = Self.receipt(Recent.verkeyA, readA, messageId: "m-1")
            #expect(try await dbA.store(copy) == .alreadyHandled(first.message.uid))
            #expect(try await dbA.read { try $0.mailbox.get(copy.message.uid) } == nil)

            // The connection changed since it was read (a peer's rotation, another server's write).
            var rotated = readA.connection
            rotated.theirVerkey = "ROTATEDKEY"
            try await writeA.transaction { [rotated] tx in _ = try tx.connections.update(rotated) }
            try await Self.expectRefused(dbA, Self.receipt(Recent.verkeyA, readA), "a connection changed")

            // Our key deleted, its connection left as it was.
            let readD = try await Self.asRead(fixture, Recent.verkeyD)
            try await writeA.transaction { tx in _ = try tx.keys.remove(verkey: Recent.verkeyD) }
            try await Self.expectRefused(dbA, Self.receipt(Recent.verkeyD, readD), "a key deleted")

            // The connection deleted.
            let readE = try await Self.asRead(fixture, Recent.verkeyE)
            try await writeA.transaction { tx in _ = try tx.connections.delete(readE.connection.id) }
            try await Self.expectRefused(dbA, Self.receipt(Recent.verkeyE, readE), "a connection deleted")

            // The tenant suspended; resumed, its messages are stored again.
            let readF = try await Self.asRead(fixture, Recent.verkeyF)
            #expect(try await fixture.runtime.tenants.setStatus(a, .suspended))
            try await Self.expectRefused(dbA, Self.receipt(Recent.verkeyF, readF), "a suspended tenant")
            #expect(try await fixture.runtime.tenants.setStatus(a, .active))
            let resumed = Self.receipt(Recent.verkeyF, readF)
            #expect(try await dbA.store(resumed) == .new(resumed.message.uid))

            // Another tenant: B's store of A's connection as read finds nothing of A's (row-level
            // security), stores nothing in either; with B's own key as read, nothing either.
            let stolen = Self.receipt(Recent.verkeyF, readF)
            try await Self.expectRefused(dbB, stolen, "another tenant's connection")
            #expect(try await dbA.read { try $0.mailbox.get(stolen.message.uid) } == nil)
            let mixed = Self.receipt(Recent.verkeyF, RecipientAsRead(connection: readF.connection, wrappedDataKey: Recent.wrappedB))
            try await Self.expectRefused(dbA, mixed, "another tenant's data key")

            // A's data key rewrapped (a master-key rotation): A's refused, B's stored.
            let readB = try await Self.asRead(fixture, Recent.verkeyB)
            _ = try await fixture.runtime.tenants.rewrapDataKeys(newFingerprint: "rotated") { id, wrapped in
                id == a ? wrapped.map { $0 ^ 0xFF } : nil
            }
            try await Self.expectRefused(dbA, Self.receipt(Recent.verkeyF, readF), "a rewrapped data key")
            let ofB = Self.receipt(Recent.verkeyB, readB)
            #expect(try await dbB.store(ofB) == .new(ofB.message.uid))

            // Stored at all: A's first and the one after the resume, B's one.
            for (tenant, stored) in [(a, 2), (b, 1)] {
                let count = try await fixture.runtime.withSession(tenant: tenant) { session in
                    try session.query("SELECT count(*)::int FROM aerie.mailbox").int(0, 0)
                }
                #expect(count == stored)
            }
        }
    }

    /// A store racing a change of its connection: it waits for the transaction holding the row
    /// locked (a delete, which empties the connection's mailbox first; a rotation), then checks
    /// the row as that one left it: nothing stored, so no message outlives its deleted connection
    /// and none from a rotated-away key lands after the rotation. (Checked on its snapshot alone,
    /// both would be stored.)
    @Test func aStoreWaitsForAChangeHeldOnItsConnectionAndStoresNothingAfterIt() async throws {
        try await StoreFixture.with(maxConnections: 3, configure: { $0.recentRecipientsSize = 16 }) { fixture in
            fixture.runtime.recentRecipients.listenerChanged(listening: true)
            let a = try await fixture.createTenant("A", wrappedDataKey: Recent.wrappedA).id
            let b = try await fixture.createTenant("B", wrappedDataKey: Recent.wrappedB).id
            try await Self.insert(fixture, a, Self.established("inv-1", verkey: Recent.verkeyA))
            try await Self.insert(fixture, a, Self.established("inv-2", verkey: Recent.verkeyD))
            try await Self.insert(fixture, b, Self.established("inv-3", verkey: Recent.verkeyB))
            let dbA = Recent.database(fixture, a, wrapped: Recent.wrappedA)
            let writeA = fixture.runtime.sealed(a)

            for (verkey, change) in [(Recent.verkeyA, "delete"), (Recent.verkeyD, "rotate")] {
                let read = try await Self.asRead(fixture, verkey)
                let (locked, holding) = AsyncStream.makeStream(of: Void.self)
                let holder = Task {
                    try await writeA.transaction { tx in
                        guard var row = try tx.connections.getForUpdate(read.connection.id) else { return }
                        if change == "delete" {
                            try tx.sql.execute(
                                "DELETE FROM aerie.mailbox WHERE tenant_id = $1::uuid AND connection_id = $2::uuid",
                                [.text(a.rawValue), .text(row.id.lowercasedString)])
                            _ = try tx.connections.delete(row.id)
                        } else {
                            row.theirVerkey = "ROTATEDKEY"
                            try tx.connections.update(row)
                        }
                        holding.yield()
                        Thread.sleep(forTimeInterval: 0.5)
                    }
                }
                var waiting = locked.makeAsyncIterator()
                _ = await waiting.next()
                // Checked on the snapshot alone, the store would pass on the row before the change.
                try await Self.expectRefused(dbA, Self.receipt(verkey, read), "racing a \(change)")
                try await holder.value
            }
            let count = try await fixture.runtime.withSession(tenant: a) { session in
                try session.query("SELECT count(*)::int FROM aerie.mailbox").int(0, 0)
            }
            #expect(count == 0)
            // B's recipient, untouched by A's changes, stores.
            let ofB = Self.receipt(Recent.verkeyB, try await Self.asRead(fixture, Recent.verkeyB))
            #expect(try await Recent.database(fixture, b, wrapped: Recent.wrappedB).store(ofB) == .new(ofB.message.uid))
        }
    }
}
