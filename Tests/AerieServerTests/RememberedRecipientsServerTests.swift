import AerieClient
import AerieCore
import AerieCrypto
import AerieStore
import AerieTesting
import Foundation
import Testing

/// Established connections' recipients remembered as read (`RecentRecipients`, origin `.read`)
/// in live servers: a peer's basic messages after its first cost one database round trip each;
/// and a remembered entry kept stale (as if its NOTIFY had not arrived yet) lets nothing through
/// that the database would refuse, nor refuses what it would take: a peer key rotated away (and
/// the new key taken), a deleted connection, a suspended tenant, a change by another server.
/// Two tenants throughout.
@Suite(.timeLimit(.minutes(10))) struct RememberedRecipientsServerTests {
    static func message(_ id: String) -> JSONValue {
        ["@type": "https://didcomm.org/basicmessage/1.0/message", "@id": .string(id), "content": .string("hello \(id)")]
    }

    static func post(_ id: String, from key: Ed25519KeyPair, to peer: TestPeer, _ server: LiveServer, port: Int? = nil) async throws -> Int {
        let envelope = try DIDCommEnvelope.pack(Self.message(id).serialized(), to: [peer.pwVerkey], from: key)
        return try await DIDCommEndpointTests.post(envelope, to: port ?? server.didcommPort)
    }

    /// Rows of `tenant`'s mailbox with the message `@id` `id` (under its row-level security).
    static func stored(_ server: LiveServer, tenant: TenantID, _ id: String) async throws -> Int {
        let runtime = server.database.runtime(maxConnections: 1)
        defer { Task { await runtime.shutdown() } }
        return try await runtime.withSession(tenant: tenant) { session in
            try session.query("SELECT count(*)::int FROM aerie.mailbox WHERE message_id = $1", [.text(id)]).int(0, 0) ?? -1
        }
    }

    /// Until the connections' own events (their handshakes', the confirmation by a peer's first
    /// message) have reached the server's LISTEN, which is slower than the messages on a loaded
    /// host, a remembered entry may leave as soon as it is kept. Waits until each peer's entry is
    /// kept and no invalidation has come for 300 ms, sending its first message again (a copy,
    /// stored once) whenever its entry left.
    static func settle(_ recent: RecentRecipients, _ server: LiveServer, _ firsts: (String, TestPeer)...) async throws {
        var generation = recent.generation
        var quietSince = ContinuousClock.now
        for _ in 0..<500 {
            for (id, peer) in firsts where recent.lookup(peer.pwVerkey)?.origin != .read {
                #expect(try await Self.post(id, from: peer.key, to: peer, server) == 202)
                quietSince = .now
            }
            if recent.generation != generation {
                generation = recent.generation
                quietSince = .now
            }
            if ContinuousClock.now - quietSince >= .milliseconds(300) { return }
            try await Task.sleep(for: .milliseconds(20))
        }
        Issue.record("the recipients' entries never settled")
    }

    @Test func aPeersMessagesAfterItsFirstTakeOneRoundTripEach() async throws {
        try await LiveServer.with(server: { $0.delivery.enabled = false; $0.database.poolSize = 1 }) { server in
            try await server.withTwoTenants { tenantA, tenantB in
                let recent = server.serverDatabase.recentRecipients
                let peerA = try await TestPeer.connect(tenantA.client)
                let peerB = try await TestPeer.connect(tenantB.client)
                // The first message is looked up in the database, which remembers the recipient.
                #expect(try await Self.post("a-0", from: peerA.key, to: peerA, server) == 202)
                #expect(try await Self.post("b-0", from: peerB.key, to: peerB, server) == 202)
                try await Self.settle(recent, server, ("a-0", peerA), ("b-0", peerB))
                #expect(recent.lookup(peerA.pwVerkey)?.origin == .read && recent.lookup(peerA.pwVerkey)?.tenant == tenantA.id)
                #expect(recent.lookup(peerB.pwVerkey)?.tenant == tenantB.id)

                // Then each message opens with the remembered recipient and is its store alone: one
                // round trip (looked up, each would be two). Background steps share the pool's one
                // connection and add a few on a loaded host, so the exact count is the cache's.
                let roundTrips = { try await server.serverDatabase.pool.withConnection { $0.roundTripCount } }
                let before = try await roundTrips()
                let servedBefore = recent.served
                let count = 20
                for index in 1...count {
                    #expect(try await Self.post("a-\(index)", from: peerA.key, to: peerA, server) == 202)
                }
                let taken = try await roundTrips() - before
                #expect(recent.served - servedBefore == count, "\(recent.served - servedBefore) of \(count) messages opened from memory")
                #expect(taken >= count && taken < 2 * count, "\(taken) round trips for \(count) messages")
                for index in 0...count { #expect(try await Self.stored(server, tenant: tenantA.id, "a-\(index)") == 1) }

                // A's peer writing to B's key is a stranger there: refused, nothing stored in
                // either tenant; B's own peer still reaches B only.
                #expect(try await Self.post("a-to-b", from: peerA.key, to: peerB, server) == 400)
                #expect(try await Self.stored(server, tenant: tenantB.id, "a-to-b") == 0)
                #expect(try await Self.stored(server, tenant: tenantA.id, "a-to-b") == 0)
                #expect(try await Self.post("b-1", from: peerB.key, to: peerB, server) == 202)
                #expect(try await Self.stored(server, tenant: tenantB.id, "b-1") == 1)
                #expect(try await Self.stored(server, tenant: tenantA.id, "b-1") == 0)
                // Delivered twice: stored once.
                #expect(try await Self.post("a-1", from: peerA.key, to: peerA, server) == 202)
                #expect(try await Self.stored(server, tenant: tenantA.id, "a-1") == 1)
            }
        }
    }

    @Test func aStaleRememberedRecipientLetsNothingThroughTheDatabaseWouldRefuse() async throws {
        try await LiveServer.with(server: { $0.delivery.enabled = false; $0.outbound.allowPrivateURLs = true }) { server in
            try await server.withTwoTenants { tenantA, tenantB in
                let (a, aID) = tenantA
                let (b, bID) = tenantB
                let recent = server.serverDatabase.recentRecipients
                /// The entry the recipient's messages are opened with, after two of them.
                func remembered(_ peer: TestPeer, _ tenant: TenantID, _ prefix: String) async throws -> RecentRecipients.Recipient {
                    for index in 0..<2 { #expect(try await Self.post("\(prefix)-\(index)", from: peer.key, to: peer, server) == 202) }
                    let entry = try #require(recent.lookup(peer.pwVerkey))
                    #expect(entry.origin == .read && entry.tenant == tenant)
                    return entry
                }

                // The peer rotates its key (DID Rotate): the old key's message is refused, the new
                // key's taken, both judged on the row as stored.
                let rotating = try await TestPeer.connect(a)
                let stale = try await remembered(rotating, aID, "r")
                let newKey = Ed25519KeyPair.generate()
                let newDid = try PeerDID2.make(verkey: newKey.verkey, serviceEndpoint: "http://127.0.0.1:9")
                let rotate: JSONValue = ["@type": "https://didcomm.org/did-rotate/1.0/rotate", "@id": "rotate-1", "to_did": .string(newDid)]
                #expect(try await DIDCommEndpointTests.post(try rotating.pack(rotate), to: server.didcommPort) == 202)
                let rotated = try await a.call("connections.get", params: ["connectionId": .string(rotating.connectionId)])
                #expect(rotated["theirVerkey"] == .string(Base58.encode(newKey.verkey)))
                #expect(recent.lookup(rotating.pwVerkey) == nil)
                recent.remember([stale])
                #expect(try await Self.post("r-old", from: rotating.key, to: rotating, server) == 400)
                #expect(try await Self.stored(server, tenant: aID, "r-old") == 0)
                recent.remember([stale])
                #expect(try await Self.post("r-new", from: newKey, to: rotating, server) == 202)
                #expect(try await Self.stored(server, tenant: aID, "r-new") == 1)

                // The connection deleted: refused, nothing stored.
                let deleted = try await TestPeer.connect(a)
                let staleDeleted = try await remembered(deleted, aID, "d")
                _ = try await a.call("connections.delete", params: ["connectionId": .string(deleted.connectionId)])
                #expect(recent.lookup(deleted.pwVerkey) == nil)
                recent.remember([staleDeleted])
                #expect(try await Self.post("d-after", from: deleted.key, to: deleted, server) == 400)
                #expect(try await Self.stored(server, tenant: aID, "d-after") == 0)

                // B suspended: refused, nothing stored; A's peers unaffected. Resumed: taken again.
                let peerB = try await TestPeer.connect(b)
                let staleB = try await remembered(peerB, bID, "b")
                let peerA = try await TestPeer.connect(a)
                _ = try await remembered(peerA, aID, "a")
                _ = try await CredentialRevocationTests.admin(server, "admin.tenants.suspend", bID)
                #expect(try await ConnectionViewCacheTests.eventually { recent.lookup(peerB.pwVerkey) == nil })
                recent.remember([staleB])
                #expect(try await Self.post("b-suspended", from: peerB.key, to: peerB, server) == 400)
                #expect(try await Self.stored(server, tenant: bID, "b-suspended") == 0)
                #expect(try await Self.post("a-meanwhile", from: peerA.key, to: peerA, server) == 202)
                #expect(recent.lookup(peerA.pwVerkey)?.tenant == aID)
                _ = try await CredentialRevocationTests.admin(server, "admin.tenants.resume", bID)
                #expect(try await Self.post("b-resumed", from: peerB.key, to: peerB, server) == 202)
                #expect(try await Self.stored(server, tenant: bID, "b-resumed") == 1)

                // Another server applies the peer's rotation: its NOTIFY takes the entry away
                // here; kept stale, the old key is still refused.
                let sibling = try await server.sibling()
                do {
                    let elsewhere = try await TestPeer.connect(a)
                    let staleElsewhere = try await remembered(elsewhere, aID, "e")
                    let otherKey = Ed25519KeyPair.generate()
                    let otherDid = try PeerDID2.make(verkey: otherKey.verkey, serviceEndpoint: "http://127.0.0.1:9")
                    let rotateThere: JSONValue = [
                        "@type": "https://didcomm.org/did-rotate/1.0/rotate", "@id": "rotate-2", "to_did": .string(otherDid),
                    ]
                    #expect(try await DIDCommEndpointTests.post(try elsewhere.pack(rotateThere), to: sibling.didcommPort) == 202)
                    #expect(try await ConnectionViewCacheTests.eventually { recent.lookup(elsewhere.pwVerkey) == nil })
                    recent.remember([staleElsewhere])
                    #expect(try await Self.post("e-old", from: elsewhere.key, to: elsewhere, server) == 400)
                    #expect(try await Self.stored(server, tenant: aID, "e-old") == 0)
                    #expect(try await Self.post("e-new", from: otherKey, to: elsewhere, server) == 202)
                    #expect(try await Self.stored(server, tenant: aID, "e-new") == 1)
                } catch {
                    try? await sibling.stop()
                    throw error
                }
                try await sibling.stop()
            }
        }
    }
}
