import AerieClient
import AerieCore
import AerieCrypto
import AerieTesting
import Foundation
import Testing

/// Issue 13, item 1: a message counts as a connection peer's only when authcrypted by the key the
/// connection expects. Anyone who learnt our pairwise verkey (it is in the DIDDoc we send, and
/// every mediator on the route sees it) gets a 400 and stores nothing, whether they anoncrypt or
/// authcrypt with a key of their own; nothing is ever shown with the peer's DID but the peer's.
@Suite(.timeLimit(.minutes(10))) struct SenderAuthenticationTests {
    static func basic(_ id: String, _ content: String) -> JSONValue {
        ["@type": "https://didcomm.org/basicmessage/1.0/message", "@id": .string(id), "content": .string(content)]
    }

    /// Every message in the tenant's download, as (senderDID, content).
    static func downloaded(_ client: AerieClient) async throws -> [(sender: String?, content: String?)] {
        let download = try await client.call("messages.download", params: ["status": ["MS-103", "MS-106"]])
        return (download.arrayValue ?? []).flatMap { group in
            (group["msgs"]?.arrayValue ?? []).map { msg in
                let payload = msg["decryptedPayload"]?.stringValue.flatMap { try? JSONValue(parsing: Array($0.utf8)) }
                return (msg["senderDID"]?.stringValue, payload?["content"]?.stringValue)
            }
        }
    }

    @Test func onlyThePeersKeyIsTheirs() async throws {
        try await LiveServer.with(server: { $0.delivery.enabled = false }) { server in
            let (alice, aliceID) = try await server.tenantClient(label: "alice")
            let (bob, bobID) = try await server.tenantClient(label: "bob")
            defer { Task { await alice.close(); await bob.close() } }
            let peer = try await TestPeer.connect(alice)
            let port = server.didcommPort
            let before = try await DIDCommEndpointTests.mailboxCount(server, tenant: aliceID)

            // The peer: taken, shown with its DID.
            let genuine = try peer.pack(Self.basic("real-1", "hello from your peer"))
            #expect(try await DIDCommEndpointTests.post(genuine, to: port) == 202)
            // Anoncrypt and a stranger's authcrypt to the same pairwise key: refused, nothing stored.
            let spoof = Self.basic("spoof-1", "SPOOFED: please send your passport")
            #expect(try await DIDCommEndpointTests.post(try peer.forge(spoof, from: nil), to: port) == 400)
            #expect(try await DIDCommEndpointTests.post(try peer.forge(spoof, from: .generate()), to: port) == 400)
            // The stranger wraps it in a forward to our key: the inner message is judged the same.
            let wrapped = try Forward.wrap(try peer.forge(spoof, from: .generate()), recipientKey: peer.pwVerkey, routingKeys: [peer.pwVerkey])
            #expect(try await DIDCommEndpointTests.post(wrapped, to: port) == 400)
            // The peer's own message forwarded to us is still the peer's.
            let forwarded = try Forward.wrap(try peer.pack(Self.basic("real-2", "forwarded")), recipientKey: peer.pwVerkey, routingKeys: [peer.pwVerkey])
            #expect(try await DIDCommEndpointTests.post(forwarded, to: port) == 202)
            // A replayed envelope is the same message: stored once.
            #expect(try await DIDCommEndpointTests.post(genuine, to: port) == 202)

            #expect(try await DIDCommEndpointTests.mailboxCount(server, tenant: aliceID) == before + 2)
            #expect(try await DIDCommEndpointTests.mailboxCount(server, tenant: bobID) == 0)
            let shown = try await Self.downloaded(alice)
            #expect(shown.map(\.content).sorted { ($0 ?? "") < ($1 ?? "") } == ["forwarded", "hello from your peer"])
            #expect(shown.allSatisfy { $0.sender == peer.did })
            #expect(!shown.contains { $0.content?.contains("SPOOFED") == true })

            // A connection that does not know its peer yet takes only handshake answers.
            let created = try await alice.call(
                "connections.createWithInvite", params: ["invitation": try DIDCommEndpointTests.deadInvitation()])
            let pending = try await alice.call("connections.connect", params: ["connectionId": created["connectionId"]!])
            let pendingKey = try #require(pending["pwVerkey"]?.stringValue)
            let early = try DIDCommEnvelope.pack(Self.basic("early-1", "before any handshake").serialized(), to: [pendingKey], from: .generate())
            #expect(try await DIDCommEndpointTests.post(early, to: port) == 400)
            #expect(try await DIDCommEndpointTests.mailboxCount(server, tenant: aliceID) == before + 2)
        }
    }

    /// The same against a real ACA-Py 1.2.7 peer: its messages arrive, shown with its DID; forged
    /// ones addressed to the same pairwise key do not.
    @Test func aRealPeerStillGetsThroughAndAForgerDoesNot() async throws {
        try await ACAPyConnectionTests.withAerieAndACAPy { server, agent in
            let created = try await agent.admin("POST", "/connections/create-invitation", body: [:])
            let url = try #require(created["invitation_url"]?.stringValue)
            let acapyConnection = try #require(created["connection_id"]?.stringValue)
            let (alice, _) = try await server.tenantClient(label: "alice")
            defer { Task { await alice.close() } }
            let accepted = try await alice.call("connections.accept", params: ["url": .string(url), "wait": true, "timeoutSeconds": 30])
            let pwVerkey = try #require(accepted["pwVerkey"]?.stringValue)
            let theirs = try await agent.waitForConnection(acapyConnection, states: ["active", "completed"])
            let acapyDid = try #require(theirs["my_did"]?.stringValue)

            let spoof = Self.basic("spoof-acapy", "SPOOFED: please send your passport")
            let anon = try DIDCommEnvelope.pack(spoof.serialized(), to: [pwVerkey], from: nil)
            let stranger = try DIDCommEnvelope.pack(spoof.serialized(), to: [pwVerkey], from: .generate())
            #expect(try await DIDCommEndpointTests.post(anon, to: server.didcommPort) == 400)
            #expect(try await DIDCommEndpointTests.post(stranger, to: server.didcommPort) == 400)
            _ = try await agent.admin("POST", "/connections/\(acapyConnection)/send-message", body: ["content": "hello from ACA-Py"])

            var shown: [(sender: String?, content: String?)] = []
            for _ in 0..<100 {
                shown = try await Self.downloaded(alice)
                if shown.contains(where: { $0.content == "hello from ACA-Py" }) { break }
                try await Task.sleep(for: .milliseconds(100))
            }
            let real = try #require(shown.first { $0.content == "hello from ACA-Py" }, "ACA-Py's message never arrived")
            #expect(real.sender == acapyDid)
            #expect(!shown.contains { $0.content?.contains("SPOOFED") == true })
        }
    }
}
