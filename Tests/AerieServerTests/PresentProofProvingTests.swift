import AerieClient
import AerieCore
import AerieTesting
import Foundation
import Testing

/// The whole prover path against ACA-Py 1.2.7 (`--no-ledger`) as issuer and verifier: ACA-Py
/// issues a JSON-LD credential to Aerie (the issue-credential plugin stores it), then asks for it
/// with a DIF definition; Aerie matches it from the real store, presents it signed by the
/// credential's holder did:key with ACA-Py's challenge and domain, and ACA-Py verifies it.
@Suite(.serialized, .timeLimit(.minutes(10))) struct PresentProofProvingTests {
    typealias Issuing = ACAPyIssueCredentialTests

    static func definition(id: String, suite: String = "Ed25519Signature2018", pattern: String = "^Bachelor") -> JSONValue {
        [
            "id": .string(id), "format": ["ldp_vp": ["proof_type": [.string(suite)]]],
            "input_descriptors": [
                [
                    "id": "degree", "name": "A degree",
                    "schema": [
                        ["uri": "https://www.w3.org/2018/credentials#VerifiableCredential"],
                        ["uri": "https://example.org/examples#UniversityDegreeCredential"],
                    ],
                    "constraints": [
                        "fields": [["path": ["$.credentialSubject.degree.name"], "filter": ["type": "string", "pattern": .string(pattern)]]]
                    ],
                ]
            ],
        ]
    }

    /// A degree whose terms an inline vocabulary defines: the agents run offline, and ACA-Py
    /// caches no examples context.
    static func credential(issuer: String, name: String) -> JSONValue {
        [
            "@context": ["https://www.w3.org/2018/credentials/v1", ["@vocab": "https://example.org/examples#"]],
            "type": ["VerifiableCredential", "UniversityDegreeCredential"], "issuer": .string(issuer),
            "issuanceDate": "2024-01-01T00:00:00Z",
            "credentialSubject": ["degree": ["type": "BachelorDegree", "name": .string(name)]],
        ]
    }

    /// ACA-Py offers a degree over `connection`; the tenant accepts; answers the stored credential's id.
    static func issue(_ agent: ACAPyAgent, to tenant: AerieClient, connection: String, name: String) async throws -> String {
        let issuer = try await Issuing.issuerDid(agent)
        _ = try await agent.admin(
            "POST", "/issue-credential-2.0/send-offer",
            body: [
                "connection_id": .string(connection), "auto_issue": true, "auto_remove": false,
                "filter": ["ld_proof": ["credential": Self.credential(issuer: issuer, name: name), "options": ["proofType": "Ed25519Signature2018"]]],
            ])
        let offer = try await Issuing.exchange(tenant, state: "offer-received")
        _ = try await tenant.call("credentials.accept", params: ["offerId": try #require(offer["exchangeId"])])
        let done = try await Issuing.exchange(tenant, state: "done")
        return try #require(done["credentialId"]?.stringValue)
    }

    static func request(_ tenant: AerieClient, definitionId: String) async throws -> String {
        let request = try await PresentProofACAPyTests.waitForRequest(tenant, definitionId: definitionId)
        return try #require(request["requestId"]?.stringValue)
    }

    static func waitForState(_ tenant: AerieClient, _ requestId: String, _ state: String) async throws -> JSONValue {
        try await Issuing.eventually("proof request \(requestId) in \(state)") {
            let view = try await tenant.call("proofs.get", params: ["requestId": .string(requestId)])
            // Not `cond ? view : nil`: JSONValue takes `nil` as `.null`, which would end the wait.
            guard view["state"] == .string(state) else { return nil }
            return view
        }
    }

    @Test func aerieProvesACredentialACAPyIssuedAndACAPyVerifiesIt() async throws {
        try await ACAPyConnectionTests.withAerieAndACAPy { server, agent in
            let (alice, _) = try await server.tenantClient(label: "alice")
            let (bob, _) = try await server.tenantClient(label: "bob")
            defer { Task { await alice.close(); await bob.close() } }
            let (aliceConnection, _) = try await Issuing.connect(agent, alice)
            let (bobConnection, _) = try await Issuing.connect(agent, bob)
            let credentialId = try await Self.issue(agent, to: alice, connection: aliceConnection, name: "Bachelor of Science")

            // Matched from the store, presented, verified by ACA-Py, acknowledged.
            let presExId = try await PresentProofACAPyTests.sendRequest(
                agent, connection: aliceConnection, definition: Self.definition(id: "0f1c9d2e-1a2b-4c3d-8e4f-5a6b7c8d9e01"))
            let requestId = try await Self.request(alice, definitionId: "0f1c9d2e-1a2b-4c3d-8e4f-5a6b7c8d9e01")
            let match = try await alice.call("proofs.match", params: ["requestId": .string(requestId)])
            #expect(match["satisfiable"] == true, "\(match)")
            #expect(match["descriptors"]?.arrayValue?.first?["credentialIds"] == [.string(credentialId)], "\(match)")
            let presented = try await alice.call("proofs.present", params: ["requestId": .string(requestId)])
            #expect(presented["state"] == "presentation-sent", "\(presented)")
            let stored = try await alice.call("credentials.get", params: ["credentialId": .string(credentialId)])
            #expect(presented["holderDid"] == stored["subjectId"], "\(presented) \(stored)")
            let verified = try await PresentProofACAPyTests.waitForRecord(agent, presExId, states: ["done", "abandoned"])
            #expect(verified["state"] == "done", "\(verified)")
            #expect(verified["verified"] == "true", "\(verified)")
            _ = try await Self.waitForState(alice, requestId, "done")

            // Bob holds nothing: Alice's credential never answers Bob's request.
            let bobPresExId = try await PresentProofACAPyTests.sendRequest(
                agent, connection: bobConnection, definition: Self.definition(id: "0f1c9d2e-1a2b-4c3d-8e4f-5a6b7c8d9e02"))
            let bobRequestId = try await Self.request(bob, definitionId: "0f1c9d2e-1a2b-4c3d-8e4f-5a6b7c8d9e02")
            let bobMatch = try await bob.call("proofs.match", params: ["requestId": .string(bobRequestId)])
            #expect(bobMatch["satisfiable"] == false)
            #expect(bobMatch["descriptors"]?.arrayValue?.first?["unmetReason"] == "no credential is held", "\(bobMatch)")
            let selectingAlices = await #expect(throws: AerieClientError.self) {
                _ = try await bob.call(
                    "proofs.present", params: ["requestId": .string(bobRequestId), "selection": ["degree": .string(credentialId)]])
            }
            #expect(selectingAlices?.data?["code"] == "invalid_params")
            #expect(try await bob.call("proofs.present", params: ["requestId": .string(bobRequestId)])["state"] == "abandoned")
            _ = try await PresentProofACAPyTests.waitForRecord(agent, bobPresExId, states: ["abandoned"])

            // A definition the credential does not satisfy: proofs.match says why; presenting
            // answers with a problem report.
            let strictExId = try await PresentProofACAPyTests.sendRequest(
                agent, connection: aliceConnection, definition: Self.definition(id: "0f1c9d2e-1a2b-4c3d-8e4f-5a6b7c8d9e03", pattern: "^Master"))
            let strictId = try await Self.request(alice, definitionId: "0f1c9d2e-1a2b-4c3d-8e4f-5a6b7c8d9e03")
            let why = try await alice.call("proofs.match", params: ["requestId": .string(strictId)])
            #expect(why["satisfiable"] == false)
            let reason = why["descriptors"]?.arrayValue?.first?["rejected"]?.arrayValue?.first?["reason"]?.stringValue
            #expect(reason == "field 0 at $.credentialSubject.degree.name does not match the pattern", "\(why)")
            #expect(try await alice.call("proofs.present", params: ["requestId": .string(strictId)])["state"] == "abandoned")
            let abandoned = try await PresentProofACAPyTests.waitForRecord(agent, strictExId, states: ["abandoned"])
            #expect(abandoned["error_msg"]?.stringValue?.contains("not met") == true, "\(abandoned)")
        }
    }

    /// A proof request attached to ACA-Py's out-of-band invitation (seed 004 with a handshake):
    /// recorded on the new connection under the invitation, answered with Ed25519Signature2020 as
    /// the definition asks, verified by ACA-Py.
    @Test func aRequestAttachedToAnOutOfBandInvitationIsAnswered() async throws {
        try await ACAPyConnectionTests.withAerieAndACAPy { server, agent in
            let (alice, _) = try await server.tenantClient(label: "oob prover")
            defer { Task { await alice.close() } }
            let (connection, _) = try await Issuing.connect(agent, alice)
            _ = try await Self.issue(agent, to: alice, connection: connection, name: "Bachelor of Arts")

            let created = try await agent.admin(
                "POST", "/present-proof-2.0/create-request",
                body: [
                    "auto_verify": true, "auto_remove": false,
                    "presentation_request": [
                        "dif": [
                            "options": ["challenge": "7d3c1f2e-5b6a-4c8d-9e0f-1a2b3c4d5e6f", "domain": "verifier.example"],
                            "presentation_definition": Self.definition(id: "0f1c9d2e-1a2b-4c3d-8e4f-5a6b7c8d9e04", suite: "Ed25519Signature2020"),
                        ]
                    ],
                ])
            let presExId = try #require(created["pres_ex_id"]?.stringValue, "\(created)")
            let invitation = try await agent.admin(
                "POST", "/out-of-band/create-invitation",
                body: [
                    "handshake_protocols": ["https://didcomm.org/connections/1.0"],
                    "attachments": [["id": .string(presExId), "type": "present-proof"]],
                ])
            let accepted = try await alice.call(
                "outOfBand.accept", params: ["invitation": try #require(invitation["invitation"]), "timeoutSeconds": 30])
            let request = try await PresentProofACAPyTests.waitForRequest(alice, definitionId: "0f1c9d2e-1a2b-4c3d-8e4f-5a6b7c8d9e04")
            #expect(request["connectionId"] == accepted["connection"]?["connectionId"], "\(request) \(accepted)")
            #expect(request["parentThreadId"] == invitation["invitation"]?["@id"])
            #expect(request["proofType"] == "Ed25519Signature2020")
            #expect(request["challenge"] == "7d3c1f2e-5b6a-4c8d-9e0f-1a2b3c4d5e6f")
            let requestId = try #require(request["requestId"]?.stringValue)
            _ = try await alice.call("proofs.present", params: ["requestId": .string(requestId)])
            let verified = try await PresentProofACAPyTests.waitForRecord(agent, presExId, states: ["done", "abandoned"])
            #expect(verified["state"] == "done", "\(verified)")
            #expect(verified["verified"] == "true", "\(verified)")
        }
    }
}
