import AerieClient
import AerieCore
import AerieCrypto
import AerieTesting
import Foundation
import Testing

/// Connectionless exchanges (RFC 0434 invitations without `handshake_protocols`, RFC 0056
/// `~service`): the offer or proof request attached to the invitation is accepted with
/// `outOfBand.accept`, answered over the invitation's service, and the issuer's credential or the
/// verifier's ack comes back to the tenant through the `~service` on what we sent. Against ACA-Py
/// 1.2.7 (`--no-ledger`) as issuer and verifier, and a hand-made issuer for what ACA-Py cannot be
/// made to do (a stranger writing to the connectionless key).
@Suite(.serialized, .timeLimit(.minutes(10))) struct ConnectionlessTests {
    typealias Issuing = ACAPyIssueCredentialTests
    typealias Proving = PresentProofProvingTests

    /// An invitation of ACA-Py without handshake carrying `attachment` (`{id, type}` of a record).
    static func invitation(_ agent: ACAPyAgent, attaching id: String, type: String) async throws -> JSONValue {
        let created = try await agent.admin(
            "POST", "/out-of-band/create-invitation", body: ["attachments": [["id": .string(id), "type": .string(type)]]])
        let invitation = try #require(created["invitation"], "\(created)")
        try #require((invitation["handshake_protocols"]?.arrayValue ?? []).isEmpty, "ACA-Py offered a handshake: \(invitation)")
        return invitation
    }

    @Test func acapyIssuesAndVerifiesWithoutAConnection() async throws {
        try await ACAPyConnectionTests.withAerieAndACAPy { server, agent in
            let (tenant, _) = try await server.tenantClient(label: "connectionless holder")
            let (other, _) = try await server.tenantClient(label: "other holder")
            defer { Task { await tenant.close(); await other.close() } }

            // The offer: ACA-Py's create-offer attached to an invitation without handshake.
            let issuer = try await Issuing.issuerDid(agent)
            let created = try await agent.admin(
                "POST", "/issue-credential-2.0/create-offer",
                body: [
                    "auto_issue": true, "auto_remove": false,
                    "filter": [
                        "ld_proof": [
                            "credential": Proving.credential(issuer: issuer, name: "Bachelor of Connectionless"),
                            "options": ["proofType": "Ed25519Signature2018"],
                        ]
                    ],
                ])
            let offerRecord = try #require(created["cred_ex_id"]?.stringValue, "\(created)")
            let offerInvitation = try await Self.invitation(agent, attaching: offerRecord, type: "credential-offer")
            let accepted = try await tenant.call("outOfBand.accept", params: ["invitation": offerInvitation])
            #expect(accepted["row"] == 4, "\(accepted)")
            #expect(accepted["connection"]?["state"] == 4, "\(accepted)")

            let offer = try await Issuing.exchange(tenant, state: "offer-received")
            #expect(offer["connectionId"] == accepted["connection"]?["connectionId"])
            #expect(offer["parentThreadId"] == offerInvitation["@id"])
            _ = try await tenant.call("credentials.accept", params: ["offerId": try #require(offer["exchangeId"])])
            // ACA-Py's credential came back through our ~service, verified and stored; our ack reached ACA-Py.
            let done = try await Issuing.exchange(tenant, state: "done")
            let credentialId = try #require(done["credentialId"]?.stringValue)
            let stored = try await tenant.call("credentials.get", params: ["credentialId": .string(credentialId)])
            #expect(stored["issuer"]?.stringValue == issuer)
            #expect(stored["credential"]?["credentialSubject"]?["degree"]?["name"] == "Bachelor of Connectionless")
            _ = try await Issuing.acapyRecord(agent, offerRecord, state: "done")
            #expect(try await other.call("credentials.list", params: [:])["credentials"]?.arrayValue?.isEmpty == true)

            // The proof request: ACA-Py's create-request attached to another invitation without handshake.
            let definitionId = "6c0f3a1e-2b4d-4e5f-8a9b-0c1d2e3f4a51"
            let requested = try await agent.admin(
                "POST", "/present-proof-2.0/create-request",
                body: [
                    "auto_verify": true, "auto_remove": false,
                    "presentation_request": [
                        "dif": [
                            "options": ["challenge": "0b7e6f5d-4c3b-4a29-8187-6f5e4d3c2b1a", "domain": "connectionless.example"],
                            "presentation_definition": Proving.definition(id: definitionId),
                        ]
                    ],
                ])
            let presExId = try #require(requested["pres_ex_id"]?.stringValue, "\(requested)")
            let requestInvitation = try await Self.invitation(agent, attaching: presExId, type: "present-proof")
            _ = try await tenant.call("outOfBand.accept", params: ["invitation": requestInvitation])
            let requestId = try await Proving.request(tenant, definitionId: definitionId)
            let match = try await tenant.call("proofs.match", params: ["requestId": .string(requestId)])
            #expect(match["descriptors"]?.arrayValue?.first?["credentialIds"] == [.string(credentialId)], "\(match)")
            let presented = try await tenant.call("proofs.present", params: ["requestId": .string(requestId)])
            #expect(presented["state"] == "presentation-sent", "\(presented)")
            let verified = try await PresentProofACAPyTests.waitForRecord(agent, presExId, states: ["done", "abandoned"])
            #expect(verified["state"] == "done", "\(verified)")
            #expect(verified["verified"] == "true", "\(verified)")
            // ACA-Py's ack came back through our ~service.
            _ = try await Proving.waitForState(tenant, requestId, "done")
        }
    }

    /// What we send on a connectionless connection carries our `~service` and the invitation as
    /// `pthid`, and the issuer's answer to it is taken; a stranger writing to the same key (an
    /// offer of its own, authcrypted or anonymous) creates nothing.
    @Test func ourServiceGoesOutAndStrangersCreateNothing() async throws {
        try await LiveServer.with(server: { $0.outbound.allowPrivateURLs = true }) { server in
            let (tenant, _) = try await server.tenantClient(label: "connectionless holder")
            defer { Task { await tenant.close() } }
            let inbox = try await PeerInbox()
            defer { Task { await inbox.stop() } }
            let issuerKey = HandMadeIssuerTests.issuerKey
            let issuer = try DIDKey.did(verkey: issuerKey.verkey)
            let invitationId = "cl-invitation-1"
            let invitation: JSONValue = [
                "@type": "https://didcomm.org/out-of-band/1.1/invitation", "@id": .string(invitationId), "label": "Hand-made issuer",
                "services": [
                    [
                        "id": "#inline", "type": "did-communication",
                        "recipientKeys": [.string(try DIDKey.keyReference(verkey: inbox.key.verkey))],
                        "serviceEndpoint": .string(inbox.url),
                    ]
                ],
                "requests~attach": [
                    ["@id": "offer", "mime-type": "application/json", "data": ["json": HandMadeIssuerTests.offer(issuer: issuer, id: "cl-offer")]]
                ],
            ]
            let accepted = try await tenant.call("outOfBand.accept", params: ["invitation": invitation])
            #expect(accepted["row"] == 4, "\(accepted)")
            let ours = try #require(accepted["connection"]?["pwVerkey"]?.stringValue)
            let peer = TestPeer(
                connectionId: try #require(accepted["connection"]?["connectionId"]?.stringValue),
                pwDid: try #require(accepted["connection"]?["pwDid"]?.stringValue), pwVerkey: ours, key: inbox.key,
                did: try DIDKey.did(verkey: inbox.key.verkey))

            // A stranger's offers to the connectionless key: refused, no exchange.
            let strangerOffer = HandMadeIssuerTests.offer(issuer: issuer, id: "cl-stranger")
            #expect(try await DIDCommEndpointTests.post(try peer.forge(strangerOffer, from: .generate()), to: server.didcommPort) == 400)
            _ = try await DIDCommEndpointTests.post(try peer.forge(strangerOffer, from: nil), to: server.didcommPort)
            let offer = try await Issuing.exchange(tenant, state: "offer-received")
            #expect(offer["threadId"] == "cl-offer")

            _ = try await tenant.call("credentials.accept", params: ["offerId": try #require(offer["exchangeId"])])
            let request = try #require(
                try await inbox.wait { $0["@type"]?.stringValue?.hasSuffix("request-credential") == true }, "no request arrived")
            #expect(request.senderVerkey == ours)
            #expect(request.message["~service"]?["recipientKeys"] == [.string(ours)], "\(request.message)")
            #expect(request.message["~service"]?["routingKeys"] == [], "\(request.message)")
            #expect(request.message["~service"]?["serviceEndpoint"]?.stringValue?.hasPrefix("http") == true, "\(request.message)")
            #expect(request.message["~thread"]?["thid"] == "cl-offer")
            #expect(request.message["~thread"]?["pthid"] == .string(invitationId))

            // The issuer answers to our ~service key: verified, stored, acknowledged the same way.
            let detail = try #require(request.message["requests~attach"]?.arrayValue?.first?["data"]?["base64"]?.stringValue)
            let signed = try LinkedDataProofs.sign(
                try #require(try JSONValue(parsing: try Base64.decode(detail))["credential"]), suite: .ed25519Signature2018, key: issuerKey,
                verificationMethod: try DIDKey.keyReference(verkey: issuerKey.verkey), purpose: .assertionMethod, created: Date())
            #expect(try await DIDCommEndpointTests.post(try peer.pack(IssueCredentialWire.issue(signed, thread: "cl-offer")), to: server.didcommPort) == 202)
            let done = try await Issuing.exchange(tenant, state: "done")
            #expect(done["threadId"] == "cl-offer")
            let ack = try #require(try await inbox.wait { $0["@type"]?.stringValue?.hasSuffix("/ack") == true }, "no ack arrived")
            #expect(ack.message["~service"]?["recipientKeys"] == [.string(ours)])

            // Nothing but the invitation's own offer was ever recorded.
            let exchanges = try await tenant.call("credentials.exchanges", params: [:])["exchanges"]?.arrayValue ?? []
            #expect(exchanges.map { $0["threadId"] } == ["cl-offer"], "\(exchanges)")
            #expect(try await tenant.call("credentials.list", params: [:])["credentials"]?.arrayValue?.count == 1)
        }
    }

    /// A proposal without a subject is bound to a new did:key of the tenant; ACA-Py's offer in
    /// answer names it, and the credential is requested and issued to that same DID (RFC 0453
    /// T001.1 of the harness).
    @Test func aProposalBindsTheHolderAndTheCredentialIsIssuedToIt() async throws {
        try await ACAPyConnectionTests.withAerieAndACAPy { server, agent in
            let (tenant, _) = try await server.tenantClient(label: "proposer")
            defer { Task { await tenant.close() } }
            let issuer = try await Issuing.issuerDid(agent)
            let (theirConnection, ourConnection) = try await Issuing.connect(agent, tenant)
            let proposed = try await tenant.call(
                "credentials.propose",
                params: [
                    "connectionId": .string(ourConnection),
                    "detail": [
                        "credential": Proving.credential(issuer: issuer, name: "Bachelor of Proposals"),
                        "options": ["proofType": "Ed25519Signature2018"],
                    ],
                ])
            #expect(proposed["state"] == "proposal-sent", "\(proposed)")
            let holder = try #require(proposed["holderDid"]?.stringValue, "\(proposed)")
            #expect(holder.hasPrefix("did:key:z6Mk"))

            let record = try await Issuing.eventually("ACA-Py's proposal record") { () async throws -> String? in
                let records = try await agent.admin("GET", "/issue-credential-2.0/records?connection_id=\(theirConnection)")
                return (records["results"]?.arrayValue ?? []).first {
                    $0["cred_ex_record"]?["state"] == "proposal-received"
                }?["cred_ex_record"]?["cred_ex_id"]?.stringValue
            }
            _ = try await agent.admin("POST", "/issue-credential-2.0/records/\(record)/send-offer", body: [:])
            let offer = try await Issuing.exchange(tenant, state: "offer-received")
            #expect(offer["exchangeId"] == proposed["exchangeId"])
            #expect(offer["offer"]?["credential"]?["credentialSubject"]?["id"]?.stringValue == holder, "\(offer)")
            let requested = try await tenant.call("credentials.accept", params: ["offerId": try #require(offer["exchangeId"])])
            #expect(requested["holderDid"]?.stringValue == holder)
            _ = try await Issuing.acapyRecord(agent, record, state: "request-received")
            _ = try await agent.admin("POST", "/issue-credential-2.0/records/\(record)/issue", body: [:])
            let done = try await Issuing.exchange(tenant, state: "done")
            let stored = try await tenant.call("credentials.get", params: ["credentialId": try #require(done["credentialId"])])
            #expect(stored["subjectId"]?.stringValue == holder)
            #expect(stored["credential"]?["credentialSubject"]?["degree"]?["name"] == "Bachelor of Proposals")
        }
    }
}
