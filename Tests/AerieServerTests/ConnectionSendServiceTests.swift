import AerieClient
import AerieCore
import AerieCrypto
import AerieServer
import AerieStore
import AerieTesting
import Foundation
import Logging
import Testing

/// `ConnectionSendService`, the one way the plugins send over a connection, on real PostgreSQL:
/// two round trips (one write transaction) per send, one with the connection cached, the refusals (`not_found`, `conflict`)
/// with two tenants, and a send answered before a kill -9 still delivered after the restart.
@Suite(.timeLimit(.minutes(10))) struct ConnectionSendServiceTests {
    static let sender = ConnectionSendService()

    /// A tenant on a one-connection pool (its round trips counted there) and an established
    /// connection of it whose pairwise key is stored, to a peer at `endpoint`.
    struct Tenant {
        var context: TenantContext
        var connection: ConnectionRecord
    }

    static func tenant(
        _ fixture: WalletFixture, runtime: AerieDatabase, state: ConnectionRecord.State = .accepted,
        endpoint: String = "http://127.0.0.1:9"
    ) async throws -> Tenant {
        let made = try await fixture.createTenant("sender")
        let context = TenantContext(
            tenantID: made.tenantID, database: runtime.tenant(made.tenantID), keyring: made.keyring, logger: Logger(label: "test"))
        let verkey = try await context.keys.createKey()
        let connection = ConnectionRecord(
            state: state, invitation: ["@id": "inv"], invitationKind: "aries", myDid: "did:sov:mine", myVerkey: verkey,
            theirDid: "did:sov:theirs", theirVerkey: Ed25519KeyPair.generate().verkeyBase58, theirEndpoint: endpoint)
        try await context.database.transaction { tx in try tx.connections.insert(connection) }
        return Tenant(context: context, connection: connection)
    }

    static func message(_ id: String) -> JSONValue {
        ["@type": "https://didcomm.org/basicmessage/1.0/message", "@id": .string(id), "content": "hello"]
    }

    static func count(_ fixture: WalletFixture, _ sql: String) async throws -> Int {
        try await fixture.asSuperuser { session in try session.query(sql).int(0, 0) ?? -1 }
    }

    @Test func aSendIsTwoRoundTrips() async throws {
        try await WalletFixture.with { fixture in
            let runtime = fixture.database.runtime(maxConnections: 1)
            defer { Task { await runtime.shutdown() } }
            let alice = try await Self.tenant(fixture, runtime: runtime)
            let roundTrips = { try await runtime.pool.withConnection { $0.roundTripCount } }
            // The first send warms the data key and the tenant's caches.
            _ = try await Self.sender.send(Self.message("warm"), on: alice.connection.id, tenant: alice.context)

            // A read-only statement, then the write as one implicit transaction committed at its Sync.
            let before = try await roundTrips()
            let sent = try #require(try await Self.sender.send(Self.message("m-1"), on: alice.connection.id, tenant: alice.context))
            #expect(try await roundTrips() - before == 2)
            #expect(sent.messageId == "m-1")
            #expect(sent.connection.id == alice.connection.id && sent.connection.myVerkey == alice.connection.myVerkey)
            let stored = try #require(try await alice.context.database.read { try $0.mailbox.get(sent.uid) })
            #expect(stored.direction == .sent && stored.status == MailboxMessage.queued && stored.connectionId == alice.connection.id)
            #expect(stored.payload == Self.message("m-1"))
            #expect(try await Self.count(fixture, "SELECT count(*) FROM aerie.outbox WHERE message_uid = '\(sent.uid.lowercasedString)'") == 1)

            // A reply reads the message it answers too: one round trip more.
            let again = try await roundTrips()
            let reply = try #require(
                try await Self.sender.send(Self.message("m-2"), on: alice.connection.id, replyTo: sent.uid, tenant: alice.context))
            #expect(try await roundTrips() - again == 3)
            #expect(reply.threadId == "m-1")
            #expect(reply.message["~thread"]?["thid"] == "m-1")
        }
    }

    /// With the connection cache, as the server sends: a connection read before is sent over in
    /// one round trip; another tenant never gets the entry; an entry gone stale behind the cache's
    /// back (no NOTIFY reaches it here) sends nothing as read: the write's check refuses it and
    /// the send is decided on the locked row (a new peer key: packed again for it; `conflict`
    /// for a failed connection, `not_found` for a deleted one).
    @Test func aCachedConnectionIsOneRoundTripAndAStaleEntrySendsNothing() async throws {
        try await WalletFixture.with { fixture in
            let runtime = fixture.database.runtime(maxConnections: 1)
            defer { Task { await runtime.shutdown() } }
            let cache = ConnectionSendCache(capacity: 100, maxAge: .seconds(60))
            cache.listenerChanged(listening: true)
            let sender = ConnectionSendService(connections: cache)
            let alice = try await Self.tenant(fixture, runtime: runtime)
            let bob = try await Self.tenant(fixture, runtime: runtime)
            let id = alice.connection.id
            let roundTrips = { try await runtime.pool.withConnection { $0.roundTripCount } }
            _ = try await sender.send(Self.message("warm"), on: id, tenant: alice.context)
            let before = try await roundTrips()
            _ = try #require(try await sender.send(Self.message("c-1"), on: id, tenant: alice.context))
            #expect(try await roundTrips() - before == 1, "the write alone")

            // Alice's connection asked by Bob: his own lookup misses, and row-level security hides the row.
            #expect(await Self.refusal { try await sender.send(Self.message("b"), on: id, tenant: bob.context) } == .notFound)

            // The peer's key changed behind the cache's back: packed again for the new key, sent once.
            let newKey = Ed25519KeyPair.generate().verkeyBase58
            try await alice.context.database.transaction { tx in
                guard var record = try tx.connections.getForUpdate(id) else { throw AerieError.notFound("gone") }
                record.theirVerkey = newKey
                _ = try tx.connections.update(record)
            }
            let rekeyed = try #require(try await sender.send(Self.message("c-k"), on: id, tenant: alice.context))
            #expect(rekeyed.connection.theirVerkey == newKey)
            #expect(try await alice.context.database.read { try $0.mailbox.get(rekeyed.uid) }?.recipientVerkey == newKey)

            try await alice.context.database.transaction { tx in
                guard var record = try tx.connections.getForUpdate(id) else { throw AerieError.notFound("gone") }
                record.state = .failed
                _ = try tx.connections.update(record)
            }
            #expect(await Self.refusal { try await sender.send(Self.message("c-2"), on: id, tenant: alice.context) } == .conflict)
            _ = try await alice.context.database.transaction { tx in try tx.connections.delete(id) }
            #expect(await Self.refusal { try await sender.send(Self.message("c-3"), on: id, tenant: alice.context) } == .notFound)
            #expect(try await Self.count(fixture, "SELECT count(*) FROM aerie.mailbox WHERE direction = 'sent'") == 3)
        }
    }

    /// The code of the `AerieError` `send` throws; nil when it sends.
    static func refusal(_ send: () async throws -> SentMessage?) async -> AerieError.Code? {
        do {
            _ = try await send()
            return nil
        } catch let error as AerieError {
            return error.code
        } catch {
            Issue.record("\(error)")
            return nil
        }
    }

    @Test func refusalsAreNotFoundAndConflictAndAnotherTenantsConnectionIsNotFound() async throws {
        try await WalletFixture.with { fixture in
            let runtime = fixture.database.runtime(maxConnections: 2)
            defer { Task { await runtime.shutdown() } }
            let alice = try await Self.tenant(fixture, runtime: runtime)
            let bob = try await Self.tenant(fixture, runtime: runtime)
            let pending = try await Self.tenant(fixture, runtime: runtime, state: .requested)
            let refused: (AerieError.Code, _ send: () async throws -> SentMessage?) async -> AerieError? = { code, send in
                do {
                    _ = try await send()
                    Issue.record("expected \(code)")
                    return nil
                } catch let error as AerieError {
                    #expect(error.code == code, "\(error)")
                    return error
                } catch {
                    Issue.record("\(error)")
                    return nil
                }
            }
            _ = await refused(.notFound) { try await Self.sender.send(Self.message("x"), on: UUID(), tenant: alice.context) }
            // Bob's connection, asked by Alice: row-level security hides it.
            _ = await refused(.notFound) { try await Self.sender.send(Self.message("x"), on: bob.connection.id, tenant: alice.context) }
            let notEstablished = await refused(.conflict) {
                try await Self.sender.send(Self.message("x"), on: pending.connection.id, tenant: pending.context)
            }
            #expect(notEstablished?.data["stateName"] == "requested")
            _ = try await Self.sender.send(Self.message("once"), on: alice.connection.id, tenant: alice.context)
            let twice = await refused(.conflict) {
                try await Self.sender.send(Self.message("once"), on: alice.connection.id, tenant: alice.context)
            }
            #expect(twice?.field == "message.@id")
            #expect(twice?.data["@id"] == "once")
            // The same @id on Bob's connection is Bob's own first.
            _ = try await Self.sender.send(Self.message("once"), on: bob.connection.id, tenant: bob.context)
            // A reply to another tenant's message is refused as not of this connection.
            let bobs = try #require(try await Self.sender.send(Self.message("b-2"), on: bob.connection.id, tenant: bob.context))
            _ = await refused(.invalidParams) {
                try await Self.sender.send(Self.message("r"), on: alice.connection.id, replyTo: bobs.uid, tenant: alice.context)
            }
            #expect(try await Self.count(fixture, "SELECT count(*) FROM aerie.mailbox WHERE direction = 'sent'") == 3)
            #expect(try await Self.count(fixture, "SELECT count(*) FROM aerie.outbox") == 3)
        }
    }

    /// The connection changed between the read and the write: the one-round-trip write is
    /// refused by its check and the send is decided on the locked row: a change that keeps the
    /// peer (the label) still sends, on the row as it is now, once.
    @Test func aConnectionChangedWhileTheMessageWasPackedIsDecidedOnTheLockedRow() async throws {
        try await WalletFixture.with { fixture in
            let runtime = fixture.database.runtime(maxConnections: 2)
            defer { Task { await runtime.shutdown() } }
            let alice = try await Self.tenant(fixture, runtime: runtime)
            let id = alice.connection.id
            let changing: (Tenant, @escaping @Sendable (any TenantTransaction) throws -> Void) -> TenantContext = { tenant, change in
                let database = ChangingBeforeWrite(base: tenant.context.database) { base in try await base.transaction(change) }
                return TenantContext(tenantID: tenant.context.tenantID, database: database, keyring: tenant.context.keyring, logger: tenant.context.logger)
            }
            let relabelled = try #require(
                try await Self.sender.send(
                    Self.message("l-1"), on: id,
                    tenant: changing(alice) { tx in
                        guard var record = try tx.connections.getForUpdate(id) else { throw AerieError.notFound("gone") }
                        record.label = "renamed"
                        try tx.connections.update(record)
                    }))
            #expect(relabelled.connection.label == "renamed", "sent on the locked row as it is now")
            #expect(try await Self.count(fixture, "SELECT count(*) FROM aerie.mailbox WHERE direction = 'sent'") == 1)
            #expect(try await Self.count(fixture, "SELECT count(*) FROM aerie.outbox") == 1)
        }
    }

    /// The write may run again after it committed (a connection lost at its Sync): the rerun
    /// finds its own rows and stores nothing twice.
    @Test func aRerunOfACommittedWriteStoresNothingTwice() async throws {
        try await WalletFixture.with { fixture in
            let runtime = fixture.database.runtime(maxConnections: 1)
            defer { Task { await runtime.shutdown() } }
            let alice = try await Self.tenant(fixture, runtime: runtime)
            let connection = try #require(try await alice.context.database.read { try $0.connections.get(alice.connection.id) })
            let stored = MailboxMessage(
                uid: UUID.random(), connectionId: connection.id, recipientVerkey: connection.theirVerkey ?? "",
                senderVerkey: connection.myVerkey, messageId: "rerun", type: "https://didcomm.org/basicmessage/1.0/message",
                threadId: nil, status: MailboxMessage.queued, payload: Self.message("rerun"), direction: .sent)
            let item = OutboxItem(connectionId: connection.id, endpoint: "http://127.0.0.1:9", envelope: [1, 2, 3], messageUid: stored.uid)
            for _ in 0..<2 {
                try await alice.context.database.rerunnableTransaction { tx in
                    try tx.connections.lockAsRead(connection)
                    try tx.mailbox.insertSentQueued(stored)
                    try tx.outbox.enqueue(item)
                }
            }
            #expect(try await Self.count(fixture, "SELECT count(*) FROM aerie.mailbox WHERE direction = 'sent'") == 1)
            #expect(try await Self.count(fixture, "SELECT count(*) FROM aerie.outbox") == 1)
            // Another uid with the same @id is the duplicate a send refuses.
            var duplicate = stored
            duplicate.uid = UUID.random()
            let other = duplicate
            do {
                try await alice.context.database.rerunnableTransaction { tx in try tx.mailbox.insertSentQueued(other) }
                Issue.record("a second uid with the same @id was stored")
            } catch let error as AerieError {
                #expect(error.code == .conflict && error.field == "message.@id", "\(error)")
            }
        }
    }

    /// A send answered is committed: the server killed (-9) before the peer took it delivers it
    /// after its restart.
    @Test func aSendAnsweredBeforeAKillIsDeliveredAfterTheRestart() async throws {
        let database = try await TestPostgres.shared.freshDatabase()
        let server = try ServerProcess(database: database, environment: ["AERIE_ALLOW_PRIVATE_URLS": "1"])
        let inbox = try await PeerInbox(status: 503)
        do {
            try await server.start()
            let tenant = try await server.createTenant(label: "kill")
            let client = try await server.tenantClient(token: tenant.token)
            let peer = try await TestPeer.connect(client, endpoint: inbox.url, key: inbox.key)
            let sent = try await client.call("messages.sendText", params: ["connectionId": .string(peer.connectionId), "content": "kept"])
            let uid = try #require(sent["uid"]?.stringValue)
            #expect(sent["statusCode"] == "MS-101")
            // The peer was reached and answered 503: the row waits for its retry.
            #expect(try await inbox.wait { $0["content"] == "kept" } != nil)
            await client.close()
            await server.kill9()
            inbox.setStatus(202)
            try await server.start()
            let again = try await server.tenantClient(token: tenant.token)
            #expect(try await SendMessagesTests.waitForStatus(again, uid: uid, status: "MS-102") != nil)
            await again.close()
        } catch {
            print("server log:\n\(server.log().suffix(4000))")
            await server.cleanUp()
            await inbox.stop()
            try? await database.drop()
            throw error
        }
        await server.cleanUp()
        await inbox.stop()
        try? await database.drop()
    }
}

/// A tenant database that runs `change` before a send's one-round-trip write: what another
/// writer committed between the send's read and its write.
struct ChangingBeforeWrite: TenantDatabase {
    let base: any TenantDatabase
    let change: @Sendable (any TenantDatabase) async throws -> Void

    var tenantID: TenantID { base.tenantID }

    func transaction<T: Sendable>(_ body: @escaping @Sendable (any TenantTransaction) throws -> T) async throws -> T {
        try await base.transaction(body)
    }

    func rerunnableTransaction<T: Sendable>(_ body: @escaping @Sendable (any TenantTransaction) throws -> T) async throws -> T {
        try await change(base)
        return try await base.rerunnableTransaction(body)
    }

    func read<T: Sendable>(_ body: @escaping @Sendable (any TenantTransaction) throws -> T) async throws -> T {
        try await base.read(body)
    }

    func sealing(with keyring: any TenantKeyring) -> any TenantDatabase { self }
}
