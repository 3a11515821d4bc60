import AerieClient
import AerieCore
import AerieCrypto
import AerieTesting
import Foundation
import Testing

/// Issue 13 item 1 against a live server: a message addressed to a pairwise key counts only when
/// authcrypted by the key the connection expects; anything else is refused (400) and nothing is
/// stored. Two tenants: the refusals never touch the other one.
@Suite(.timeLimit(.minutes(10))) struct HandshakeSenderTests {
    static let basicMessage = "https://didcomm.org/basicmessage/1.0/message"

    static func envelope(_ message: JSONValue, to verkey: String, from sender: Ed25519KeyPair?) throws -> [UInt8] {
        try DIDCommEnvelope.pack(message.serialized(), to: [verkey], from: sender)
    }

    static func message(_ id: String, content: String = "hello") -> JSONValue {
        ["@type": .string(basicMessage), "@id": .string(id), "content": .string(content), "sent_time": "2026-11-23T00:00:00Z"]
    }

    @Test func onlyThePeersKeyIsAcceptedOnAnEstablishedConnection() async throws {
        try await LiveServer.with(server: { $0.outbound.allowPrivateURLs = true; $0.delivery.enabled = false }) { server in
            let (alice, aliceID) = try await server.tenantClient(label: "alice")
            let (bob, bobID) = try await server.tenantClient(label: "bob")
            defer { Task { await alice.close(); await bob.close() } }
            let connection = try await MessagesMailboxTests.connect(alice, on: server)
            let port = server.didcommPort
            let stranger = try Ed25519KeyPair(seed: Random.bytes(32))

            // Anoncrypt to the pairwise key: refused, nothing stored.
            let anon = try Self.envelope(Self.message("spoof-1", content: "SPOOFED"), to: connection.pwVerkey, from: nil)
            #expect(try await DIDCommEndpointTests.post(anon, to: port) == 400)
            // Authcrypt from a stranger's key: refused, nothing stored.
            let forged = try Self.envelope(Self.message("spoof-2", content: "SPOOFED"), to: connection.pwVerkey, from: stranger)
            #expect(try await DIDCommEndpointTests.post(forged, to: port) == 400)
            #expect(try await DIDCommEndpointTests.mailboxCount(server, tenant: aliceID) == 0)

            // The peer's own key: accepted; the same envelope replayed is a no-op (exactly-once
            // by recipient key and @id), and a stranger reusing the peer's @id changes nothing.
            let genuine = try Self.envelope(Self.message("m-1"), to: connection.pwVerkey, from: connection.peer)
            #expect(try await DIDCommEndpointTests.post(genuine, to: port) == 202)
            #expect(try await DIDCommEndpointTests.post(genuine, to: port) == 202)
            let sameId = try Self.envelope(Self.message("m-1", content: "SPOOFED"), to: connection.pwVerkey, from: stranger)
            #expect(try await DIDCommEndpointTests.post(sameId, to: port) == 400)
            #expect(try await DIDCommEndpointTests.mailboxCount(server, tenant: aliceID) == 1)
            let download = try await alice.call("messages.download")
            #expect(try MessagesMailboxTests.ids(download) == ["\(connection.pwDid):m-1"])
            let first = download.arrayValue?.first?["msgs"]?.arrayValue?.first
            let payload = try #require(first?["decryptedPayload"]?.stringValue)
            #expect(!payload.contains("SPOOFED"))

            // Bob's connection does not take Alice's peer either; Bob's mailbox stays empty.
            let bobs = try await MessagesMailboxTests.connect(bob, on: server)
            let crossed = try Self.envelope(Self.message("x-1"), to: bobs.pwVerkey, from: connection.peer)
            #expect(try await DIDCommEndpointTests.post(crossed, to: port) == 400)
            #expect(try await DIDCommEndpointTests.mailboxCount(server, tenant: bobID) == 0)
        }
    }

    @Test func duringTheHandshakeOnlyTheKeysItAllows() async throws {
        try await LiveServer.with(server: { $0.outbound.allowPrivateURLs = true; $0.delivery.enabled = false }) { server in
            let (alice, aliceID) = try await server.tenantClient(label: "alice")
            let (bob, bobID) = try await server.tenantClient(label: "bob")
            defer { Task { await alice.close(); await bob.close() } }
            let inviter = try Ed25519KeyPair(seed: Random.bytes(32))
            let invitation: JSONValue = [
                "@type": "https://didcomm.org/connections/1.0/invitation", "@id": .string(UUID().uuidString), "label": "Inviter",
                "recipientKeys": .array([.string(inviter.verkeyBase58)]), "serviceEndpoint": "http://127.0.0.1:9/",
            ]
            let created = try await alice.call("connections.createWithInvite", params: ["invitation": invitation])
            let id = try #require(created["connectionId"]?.stringValue)
            let pwVerkey = try #require(
                try await alice.call("connections.connect", params: ["connectionId": .string(id)])["pwVerkey"]?.stringValue)
            let port = server.didcommPort
            let stranger = try Ed25519KeyPair(seed: Random.bytes(32))
            let peer = try Ed25519KeyPair(seed: Random.bytes(32))
            func state() async throws -> String? {
                try await alice.call("connections.get", params: ["connectionId": .string(id)])["stateName"]?.stringValue
            }

            // A problem report from a stranger cannot fail the connection; nor can a basic message
            // arrive before the peer's key is known.
            let report: JSONValue = [
                "@type": "https://didcomm.org/connections/1.0/problem_report", "@id": "pr-1",
                "problem-code": "request_not_accepted", "explain": "forged",
            ]
            #expect(try await DIDCommEndpointTests.post(try Self.envelope(report, to: pwVerkey, from: stranger), to: port) == 400)
            #expect(try await DIDCommEndpointTests.post(try Self.envelope(report, to: pwVerkey, from: nil), to: port) == 400)
            #expect(try await DIDCommEndpointTests.post(try Self.envelope(Self.message("early"), to: pwVerkey, from: inviter), to: port) == 400)
            #expect(try await state() == "requested")

            // The inviter's signed Response replayed from a stranger's key: refused, nothing stored.
            let did = KeyReference.unqualifiedDID(verkey: peer.verkey)
            let qualified = "did:sov:\(did)"
            let doc: JSONValue = [
                "@context": "https://w3id.org/did/v1", "id": .string(qualified),
                "publicKey": [["id": .string("\(qualified)#1"), "type": "Ed25519VerificationKey2018",
                               "controller": .string(qualified), "publicKeyBase58": .string(peer.verkeyBase58)]],
                "authentication": [["type": "Ed25519SignatureAuthentication2018", "publicKey": .string("\(qualified)#1")]],
                "service": [["id": .string("\(qualified);indy"), "type": "IndyAgent", "priority": 0,
                             "recipientKeys": [.string(peer.verkeyBase58)], "routingKeys": [], "serviceEndpoint": "http://127.0.0.1:9/"]],
            ]
            let response: JSONValue = [
                "@type": "https://didcomm.org/connections/1.0/response", "@id": "resp-1",
                "connection~sig": try SignatureDecorator.sign(["DID": .string(did), "DIDDoc": doc], with: inviter).json,
            ]
            #expect(try await DIDCommEndpointTests.post(try Self.envelope(response, to: pwVerkey, from: stranger), to: port) == 400)
            #expect(try await DIDCommEndpointTests.post(try Self.envelope(response, to: pwVerkey, from: nil), to: port) == 400)
            #expect(try await state() == "requested")
            #expect(try await DIDCommEndpointTests.mailboxCount(server, tenant: aliceID) == 0)

            // From the key the signed connection names: accepted; that key is the peer's from now on.
            #expect(try await DIDCommEndpointTests.post(try Self.envelope(response, to: pwVerkey, from: peer), to: port) == 202)
            #expect(try await state() == "accepted")
            #expect(try await DIDCommEndpointTests.post(try Self.envelope(Self.message("m-1"), to: pwVerkey, from: peer), to: port) == 202)
            #expect(try await DIDCommEndpointTests.post(try Self.envelope(Self.message("m-2"), to: pwVerkey, from: inviter), to: port) == 400)
            #expect(try await DIDCommEndpointTests.mailboxCount(server, tenant: aliceID) == 2)
            #expect(try await DIDCommEndpointTests.mailboxCount(server, tenant: bobID) == 0)
        }
    }

    @Test func aProblemReportFromTheInvitationKeyFailsTheHandshake() async throws {
        try await LiveServer.with(server: { $0.outbound.allowPrivateURLs = true; $0.delivery.enabled = false }) { server in
            let (alice, _) = try await server.tenantClient(label: "alice")
            defer { Task { await alice.close() } }
            let inviter = try Ed25519KeyPair(seed: Random.bytes(32))
            let invitation: JSONValue = [
                "@type": "https://didcomm.org/connections/1.0/invitation", "@id": .string(UUID().uuidString), "label": "Inviter",
                "recipientKeys": .array([.string(inviter.verkeyBase58)]), "serviceEndpoint": "http://127.0.0.1:9/",
            ]
            let created = try await alice.call("connections.createWithInvite", params: ["invitation": invitation])
            let id = try #require(created["connectionId"]?.stringValue)
            let pwVerkey = try #require(
                try await alice.call("connections.connect", params: ["connectionId": .string(id)])["pwVerkey"]?.stringValue)
            // ACA-Py packs a problem report about a request with the key the request went to.
            let report: JSONValue = [
                "@type": "https://didcomm.org/connections/1.0/problem_report", "@id": "pr-1",
                "problem-code": "request_not_accepted", "explain": "no thanks",
            ]
            #expect(try await DIDCommEndpointTests.post(
                try Self.envelope(report, to: pwVerkey, from: inviter), to: server.didcommPort) == 202)
            #expect(try await alice.call("connections.get", params: ["connectionId": .string(id)])["stateName"] == "failed")
        }
    }
}
