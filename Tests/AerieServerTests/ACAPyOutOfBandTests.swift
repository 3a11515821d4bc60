import AerieClient
import AerieCore
import AerieCrypto
import AerieTesting
import Foundation
import Testing

/// RFC 0434 against an independent inviter: ACA-Py 1.2.7 creates out-of-band invitations, Aerie
/// runs seed 004's table through `outOfBand.accept`, and ACA-Py's own records are checked after.
@Suite(.serialized, .timeLimit(.minutes(10))) struct ACAPyOutOfBandTests {
    /// Row 3: a handshake, no attachment, no connection: connections/1.0 to state 4 on both sides.
    /// The same invitation again is recognised: nothing sent, no second connection.
    @Test func row3ConnectsAndTheSameInvitationIsRecognised() async throws {
        try await ACAPyConnectionTests.withAerieAndACAPy { server, agent in
            let created = try await agent.admin(
                "POST", "/out-of-band/create-invitation",
                body: ["handshake_protocols": ["https://didcomm.org/connections/1.0"]])
            let url = try #require(created["invitation_url"]?.stringValue, "\(created)")
            let (tenant, _) = try await server.tenantClient(label: "oob-row3")
            defer { Task { await tenant.close() } }

            let accepted = try await tenant.call("outOfBand.accept", params: ["url": .string(url), "label": "Row Three"])
            #expect(accepted["row"] == 3, "\(accepted)")
            #expect(accepted["action"] == "connect")
            #expect(accepted["sameInvitation"] == false)
            #expect(accepted["state"] == "done")
            #expect(accepted["connection"]?["state"] == 4)
            let pwDid = try #require(accepted["connection"]?["pwDid"]?.stringValue)
            let dids = try await ACAPyConnectionTests.activeTheirDids(agent, including: [pwDid])
            #expect(dids.contains(pwDid), "\(dids)")

            let again = try await tenant.call("outOfBand.accept", params: ["url": .string(url)])
            #expect(again["sameInvitation"] == true, "\(again)")
            #expect(again["row"] == 3)
            #expect(again["connection"]?["connectionId"] == accepted["connection"]?["connectionId"])
            let list = try await tenant.call("connections.list", params: [:])
            #expect(list["connections"]?.arrayValue?.count == 1)
            let theirs = try await agent.admin("GET", "/connections")
            #expect(theirs["results"]?.arrayValue?.filter { $0["their_did"]?.stringValue.map(PeerDID4.shortForm) == pwDid }.count == 1)
        }
    }

    /// Rows 3 then 6 and 8: two invitations from one inviter that keeps its did:peer:2
    /// (`use_did_method`): the first connects, the second is answered with handshake-reuse over
    /// that connection, and ACA-Py's handshake-reuse-accepted (sent to our endpoint, matched by
    /// `pthid`) makes it `reused`. ACA-Py keeps one connection and drops the one it prepared for
    /// the second invitation.
    @Test func rows6And8ReuseTheConnectionWithTheSameInviter() async throws {
        try await ACAPyConnectionTests.withAerieAndACAPy { server, agent in
            let body: JSONValue = [
                "handshake_protocols": ["https://didcomm.org/connections/1.0"], "use_did_method": "did:peer:2",
            ]
            let first = try await agent.admin("POST", "/out-of-band/create-invitation", body: body)
            let (tenant, _) = try await server.tenantClient(label: "oob-reuse")
            defer { Task { await tenant.close() } }
            let connected = try await tenant.call(
                "outOfBand.accept", params: ["invitation": try #require(first["invitation"]), "timeoutSeconds": 30])
            #expect(connected["row"] == 3, "\(connected)")
            #expect(connected["connection"]?["state"] == 4)
            let connectionId = try #require(connected["connection"]?["connectionId"]?.stringValue)
            let pwDid = try #require(connected["connection"]?["pwDid"]?.stringValue)
            _ = try await ACAPyConnectionTests.activeTheirDids(agent, including: [pwDid])

            let second = try await agent.admin("POST", "/out-of-band/create-invitation", body: body)
            let secondInvitation = try #require(second["invitation"])
            let reused = try await tenant.call("outOfBand.accept", params: ["invitation": secondInvitation])
            #expect(reused["row"] == 6, "\(reused)")
            #expect(reused["action"] == "reuse")
            #expect(reused["match"] == "recipientKey")
            #expect(reused["state"] == "reused")
            #expect(reused["connection"]?["connectionId"]?.stringValue == connectionId)
            #expect(reused["connection"]?["stateName"] == "reused")
            #expect(reused["connection"]?["state"] == 5)

            // ACA-Py: still one connection with us, now carrying the second invitation's @id.
            let theirs = try await agent.admin("GET", "/connections")
            let ours = (theirs["results"]?.arrayValue ?? []).filter { $0["their_did"]?.stringValue.map(PeerDID4.shortForm) == pwDid }
            #expect(ours.count == 1, "\(theirs)")
            #expect(ours.first?["invitation_msg_id"] == secondInvitation["@id"])
            #expect(ours.first?["state"] == "active" || ours.first?["state"] == "completed")

            // The second invitation scanned again: recognised, no second reuse message.
            let again = try await tenant.call("outOfBand.accept", params: ["invitation": secondInvitation])
            #expect(again["sameInvitation"] == true)
            #expect(again["row"] == 6)
            #expect(again["state"] == "reused")

            // Row 8: a third invitation with a handshake and an attached proof request.
            let exchange = try await Self.createProofRequest(agent)
            let third: JSONValue = [
                "handshake_protocols": ["https://didcomm.org/connections/1.0"], "use_did_method": "did:peer:2",
                "attachments": [["id": .string(exchange), "type": "present-proof"]],
            ]
            let withAttachment = try await agent.admin("POST", "/out-of-band/create-invitation", body: third)
            let row8 = try await tenant.call("outOfBand.accept", params: ["invitation": try #require(withAttachment["invitation"])])
            #expect(row8["row"] == 8, "\(row8)")
            #expect(row8["state"] == "reused")
            #expect(row8["connection"]?["connectionId"]?.stringValue == connectionId)
            #expect(row8["attachedMessage"]?["@type"] == "https://didcomm.org/present-proof/2.0/request-presentation")
            let downloaded = try await tenant.call(
                "messages.download", params: ["pairwiseDids": [.string(pwDid)], "status": ["MS-103"]])
            let types = (downloaded.arrayValue?.first?["msgs"]?.arrayValue ?? []).compactMap { $0["type"]?.stringValue }
            #expect(types.contains("proofReq"), "\(downloaded)")

            // At rest (issue 15): after a reuse and a proof request attachment from ACA-Py, a
            // superuser's SELECT of every table and a pg_dump hold none of the request's fields,
            // the inviter's label or a setting.
            _ = try await tenant.call("settings.set", params: ["key": "address", "value": "12 Sealed Street"])
            let label = try #require(first["invitation"]?["label"]?.stringValue)
            let plaintext = [Self.proofName, Self.proofAttribute, label, "12 Sealed Street"]
            let rows = try await SealedStorageTests.everyRow(server.database)
            #expect(rows.contains(pwDid), "the SELECT sees the connection")
            SealedStorageTests.expectNoSecrets(plaintext, in: rows, "a superuser's SELECT after reuse and an attachment")
            let dump = try SealedStorageTests.pgDump(server.database.superuserConninfo)
            SealedStorageTests.expectNoSecrets(plaintext, in: dump, "pg_dump after reuse and an attachment")
        }
    }

    /// Row 4: an attachment and no handshake (ACA-Py's connectionless proof request): the
    /// connection is made at once in state 4 with the service's keys, and the request lands in the
    /// tenant's mailbox under the new pairwise DID.
    @Test func row4AttachmentOnlyMakesAConnectionAtOnce() async throws {
        try await ACAPyConnectionTests.withAerieAndACAPy { server, agent in
            let exchange = try await Self.createProofRequest(agent)
            let created = try await agent.admin(
                "POST", "/out-of-band/create-invitation",
                body: ["attachments": [["id": .string(exchange), "type": "present-proof"]]])
            let invitation = try #require(created["invitation"], "\(created)")
            #expect(invitation["handshake_protocols"] == nil || invitation["handshake_protocols"] == [])
            let (tenant, _) = try await server.tenantClient(label: "oob-row4")
            defer { Task { await tenant.close() } }

            let extracted = try await tenant.call("outOfBand.extractAttachedMessage", params: ["invitation": invitation])
            #expect(extracted["attachedMessage"]?["@type"] == "https://didcomm.org/present-proof/2.0/request-presentation")
            #expect(extracted["attachmentCount"] == 1)

            let accepted = try await tenant.call("outOfBand.accept", params: ["invitation": invitation])
            #expect(accepted["row"] == 4, "\(accepted)")
            #expect(accepted["action"] == "connectionless")
            #expect(accepted["connection"]?["state"] == 4)
            #expect(accepted["attachedMessage"] == extracted["attachedMessage"])
            let pwDid = try #require(accepted["connection"]?["pwDid"]?.stringValue)
            let invitationKey = try #require(
                invitation["services"]?.arrayValue?.first?["recipientKeys"]?.arrayValue?.first?.stringValue)
            // The connection's peer key is the invitation's service key (a did:key there, base58 here).
            let theirVerkey = try #require(accepted["connection"]?["theirVerkey"]?.stringValue, "\(accepted)")
            #expect(try KeyReference.verkey(from: theirVerkey) == KeyReference.verkey(from: invitationKey), "\(invitationKey)")
            #expect(!theirVerkey.hasPrefix("did:"), "theirVerkey is a raw base58 verkey: \(theirVerkey)")

            let downloaded = try await tenant.call("messages.download", params: ["pairwiseDids": [.string(pwDid)]])
            let msgs = downloaded.arrayValue?.first?["msgs"]?.arrayValue ?? []
            #expect(msgs.count == 1, "\(downloaded)")
            #expect(msgs.first?["uid"] == accepted["attachedMessageUid"])
            #expect(msgs.first?["type"] == "proofReq")
        }
    }

    /// Row 5: a handshake and an attachment: the connection through connections/1.0, and the
    /// attached request in the mailbox of that connection.
    @Test func row5ConnectsThenDeliversTheAttachment() async throws {
        try await ACAPyConnectionTests.withAerieAndACAPy { server, agent in
            let exchange = try await Self.createProofRequest(agent)
            let created = try await agent.admin(
                "POST", "/out-of-band/create-invitation",
                body: [
                    "handshake_protocols": ["https://didcomm.org/connections/1.0"],
                    "attachments": [["id": .string(exchange), "type": "present-proof"]],
                ])
            let (tenant, _) = try await server.tenantClient(label: "oob-row5")
            defer { Task { await tenant.close() } }
            let accepted = try await tenant.call(
                "outOfBand.accept", params: ["url": .string(try #require(created["invitation_url"]?.stringValue))])
            #expect(accepted["row"] == 5, "\(accepted)")
            #expect(accepted["connection"]?["state"] == 4)
            #expect(accepted["state"] == "done")
            let pwDid = try #require(accepted["connection"]?["pwDid"]?.stringValue)
            _ = try await ACAPyConnectionTests.activeTheirDids(agent, including: [pwDid])
            let downloaded = try await tenant.call("messages.download", params: ["pairwiseDids": [.string(pwDid)]])
            let types = (downloaded.arrayValue?.first?["msgs"]?.arrayValue ?? []).compactMap { $0["type"]?.stringValue }
            #expect(types.contains("proofReq"), "\(downloaded)")
        }
    }

    /// A reuse the inviter never answers (ACA-Py stopped): a clear `timeout` after the bounded
    /// wait, and the existing connection is left as it was.
    @Test func reuseTimesOutAndLeavesTheConnectionIntact() async throws {
        try await ACAPyConnectionTests.withAerieAndACAPy { server, agent in
            let body: JSONValue = [
                "handshake_protocols": ["https://didcomm.org/connections/1.0"], "use_did_method": "did:peer:2",
            ]
            let first = try await agent.admin("POST", "/out-of-band/create-invitation", body: body)
            let (tenant, _) = try await server.tenantClient(label: "oob-timeout")
            defer { Task { await tenant.close() } }
            let connected = try await tenant.call(
                "outOfBand.accept", params: ["invitation": try #require(first["invitation"]), "timeoutSeconds": 30])
            let connectionId = try #require(connected["connection"]?["connectionId"]?.stringValue)
            // ACA-Py refuses a handshake while two invitations share its did:peer:2, so the second
            // is made once the first is used.
            let second = try await agent.admin("POST", "/out-of-band/create-invitation", body: body)
            await agent.stop()

            let started = ContinuousClock.now
            await expectCode("timeout") {
                try await tenant.call(
                    "outOfBand.sendReuse",
                    params: [
                        "connectionId": .string(connectionId), "invitation": try #require(second["invitation"]),
                        "timeoutSeconds": 2,
                    ])
            }
            #expect(ContinuousClock.now - started < .seconds(10))
            let after = try await tenant.call("connections.get", params: ["connectionId": .string(connectionId)])
            #expect(after["state"] == 4)
            #expect(after["pwDid"] == connected["connection"]?["pwDid"])
        }
    }

    /// ACA-Py 1.7.0 (didexchange only): row 3 over didexchange 1.1 reaching `completed` on its
    /// side, then row 6: a second invitation with the same did:peer:2 is answered with a reuse
    /// over the didexchange connection.
    @Test func acapy17DIDExchangeThenReuse() async throws {
        try await ACAPyDIDExchangeTests.withAerieAndACAPy(.v1_7_0) { server, agent in
            let body: JSONValue = [
                "handshake_protocols": ["https://didcomm.org/didexchange/1.1", "https://didcomm.org/connections/1.0"],
                "use_did_method": "did:peer:2",
            ]
            let first = try await agent.admin("POST", "/out-of-band/create-invitation", body: body)
            let firstInvitation = try #require(first["invitation"], "\(first)")
            let (tenant, _) = try await server.tenantClient(label: "oob-acapy17")
            defer { Task { await tenant.close() } }
            let connected = try await tenant.call(
                "outOfBand.accept", params: ["invitation": firstInvitation, "timeoutSeconds": 30, "label": "Seventeen"])
            #expect(connected["row"] == 3, "\(connected)")
            #expect(connected["connection"]?["state"] == 4)
            #expect(connected["connection"]?["handshakeProtocol"] == "https://didcomm.org/didexchange/1.1")
            let connectionId = try #require(connected["connection"]?["connectionId"]?.stringValue)
            let pwDid = try #require(connected["connection"]?["pwDid"]?.stringValue)
            let theirs = try await ACAPyDIDExchangeTests.completedConnection(
                agent, invitationId: try #require(firstInvitation["@id"]?.stringValue))
            #expect(theirs["their_did"]?.stringValue.map(PeerDID4.shortForm) == pwDid)

            let second = try await agent.admin("POST", "/out-of-band/create-invitation", body: body)
            let secondInvitation = try #require(second["invitation"])
            let reused = try await tenant.call("outOfBand.accept", params: ["invitation": secondInvitation])
            #expect(reused["row"] == 6, "\(reused)")
            #expect(reused["state"] == "reused")
            #expect(reused["connection"]?["connectionId"]?.stringValue == connectionId)
            #expect(reused["connection"]?["stateName"] == "reused")
            let all = try await agent.admin("GET", "/connections")
            let ours = (all["results"]?.arrayValue ?? []).filter { $0["their_did"]?.stringValue.map(PeerDID4.shortForm) == pwDid }
            #expect(ours.count == 1, "\(all)")
            #expect(ours.first?["invitation_msg_id"] == secondInvitation["@id"])
            #expect(ours.first?["rfc23_state"] == "completed")
        }
    }

    /// A present-proof 2.0 request ACA-Py can attach to an invitation; answers its `pres_ex_id`.
    /// Words of the attached proof request that only it carries, so a dump can be searched for them.
    static let proofName = "proof of residence for Quentin"
    static let proofAttribute = "quentin_home_address"

    static func createProofRequest(_ agent: ACAPyAgent) async throws -> String {
        let created = try await agent.admin(
            "POST", "/present-proof-2.0/create-request",
            body: [
                "presentation_request": [
                    "indy": [
                        "name": .string(proofName), "version": "1.0",
                        "requested_attributes": ["attribute": ["name": .string(proofAttribute)]], "requested_predicates": [:],
                    ]
                ],
                "auto_verify": false,
            ])
        return try #require(created["pres_ex_id"]?.stringValue, "\(created)")
    }
}
