import AerieClient
import AerieCore
import AerieCrypto
import AerieTesting
import Foundation
import Testing

/// did:peer:1 on the real server and a real PostgreSQL: a hand-made requester (Credo's shape: its
/// genesis document attached to a didexchange 1.1 Request, the DID its hash) connects to a
/// tenant's invitation and messages flow both ways; the same Request with a document that is not
/// the DID's (another endpoint), or with none, is refused with a 400 and nothing is stored.
/// Neither ACA-Py 1.2.7 nor 1.7.0 makes a did:peer:1 (they resolve one from a stored document
/// only), so the peer is made here.
@Suite(.serialized, .timeLimit(.minutes(5))) struct PeerDID1LiveTests {
    /// A genesis document for `verkey` and `endpoint`, as Credo writes it: (stored variant, DID,
    /// resolved variant with the `id` second).
    static func genesis(verkey: String, endpoint: String) -> (stored: String, did: String, resolved: String) {
        let service = ##""service":[{"id":"#inline-0","serviceEndpoint":"\##(endpoint)","type":"did-communication","priority":0,"recipientKeys":["#key-1"],"routingKeys":[]}]"##
        let key = ##""verificationMethod":[{"id":"#key-1","type":"Ed25519VerificationKey2018","controller":"#id","publicKeyBase58":"\##(verkey)"}],"authentication":["#key-1"]"##
        let context = #""@context":["https://w3id.org/did/v1"]"#
        let stored = "{\(context),\(service),\(key)}"
        let did = PeerDID1.did(storedVariant: Array(stored.utf8))
        return (stored, did, "{\(context),\"id\":\"\(did)\",\(service),\(key)}")
    }

    static func request(did: String, document: String?, invitationId: String) -> (id: String, message: JSONValue) {
        let id = UUID().uuidString.lowercased()
        var fields: [String: JSONValue] = [
            "@type": "https://didcomm.org/didexchange/1.1/request", "@id": .string(id), "label": "Credo-shaped",
            "did": .string(did), "~thread": ["thid": .string(id), "pthid": .string(invitationId)],
        ]
        if let document {
            fields["did_doc~attach"] = [
                "@id": "doc", "mime-type": "application/json", "data": ["base64": .string(Base64.encode(Array(document.utf8)))],
            ]
        }
        return (id, .object(fields))
    }

    @Test func aDIDPeer1RequesterConnectsAndAForgedDocumentIsRefused() async throws {
        let inbox = try await PeerInbox()
        defer { Task { await inbox.stop() } }
        try await LiveServer.with(server: { $0.outbound.allowPrivateURLs = true }) { server in
            let (alice, aliceID) = try await server.tenantClient(label: "alice")
            defer { Task { await alice.close() } }
            let created = try await alice.call("outOfBand.createInvitation")
            let invitationId = try #require(created["invitation"]?["@id"]?.stringValue)
            let key = try #require(created["invitation"]?["services"]?.arrayValue?.first?["recipientKeys"]?.arrayValue?.first?.stringValue)
            let invitationKey = Base58.encode(try DIDKey.verkey(from: key))
            let port = server.didcommPort

            // Refused: a document that is not the DID's (its endpoint changed after hashing), a
            // DID without its document, a document of another DID. Nothing stored.
            let mine = Self.genesis(verkey: inbox.key.verkeyBase58, endpoint: inbox.url)
            let before = try await DIDCommEndpointTests.mailboxCount(server, tenant: aliceID)
            let other = Self.genesis(verkey: inbox.key.verkeyBase58, endpoint: "http://127.0.0.1:9")
            for (did, document) in [
                (mine.did, mine.resolved.replacingOccurrences(of: inbox.url, with: "http://127.0.0.1:9")),
                (mine.did, nil), (mine.did, other.resolved), (mine.did, other.stored),
            ] {
                let request = Self.request(did: did, document: document, invitationId: invitationId).message
                let packed = try DIDCommEnvelope.pack(request.serialized(), to: [invitationKey], from: inbox.key)
                #expect(try await DIDCommEndpointTests.post(packed, to: port) == 400, "\(document?.prefix(80) ?? "no document")")
            }
            #expect(try await DIDCommEndpointTests.mailboxCount(server, tenant: aliceID) == before)
            #expect(try await alice.call("connections.list")["connections"]?.arrayValue?.count == 1, "only the invitation")

            // The DID with its own document: answered, completed, messages both ways.
            let (threadId, request) = Self.request(did: mine.did, document: mine.resolved, invitationId: invitationId)
            let packed = try DIDCommEnvelope.pack(request.serialized(), to: [invitationKey], from: inbox.key)
            #expect(try await DIDCommEndpointTests.post(packed, to: port) == 202)
            let response = try #require(
                try await inbox.wait { $0["@type"] == "https://didcomm.org/didexchange/1.1/response" }, "no response")
            #expect(response.message["~thread"]?["thid"] == .string(threadId))
            let ours = try #require(response.senderVerkey)
            let complete: JSONValue = [
                "@type": "https://didcomm.org/didexchange/1.1/complete", "@id": "c-1",
                "~thread": ["thid": .string(threadId), "pthid": .string(invitationId)],
            ]
            let completePacked = try DIDCommEnvelope.pack(complete.serialized(), to: [ours], from: inbox.key)
            #expect(try await DIDCommEndpointTests.post(completePacked, to: port) == 202)

            var connection = JSONValue.null
            for _ in 0..<200 {
                let list = try await alice.call("connections.list")["connections"]?.arrayValue ?? []
                if let found = list.first(where: { $0["theirDid"] == .string(mine.did) }), found["state"] == 4 {
                    connection = found
                    break
                }
                try await Task.sleep(for: .milliseconds(50))
            }
            #expect(connection["state"] == 4, "\(connection)")
            #expect(connection["theirVerkey"] == .string(inbox.key.verkeyBase58))
            #expect(connection["theirEndpoint"] == .string(inbox.url))
            let connectionId = try #require(connection["connectionId"]?.stringValue)

            _ = try await alice.call("messages.sendText", params: ["connectionId": .string(connectionId), "content": "to did:peer:1"])
            let text = try #require(try await inbox.wait { $0["content"] == "to did:peer:1" })
            #expect(text.senderVerkey == ours)
            let hello: JSONValue = ["@type": "https://didcomm.org/basicmessage/1.0/message", "@id": "m-1", "content": "from did:peer:1"]
            #expect(try await DIDCommEndpointTests.post(try DIDCommEnvelope.pack(hello.serialized(), to: [ours], from: inbox.key), to: port) == 202)
            #expect(try await DIDRotateTests.received("from did:peer:1", by: alice) != nil)
        }
    }
}
