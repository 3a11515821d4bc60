import AerieClient
import AerieCore
import AerieCrypto
import AerieStore
import AerieTesting
import Foundation
import Logging
import Testing

/// Rotate, suspend and delete act at once on every server process (issue 13 item 5, issue 16
/// item 3): the NOTIFY from the changing transaction clears the cached credential and ends push
/// to the sessions holding the old token. Two tenants each time: the other one's session keeps
/// receiving, which proves the pushes were flowing while the first one's stopped.
@Suite(.timeLimit(.minutes(10))) struct CredentialRevocationTests {
    typealias Collector = MessagesPushTests.Collector
    static let basic = MessagesPushTests.basic

    /// A tenant's id and token, made through `server`'s admin API.
    static func tenant(_ server: LiveServer, label: String) async throws -> (TenantID, String) {
        let admin = try await server.adminClient()
        defer { Task { await admin.close() } }
        let created = try await admin.call("admin.tenants.create", params: ["label": .string(label)])
        let token = try #require(created["token"]?.stringValue)
        let id = try #require(created["tenantId"]?.stringValue.flatMap(TenantID.init))
        return (id, token)
    }

    static func admin(_ server: LiveServer, _ method: String, _ tenant: TenantID) async throws -> JSONValue {
        let admin = try await server.adminClient()
        defer { Task { await admin.close() } }
        return try await admin.call(method, params: ["tenantId": .string(tenant.rawValue)])
    }

    /// The error code (`data.code`) a call answers, nil when it succeeds.
    static func errorCode(_ client: AerieClient, _ method: String, _ params: JSONValue = [:]) async -> String? {
        do {
            _ = try await client.call(method, params: params)
            return nil
        } catch let error as AerieClientError {
            return error.data?["code"]?.stringValue ?? "\(error.code)"
        } catch {
            return "\(error)"
        }
    }

    /// Sends one message to `connection` and waits until `marker` (the other tenant) got one
    /// too: NOTIFYs arrive in commit order, so anything the first one would have been pushed
    /// has been pushed by then.
    static func sendThenMarker(
        to connection: MessagesMailboxTests.Connection, marker: MessagesMailboxTests.Connection, markerSeen: Collector,
        port: Int, id: String
    ) async throws {
        let before = markerSeen.all("messages.received").count
        #expect(try await MessagesMailboxTests.send(Self.basic, id: "\(id)-revoked", to: connection, port: port) == 202)
        #expect(try await MessagesMailboxTests.send(Self.basic, id: "\(id)-marker", to: marker, port: port) == 202)
        try await markerSeen.wait(for: "messages.received", count: before + 1)
    }

    /// Whether this process's `BoxSharedKeys` holds the box shared key of `connection`'s pairwise
    /// key and its peer's key in `tenant` (an inbound message from the peer left it there).
    static func holdsSharedKey(_ tenant: TenantID, _ connection: MessagesMailboxTests.Connection) throws -> Bool {
        let theirs = try Ed25519.x25519PublicKey(fromVerkey: connection.peer.verkey)
        return BoxSharedKeys.shared.lookup(
            scope: tenant.rawValue, ourVerkey: try Base58.decode(connection.pwVerkey), theirPublicKey: theirs) != nil
    }

    /// A session of `token` with a connection of its own, subscribed to push, and what it is pushed.
    static func subscribed(_ server: LiveServer, token: String) async throws
        -> (client: AerieClient, connection: MessagesMailboxTests.Connection, seen: Collector)
    {
        let client = try await MessagesPushTests.client(server, token: token)
        let connection = try await MessagesMailboxTests.connect(client)
        let seen = Collector(client)
        _ = try await client.call("messages.subscribe")
        return (client, connection, seen)
    }

    @Test(arguments: ["admin.tenants.rotateToken", "admin.tenants.suspend"])
    func aChangedCredentialEndsPushAndTheNextCall(_ method: String) async throws {
        try await LiveServer.with(server: { $0.outbound.allowPrivateURLs = true; $0.delivery.enabled = false }) { server in
            let (aliceID, aliceToken) = try await Self.tenant(server, label: "alice")
            let (bobID, bobToken) = try await Self.tenant(server, label: "bob")
            let (alice, aliceConnection, aliceSeen) = try await Self.subscribed(server, token: aliceToken)
            let (bob, bobConnection, bobSeen) = try await Self.subscribed(server, token: bobToken)
            defer { Task { await alice.close(); await bob.close() } }
            // Pushes flow to both before the change (and alice's credential is cached now).
            try await Self.sendThenMarker(
                to: aliceConnection, marker: bobConnection, markerSeen: bobSeen, port: server.didcommPort, id: "before")
            try await aliceSeen.wait(for: "messages.received")
            #expect(try await alice.call("connections.get", params: ["connectionId": .string(aliceConnection.id)])["connectionId"] != nil)
            // Opening each one's message kept the box shared key of its pair, per tenant.
            #expect(try Self.holdsSharedKey(aliceID, aliceConnection))
            #expect(try Self.holdsSharedKey(bobID, bobConnection))
            #expect(try !Self.holdsSharedKey(bobID, aliceConnection))

            _ = try await Self.admin(server, method, aliceID)
            if method == "admin.tenants.suspend" { _ = try await Self.admin(server, "admin.tenants.resume", aliceID) }
            let revoked = try #require(try await aliceSeen.wait(for: "session.revoked").first)
            #expect(revoked.params["code"] == "unauthenticated")
            // The credential event dropped alice's shared keys, not bob's.
            #expect(try !Self.holdsSharedKey(aliceID, aliceConnection))
            #expect(try Self.holdsSharedKey(bobID, bobConnection))
            let pushedBefore = aliceSeen.all("messages.received").count

            // Stored for alice (the tenant is active again), pushed to bob, not to alice's old session.
            try await Self.sendThenMarker(
                to: aliceConnection, marker: bobConnection, markerSeen: bobSeen, port: server.didcommPort, id: "after")
            #expect(aliceSeen.all("messages.received").count == pushedBefore)
            #expect(await Self.errorCode(alice, "connections.get", ["connectionId": .string(aliceConnection.id)]) == "unauthenticated")
            #expect(await Self.errorCode(bob, "connections.get", ["connectionId": .string(bobConnection.id)]) == nil)
        }
    }

    @Test func bothServerProcessesSeeARotationAndASuspension() async throws {
        try await LiveServer.with(server: { $0.outbound.allowPrivateURLs = true; $0.delivery.enabled = false }) { first in
            let second = try await first.sibling()
            do {
                let (aliceID, aliceToken) = try await Self.tenant(first, label: "alice")
                let (bobID, bobToken) = try await Self.tenant(first, label: "bob")
                // Subscribed on the second process; plain (cached) sessions on both.
                let alicePush = try await MessagesPushTests.client(second, token: aliceToken)
                let bobPush = try await MessagesPushTests.client(second, token: bobToken)
                let aliceFirst = try await MessagesPushTests.client(first, token: aliceToken)
                let aliceSecond = try await MessagesPushTests.client(second, token: aliceToken)
                let bobFirst = try await MessagesPushTests.client(first, token: bobToken)
                defer {
                    Task {
                        for client in [alicePush, bobPush, aliceFirst, aliceSecond, bobFirst] { await client.close() }
                    }
                }
                let aliceConnection = try await MessagesMailboxTests.connect(aliceFirst)
                let bobConnection = try await MessagesMailboxTests.connect(bobFirst)
                let aliceSeen = Collector(alicePush)
                let bobSeen = Collector(bobPush)
                _ = try await alicePush.call("messages.subscribe")
                _ = try await bobPush.call("messages.subscribe")
                try await Self.sendThenMarker(
                    to: aliceConnection, marker: bobConnection, markerSeen: bobSeen, port: first.didcommPort, id: "before")
                try await aliceSeen.wait(for: "messages.received")
                for client in [aliceFirst, aliceSecond] {
                    #expect(await Self.errorCode(client, "connections.list") == nil)
                }

                // Rotated through the first process: the second one's cache and push follow.
                let rotated = try await Self.admin(first, "admin.tenants.rotateToken", aliceID)
                try await aliceSeen.wait(for: "session.revoked")
                let pushedBefore = aliceSeen.all("messages.received").count
                try await Self.sendThenMarker(
                    to: aliceConnection, marker: bobConnection, markerSeen: bobSeen, port: first.didcommPort, id: "after")
                #expect(aliceSeen.all("messages.received").count == pushedBefore)
                for client in [aliceFirst, aliceSecond] {
                    #expect(await Self.errorCode(client, "connections.list") == "unauthenticated")
                }
                // The new token works on both.
                let newToken = try #require(rotated["token"]?.stringValue)
                for server in [first, second] {
                    let client = try await MessagesPushTests.client(server, token: newToken)
                    #expect(await Self.errorCode(client, "connections.list") == nil)
                    await client.close()
                }

                // Bob suspended through the second process: the first one's cached session stops.
                #expect(await Self.errorCode(bobFirst, "connections.list") == nil)
                _ = try await Self.admin(second, "admin.tenants.suspend", bobID)
                try await bobSeen.wait(for: "session.revoked")
                var code: String? = nil
                for _ in 0..<100 {
                    code = await Self.errorCode(bobFirst, "connections.list")
                    if code != nil { break }
                    try await Task.sleep(for: .milliseconds(10))
                }
                #expect(code == "unauthenticated")
            } catch {
                try? await second.stop()
                throw error
            }
            try await second.stop()
        }
    }

    @Test func aDeletedTenantsSessionsStopAndTheOtherTenantGoesOn() async throws {
        try await LiveServer.with(server: { $0.outbound.allowPrivateURLs = true; $0.delivery.enabled = false }) { server in
            let (aliceID, aliceToken) = try await Self.tenant(server, label: "alice")
            let (_, bobToken) = try await Self.tenant(server, label: "bob")
            let alice = try await MessagesPushTests.client(server, token: aliceToken)
            let bob = try await MessagesPushTests.client(server, token: bobToken)
            defer { Task { await alice.close(); await bob.close() } }
            let aliceSeen = Collector(alice)
            _ = try await alice.call("messages.subscribe")
            #expect(await Self.errorCode(alice, "connections.list") == nil)
            _ = try await Self.admin(server, "admin.tenants.delete", aliceID)
            try await aliceSeen.wait(for: "session.revoked")
            #expect(await Self.errorCode(alice, "connections.list") == "unauthenticated")
            #expect(await Self.errorCode(bob, "connections.list") == nil)
        }
    }

    @Test func aListenerOutageClearsTheCacheSoALostNotifyCannotLeaveStaleAuthority() async throws {
        try await LiveServer.with { server in
            let (aliceID, aliceToken) = try await Self.tenant(server, label: "alice")
            let (_, bobToken) = try await Self.tenant(server, label: "bob")
            let alice = try await MessagesPushTests.client(server, token: aliceToken)
            let bob = try await MessagesPushTests.client(server, token: bobToken)
            defer { Task { await alice.close(); await bob.close() } }
            #expect(await Self.errorCode(alice, "connections.list") == nil)  // cached from here on
            let superuser = AerieDatabase(
                configuration: DatabaseConfiguration(conninfo: server.database.superuserConninfo, maxConnections: 1),
                logger: Logger(label: "test"))
            do {
                // Cut the server's LISTEN connection; then suspend alice with no NOTIFY at all (as
                // if it were sent during the outage and lost).
                #expect(try await WalletFixture.cutEventListener(server.database), "the server never listened again")
                try await superuser.withSession { session in
                    try session.execute("ALTER TABLE aerie.tenants DISABLE TRIGGER tenants_notify_credential")
                    try session.execute("UPDATE aerie.tenants SET status = 'suspended' WHERE id = $1::uuid", [.text(aliceID.rawValue)])
                }
                #expect(await Self.errorCode(alice, "connections.list") == "unauthenticated")
                #expect(await Self.errorCode(bob, "connections.list") == nil)
            } catch {
                await superuser.shutdown()
                throw error
            }
            await superuser.shutdown()
        }
    }

    @Test func withoutTheCacheEveryCallStillChecksTheDatabase() async throws {
        try await LiveServer.with(server: { $0.caches.credentialsSize = 0 }) { server in
            let (aliceID, aliceToken) = try await Self.tenant(server, label: "alice")
            let alice = try await MessagesPushTests.client(server, token: aliceToken)
            defer { Task { await alice.close() } }
            #expect(await Self.errorCode(alice, "connections.list") == nil)
            _ = try await Self.admin(server, "admin.tenants.suspend", aliceID)
            #expect(await Self.errorCode(alice, "connections.list") == "unauthenticated")
        }
    }
}
