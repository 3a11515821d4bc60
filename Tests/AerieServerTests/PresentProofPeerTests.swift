import AerieClient
import AerieCore
import AerieCrypto
import AerieTesting
import Foundation
import Testing

/// Present-proof 2.0 requests on the real server and a real PostgreSQL, from a raw peer that
/// packs what it likes: a request is recorded only from the connection's peer, a malformed or
/// oversized one is answered with a problem report and stores nothing, a declined one tells the
/// verifier, a second tenant sees none of it, and deleting the connection deletes its requests.
@Suite(.serialized, .timeLimit(.minutes(10))) struct PresentProofPeerTests {
    /// As ACA-Py 1.2.7's `/present-proof-2.0/send-request` shapes a DIF request.
    static func request(id: String, definition: JSONValue, challenge: String = "challenge-1") -> JSONValue {
        [
            "@type": "https://didcomm.org/present-proof/2.0/request-presentation", "@id": .string(id), "will_confirm": true,
            "formats": [["attach_id": "dif", "format": "dif/presentation-exchange/definitions@v1.0"]],
            "request_presentations~attach": [
                [
                    "@id": "dif", "mime-type": "application/json",
                    "data": ["json": ["options": ["challenge": .string(challenge), "domain": "4jt78h47fh47"], "presentation_definition": definition]],
                ]
            ],
        ]
    }

    static let definition: JSONValue = [
        "id": "32f54163-7166-48f1-93d8-ff217bdb0653",
        "format": ["ldp_vp": ["proof_type": ["Ed25519Signature2018"]]],
        "input_descriptors": [
            [
                "id": "citizenship_input_1", "name": "EU Driver's License",
                "schema": [["uri": "https://www.w3.org/2018/credentials#VerifiableCredential"], ["uri": "https://w3id.org/citizenship#PermanentResident"]],
                "constraints": [
                    "fields": [["path": ["$.credentialSubject.givenName"], "purpose": "The claim must be from one of the specified issuers", "filter": ["type": "string"]]]
                ],
            ]
        ],
    ]

    static func requests(_ client: AerieClient) async throws -> [JSONValue] {
        guard case .array(let items)? = try await client.call("proofs.list")["requests"] else { return [] }
        return items
    }

    static func waitForRequest(_ client: AerieClient, thread: String) async throws -> JSONValue? {
        let deadline = ContinuousClock.now + .seconds(15)
        while ContinuousClock.now < deadline {
            if let found = try await requests(client).first(where: { $0["threadId"] == .string(thread) }) { return found }
            try await Task.sleep(for: .milliseconds(50))
        }
        return nil
    }

    @Test func requestsAreRecordedFromThePeerOnlyAndBadOnesAnsweredWithAProblemReport() async throws {
        let inbox = try await PeerInbox()
        defer { Task { await inbox.stop() } }
        try await LiveServer.with(server: { $0.outbound.allowPrivateURLs = true }) { server in
            let (alice, _) = try await server.tenantClient(label: "alice")
            let (bob, _) = try await server.tenantClient(label: "bob")
            defer { Task { await alice.close(); await bob.close() } }
            let peer = try await TestPeer.connect(alice, endpoint: inbox.url, key: inbox.key)
            let port = server.didcommPort
            let aliceSeen = MessagesPushTests.Collector(alice)
            let bobSeen = MessagesPushTests.Collector(bob)
            _ = try await alice.call("messages.subscribe")
            _ = try await bob.call("messages.subscribe")

            // A stranger (a key that is not the connection's peer, or anoncrypt) is refused at the endpoint.
            let strangers = Self.request(id: "req-stranger", definition: Self.definition)
            #expect(try await DIDCommEndpointTests.post(try peer.forge(strangers, from: .generate()), to: port) == 400)
            #expect(try await DIDCommEndpointTests.post(try peer.forge(strangers, from: nil), to: port) == 400)

            // Malformed and oversized definitions: a problem report on their thread, no request stored.
            let lookaround: JSONValue = [
                "id": "pd", "input_descriptors": [["id": "d", "constraints": ["fields": [["path": ["$.a"], "filter": ["pattern": "(?=a)a"]]]]]],
            ]
            let manyDescriptors: JSONValue = ["id": "pd", "input_descriptors": .array((0..<100).map { .object(["id": .string("d\($0)")]) })]
            let bbs: JSONValue = [
                "id": "pd", "format": ["ldp_vp": ["proof_type": ["BbsBlsSignature2020"]]], "input_descriptors": [["id": "d"]],
            ]
            let megabyte = Self.request(id: "req-huge", definition: ["id": .string(String(repeating: "x", count: 1_000_000))])
            let bad: [(String, JSONValue, String)] = [
                ("req-lookaround", Self.request(id: "req-lookaround", definition: lookaround), "malformed-message"),
                ("req-many", Self.request(id: "req-many", definition: manyDescriptors), "malformed-message"),
                ("req-bbs", Self.request(id: "req-bbs", definition: bbs), "unsupported-format"),
            ]
            for (thread, message, code) in bad {
                #expect(try await DIDCommEndpointTests.post(try peer.pack(message), to: port) == 202, "\(thread)")
                let report = try #require(try await inbox.wait { $0["~thread"]?["thid"] == .string(thread) }, "no report for \(thread)")
                #expect(report.message["@type"] == "https://didcomm.org/present-proof/2.0/problem-report")
                #expect(report.message["description"]?["code"] == .string(code), "\(thread)")
            }
            // A megabyte of request is refused before it is read (the endpoint's size bound) or answered as malformed.
            let hugeStatus = try await DIDCommEndpointTests.post(try peer.pack(megabyte), to: port)
            #expect(hugeStatus == 413 || hugeStatus == 202 || hugeStatus == 400, "\(hugeStatus)")

            // A good request is recorded, with what the verifier asked.
            #expect(try await DIDCommEndpointTests.post(try peer.pack(Self.request(id: "req-1", definition: Self.definition)), to: port) == 202)
            let recorded = try #require(try await Self.waitForRequest(alice, thread: "req-1"))
            #expect(recorded["state"] == "request-received")
            #expect(recorded["connectionId"] == .string(peer.connectionId))
            #expect(recorded["challenge"] == "challenge-1")
            #expect(recorded["domain"] == "4jt78h47fh47")
            #expect(recorded["proofType"] == "Ed25519Signature2018")
            #expect(recorded["presentationDefinition"] == Self.definition)
            let listed = try await Self.requests(alice)
            #expect(listed.count == 1, "only the good request is stored: \(listed)")
            let requestId = try #require(recorded["requestId"]?.stringValue)
            #expect(try await alice.call("proofs.get", params: ["requestId": .string(requestId)]) == recorded)
            // The same envelope again (a redelivery) records nothing more.
            #expect(try await DIDCommEndpointTests.post(try peer.pack(Self.request(id: "req-1", definition: Self.definition)), to: port) == 202)
            try await Task.sleep(for: .milliseconds(300))
            #expect(try await Self.requests(alice).count == 1)

            // Bob, another tenant, sees none of it and cannot act on it.
            #expect(try await Self.requests(bob).isEmpty)
            for method in ["proofs.get", "proofs.decline", "proofs.present"] {
                let error = await #expect(throws: AerieClientError.self) {
                    _ = try await bob.call(method, params: ["requestId": .string(requestId)])
                }
                #expect(error?.data?["code"] == "not_found", "\(method)")
            }

            // Declined: the verifier gets a problem report on the request's thread.
            let declined = try await alice.call("proofs.decline", params: ["requestId": .string(requestId), "reason": "not today"])
            #expect(declined["state"] == "abandoned")
            #expect(declined["problem"] == "not today")
            let report = try #require(try await inbox.wait {
                $0["~thread"]?["thid"] == "req-1" && $0["@type"] == "https://didcomm.org/present-proof/2.0/problem-report"
            })
            // Every state change is pushed to the tenant's subscribed sessions, and only to them.
            let changes = try await aliceSeen.wait(for: "proofs.stateChanged", count: 2)
            #expect(changes.map { $0.params["state"] } == ["request-received", "abandoned"])
            #expect(changes.allSatisfy { $0.params["requestId"] == .string(requestId) })
            #expect(changes.allSatisfy { $0.params["connectionId"] == .string(peer.connectionId) })
            #expect(bobSeen.all("proofs.stateChanged").isEmpty)
            #expect(report.message["description"] == ["en": "not today", "code": "presentation-abandoned"])
            #expect(report.senderVerkey == peer.pwVerkey)
            let again = await #expect(throws: AerieClientError.self) {
                _ = try await alice.call("proofs.decline", params: ["requestId": .string(requestId)])
            }
            #expect(again?.data?["code"] == "conflict")
            for bad: JSONValue in [["requestId": "nope"], ["requestId": .string(requestId), "reason": .string(String(repeating: "x", count: 2000))]] {
                let error = await #expect(throws: AerieClientError.self) { _ = try await alice.call("proofs.decline", params: bad) }
                #expect(error?.data?["code"] == "invalid_params")
            }

            // Deleting the connection deletes its requests.
            _ = try await alice.call("connections.delete", params: ["connectionId": .string(peer.connectionId)])
            #expect(try await Self.requests(alice).isEmpty)
        }
    }
}
