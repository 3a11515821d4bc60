import AerieClient
import AerieCore
import AerieCrypto
import AerieStore
import AerieTesting
import Foundation
import Testing

/// `RecentRecipients` in live servers: the key `connections.accept` made is kept, so the peer's
/// Response to it opens without the inbound lookup; applying it takes the key away at once;
/// another server's change of the connection takes it away here by NOTIFY; and a key kept stale
/// (that NOTIFY not heard yet) neither refuses a message the database would take (any type but a
/// Response is looked up), nor lets a stranger in, nor applies a Response twice. Two tenants.
@Suite(.timeLimit(.minutes(10))) struct RecentRecipientsServerTests {
    struct Accepted {
        var connectionId: String
        var verkey: String
        var response: [UInt8]
        /// The Response itself, signed by the inviter and naming `theirKey`.
        var message: [UInt8]
        /// The invitation's key (the inviter's, which signed the Response).
        var inviter: Ed25519KeyPair
    }

    /// `connections.accept` of a fresh didexchange invitation, and the inviter's Response to it,
    /// packed by the inviter's new key `theirKey`.
    static func accept(_ client: AerieClient, invitationId: String, theirKey: Ed25519KeyPair) async throws -> Accepted {
        let inviter = Ed25519KeyPair.generate()
        let theirDid = try PeerDID2.make(verkey: theirKey.verkey, serviceEndpoint: "http://127.0.0.1:9")
        let invitation = try HandMadeHandshake.invitation(inviter: inviter, id: invitationId)
        let accepted = try await client.call("connections.accept", params: ["invitation": invitation])
        let id = try #require(accepted["connectionId"]?.stringValue)
        let verkey = try #require(accepted["pwVerkey"]?.stringValue)
        let response = try HandMadeHandshake.response(invitationId: invitationId, theirDid: theirDid, signedBy: inviter)
        return Accepted(
            connectionId: id, verkey: verkey, response: try DIDCommEnvelope.pack(response.serialized(), to: [verkey], from: theirKey),
            message: response.serialized(), inviter: inviter)
    }

    struct Garbled: Error {}

    static func ping(to verkey: String, from key: Ed25519KeyPair) throws -> [UInt8] {
        let ping = #"{"@type":"https://didcomm.org/trust_ping/1.0/ping","@id":"\#(UUID().uuidString)","response_requested":false}"#
        return try DIDCommEnvelope.pack(Array(ping.utf8), to: [verkey], from: key)
    }

    static func state(_ client: AerieClient, _ id: String) async throws -> JSONValue? {
        try await client.call("connections.get", params: ["connectionId": .string(id)])["state"]
    }

    /// The trust pings stored for the connection.
    static func pings(_ server: LiveServer, tenant: TenantID, connection: String) async throws -> Int {
        let runtime = server.database.runtime(maxConnections: 1)
        defer { Task { await runtime.shutdown() } }
        return try await runtime.withSession(tenant: tenant) { session in
            try session.query(
                "SELECT count(*)::int FROM aerie.mailbox WHERE connection_id = $1::uuid AND type LIKE '%/trust_ping/1.0/ping'",
                [.text(connection)]
            ).int(0, 0) ?? -1
        }
    }

    @Test func aKeptKeyOpensTheResponseAndAStaleOneChangesNothingTheDatabaseWouldNot() async throws {
        try await LiveServer.with(server: { $0.delivery.enabled = false }) { server in
            try await server.withTwoTenants { tenantA, tenantB in
                let (a, aID) = tenantA
                let (b, bID) = tenantB
                let recent = server.serverDatabase.recentRecipients
                let sibling = try await server.sibling()
                do {
                    // A's Response, to the key just made here: applied; the write takes the key away.
                    let aKey = Ed25519KeyPair.generate()
                    let aAccepted = try await Self.accept(a, invitationId: "inv-a", theirKey: aKey)
                    #expect(recent.lookup(aAccepted.verkey)?.tenant == aID)
                    // First, through the kept key: the inviter's signed Response replayed by a key
                    // it does not name, and the real envelope with its ciphertext replaced. Both
                    // refused (400) as without the cache: nothing stored, the key still kept.
                    let replay = try DIDCommEnvelope.pack(aAccepted.message, to: [aAccepted.verkey], from: Ed25519KeyPair.generate())
                    #expect(try await DIDCommEndpointTests.post(replay, to: server.didcommPort) == 400)
                    guard case .object(var fields) = try JSONValue(parsing: aAccepted.response) else { throw Garbled() }
                    fields["ciphertext"] = .string(Base64.encodeURL(Array(repeating: 7, count: 64)))
                    #expect(try await DIDCommEndpointTests.post(JSONValue.object(fields).serialized(), to: server.didcommPort) == 400)
                    #expect(try await Self.state(a, aAccepted.connectionId) == 2)
                    #expect(try await ResponseCopiesTests.rows(server, tenant: aID, connection: aAccepted.connectionId).responses == [])
                    #expect(recent.lookup(aAccepted.verkey)?.tenant == aID)
                    #expect(try await DIDCommEndpointTests.post(aAccepted.response, to: server.didcommPort) == 202)
                    #expect(try await Self.state(a, aAccepted.connectionId) == 4)
                    #expect(recent.lookup(aAccepted.verkey) == nil)

                    // B's Response reaches the other server, which applies it: its NOTIFY takes B's
                    // key away here, A's connection untouched.
                    let bKey = Ed25519KeyPair.generate()
                    let bAccepted = try await Self.accept(b, invitationId: "inv-b", theirKey: bKey)
                    let kept = try #require(recent.lookup(bAccepted.verkey))
                    #expect(kept.tenant == bID)
                    #expect(try await DIDCommEndpointTests.post(bAccepted.response, to: sibling.didcommPort) == 202)
                    #expect(try await ConnectionViewCacheTests.eventually { recent.lookup(bAccepted.verkey) == nil })
                    #expect(try await Self.state(b, bAccepted.connectionId) == 4)

                    // From here B's key is kept stale, as if that NOTIFY had not arrived yet: the
                    // connection as inserted knows no peer key.
                    recent.remember([kept])
                    // The peer's trust ping: not a Response, so decided on the row as stored (the
                    // connection as kept knows no peer key and would refuse it).
                    #expect(try await DIDCommEndpointTests.post(try Self.ping(to: bAccepted.verkey, from: bKey), to: server.didcommPort) == 202)
                    #expect(try await Self.pings(server, tenant: bID, connection: bAccepted.connectionId) == 1)
                    // A stranger's: refused either way, nothing stored.
                    recent.remember([kept])
                    let stranger = Ed25519KeyPair.generate()
                    #expect(
                        try await DIDCommEndpointTests.post(try Self.ping(to: bAccepted.verkey, from: stranger), to: server.didcommPort) == 400)
                    #expect(try await Self.pings(server, tenant: bID, connection: bAccepted.connectionId) == 1)
                    // A problem report from the invitation key, which the connection as kept would
                    // take (no peer key yet): decided on the row, whose peer key is known, it is
                    // refused and B's connection stays accepted.
                    recent.remember([kept])
                    let report = #"{"@type":"https://didcomm.org/didexchange/1.1/problem_report","@id":"\#(UUID().uuidString)","description":{"code":"request_not_accepted","en":"no"}}"#
                    let reportEnvelope = try DIDCommEnvelope.pack(Array(report.utf8), to: [bAccepted.verkey], from: bAccepted.inviter)
                    #expect(try await DIDCommEndpointTests.post(reportEnvelope, to: server.didcommPort) == 400)
                    #expect(try await Self.state(b, bAccepted.connectionId) == 4)
                    // The Response again: the row is no longer as kept, and the copy was handled on
                    // the other server: nothing changes (one Response, one didexchange complete).
                    recent.remember([kept])
                    #expect(try await DIDCommEndpointTests.post(bAccepted.response, to: server.didcommPort) == 202)
                    let (responses, outbox) = try await ResponseCopiesTests.rows(server, tenant: bID, connection: bAccepted.connectionId)
                    #expect(responses == [MailboxMessage.reviewed])
                    #expect(outbox == 2)
                    #expect(try await Self.state(b, bAccepted.connectionId) == 4)
                    #expect(try await Self.state(a, aAccepted.connectionId) == 4)

                    // A key deleted by another process, its connection left as it was (schema/0038's
                    // NOTIFY): it leaves here too, and the Response to it is refused as by the database.
                    let againKey = Ed25519KeyPair.generate()
                    let again = try await Self.accept(a, invitationId: "inv-a2", theirKey: againKey)
                    #expect(recent.lookup(again.verkey)?.tenant == aID)
                    try await WalletFixture.asSuperuser(server.database) { session in
                        _ = try session.execute("DELETE FROM aerie.tenant_keys WHERE verkey = $1", [.text(again.verkey)])
                    }
                    #expect(try await ConnectionViewCacheTests.eventually { recent.lookup(again.verkey) == nil })
                    #expect(try await DIDCommEndpointTests.post(again.response, to: server.didcommPort) == 400)
                    #expect(try await Self.state(a, again.connectionId) == 2)
                } catch {
                    try? await sibling.stop()
                    throw error
                }
                try await sibling.stop()
            }
        }
    }
}
