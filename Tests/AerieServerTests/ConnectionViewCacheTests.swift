import AerieClient
import AerieCore
import AerieCrypto
import AerieStore
import AerieTesting
import Foundation
import Logging
import Testing

/// `connections.get` answered from the connection view cache (issue 16 goal 3) stays true: this
/// server's writes show at once, another server's (or any process's) through the NOTIFY every
/// server hears (schema/0004 for inserts and state changes, schema/0028 for any other column and
/// deletes), and a listener outage drops and bypasses the cache. Two tenants each time, one
/// connection id answered for its own tenant only.
@Suite(.timeLimit(.minutes(10))) struct ConnectionViewCacheTests {
    typealias Revocation = CredentialRevocationTests

    static func get(_ client: AerieClient, _ id: String) async throws -> JSONValue {
        try await client.call("connections.get", params: ["connectionId": .string(id)])
    }

    /// Repeats `check` until it holds, for what another process changed (its NOTIFY is on the way).
    static func eventually(_ check: () async throws -> Bool) async throws -> Bool {
        for _ in 0..<500 {
            if try await check() { return true }
            try await Task.sleep(for: .milliseconds(10))
        }
        return false
    }

    static func connection(_ client: AerieClient, label: String) async throws -> String {
        let invitation: JSONValue = [
            "@type": "https://didcomm.org/connections/1.0/invitation", "@id": .string(UUID().uuidString),
            "label": .string(label), "recipientKeys": .array([.string(Ed25519KeyPair.generate().verkeyBase58)]),
            "serviceEndpoint": "http://127.0.0.1:9/",
        ]
        let created = try await client.call("connections.createWithInvite", params: ["invitation": invitation])
        return try #require(created["connectionId"]?.stringValue)
    }

    /// Runs `sql` as the cluster superuser on the server's database: another process's write.
    static func elsewhere(_ server: LiveServer, _ sql: String, _ parameters: [SQLValue]) async throws {
        try await WalletFixture.asSuperuser(server.database) { session in _ = try session.execute(sql, parameters) }
    }

    /// Sessions of two new tenants, alice's and bob's.
    static func twoTenants(_ server: LiveServer) async throws -> (AerieClient, AerieClient) {
        let (_, aliceToken) = try await Revocation.tenant(server, label: "alice")
        let (_, bobToken) = try await Revocation.tenant(server, label: "bob")
        return (try await MessagesPushTests.client(server, token: aliceToken), try await MessagesPushTests.client(server, token: bobToken))
    }

    /// Changes a connection's `their_did` with the table's triggers off: no NOTIFY reaches anyone.
    static func unannounced(_ server: LiveServer, theirDid: String, of id: String) async throws {
        try await WalletFixture.asSuperuser(server.database) { session in
            try session.execute("ALTER TABLE aerie.connections DISABLE TRIGGER USER")
            _ = try session.execute("UPDATE aerie.connections SET their_did = $2, their_did_sealed = NULL WHERE id = $1::uuid", [.text(id), .text(theirDid)])
        }
    }

    @Test func bothServersFollowEveryKindOfChange() async throws {
        try await LiveServer.with(server: { $0.delivery.enabled = false }) { first in
            let second = try await first.sibling()
            do {
                let (_, aliceToken) = try await Revocation.tenant(first, label: "alice")
                let (_, bobToken) = try await Revocation.tenant(first, label: "bob")
                let aliceFirst = try await MessagesPushTests.client(first, token: aliceToken)
                let aliceSecond = try await MessagesPushTests.client(second, token: aliceToken)
                let bobSecond = try await MessagesPushTests.client(second, token: bobToken)
                defer { Task { for client in [aliceFirst, aliceSecond, bobSecond] { await client.close() } } }
                let kept = try await Self.connection(aliceFirst, label: "kept")
                let deleted = try await Self.connection(aliceFirst, label: "deleted")
                let extra = try await Self.connection(aliceSecond, label: "extra")
                let bobs = try await Self.connection(bobSecond, label: "bob's")
                // Cached on both servers (read twice); never answered for the other tenant.
                for _ in 0..<2 {
                    for client in [aliceFirst, aliceSecond] {
                        #expect(try await Self.get(client, kept)["label"] == "kept")
                        #expect(try await Self.get(client, deleted)["label"] == "deleted")
                        #expect(try await Self.get(client, extra)["label"] == "extra")
                    }
                    #expect(try await Self.get(bobSecond, bobs)["label"] == "bob's")
                    #expect(await Revocation.errorCode(bobSecond, "connections.get", ["connectionId": .string(kept)]) == "not_found")
                    #expect(await Revocation.errorCode(aliceSecond, "connections.get", ["connectionId": .string(bobs)]) == "not_found")
                }

                // Deleted through the first server: gone there at once, on the second by NOTIFY.
                _ = try await aliceFirst.call("connections.delete", params: ["connectionId": .string(deleted)])
                #expect(await Revocation.errorCode(aliceFirst, "connections.get", ["connectionId": .string(deleted)]) == "not_found")
                #expect(try await Self.eventually {
                    await Revocation.errorCode(aliceSecond, "connections.get", ["connectionId": .string(deleted)]) == "not_found"
                })

                // A column other than the state, by another process: both servers follow.
                try await Self.elsewhere(
                    first, "UPDATE aerie.connections SET their_did = 'did:sov:changed', their_did_sealed = NULL WHERE id = $1::uuid", [.text(kept)])
                for client in [aliceFirst, aliceSecond] {
                    #expect(try await Self.eventually { try await Self.get(client, kept)["theirDid"] == "did:sov:changed" })
                }
                // A state change, the same way.
                try await Self.elsewhere(first, "UPDATE aerie.connections SET state = 'failed' WHERE id = $1::uuid", [.text(kept)])
                for client in [aliceFirst, aliceSecond] {
                    #expect(try await Self.eventually { try await Self.get(client, kept)["stateName"] == "failed" })
                }
                // One statement deleting two of alice's rows (one event for the tenant, no id) and
                // one of bob's (an event naming it).
                try await Self.elsewhere(
                    first, "DELETE FROM aerie.connections WHERE id = ANY($1::uuid[])", [.textArray([kept, extra, bobs])])
                for (client, id) in [(aliceFirst, kept), (aliceSecond, kept), (aliceFirst, extra), (aliceSecond, extra), (bobSecond, bobs)] {
                    #expect(try await Self.eventually {
                        await Revocation.errorCode(client, "connections.get", ["connectionId": .string(id)]) == "not_found"
                    })
                }
            } catch {
                try? await second.stop()
                throw error
            }
            try await second.stop()
        }
    }

    @Test func aListenerOutageDropsTheCacheSoALostNotifyLeavesNothingStale() async throws {
        try await LiveServer.with { server in
            let (alice, bob) = try await Self.twoTenants(server)
            defer { Task { await alice.close(); await bob.close() } }
            let id = try await Self.connection(alice, label: "alice's")
            let bobs = try await Self.connection(bob, label: "bob's")
            #expect(try await Self.get(alice, id)["theirDid"]?.stringValue == nil)  // cached from here on
            #expect(try await Self.get(bob, bobs)["theirDid"]?.stringValue == nil)
            // Cut the server's LISTEN connection; then change alice's row with no NOTIFY at all
            // (as if it were sent during the outage and lost).
            #expect(try await WalletFixture.cutEventListener(server.database), "the server never listened again")
            try await Self.unannounced(server, theirDid: "did:sov:unannounced", of: id)
            #expect(try await Self.get(alice, id)["theirDid"] == "did:sov:unannounced")
            #expect(try await Self.get(bob, bobs)["theirDid"]?.stringValue == nil)
        }
    }

    @Test func offEveryCallReadsTheDatabase() async throws {
        try await LiveServer.with(server: { $0.caches.connectionsSize = 0 }) { server in
            let (alice, bob) = try await Self.twoTenants(server)
            defer { Task { await alice.close(); await bob.close() } }
            let id = try await Self.connection(alice, label: "alice's")
            #expect(try await Self.get(alice, id)["label"] == "alice's")
            #expect(await Revocation.errorCode(bob, "connections.get", ["connectionId": .string(id)]) == "not_found")
            // No NOTIFY reaches anyone, yet the change shows at once: nothing was cached.
            try await Self.unannounced(server, theirDid: "did:sov:quiet", of: id)
            #expect(try await Self.get(alice, id)["theirDid"] == "did:sov:quiet")
        }
    }
}
