import AerieClient
import AerieCore
import AerieCrypto
import AerieTesting
import Foundation
import Testing

/// Issue 17, item 4: the inviter side of out-of-band 1.1 with didexchange 1.1 (and 1.0) as responder.
/// ACA-Py 1.7.0 (its did:peer:4 Request) reaches `completed` on Aerie's Response (the
/// `did_rotate~attach` signed by the invitation key) and its `complete` makes Aerie's side 4; two
/// tenants of one server connect the same way and the invitee's `handshake-reuse` of a second
/// invitation is answered with `handshake-reuse-accepted`.
@Suite(.timeLimit(.minutes(10))) struct OutOfBandInviterTests {
    @Test func acapy170AsInviteeCompletesADIDExchange() async throws {
        let agent = try await ACAPyAgent.start(version: .v1_7_0)
        do {
            try await LiveServer.with(server: { $0.outbound.allowPrivateURLs = true }) { server in
                let (alice, _) = try await server.tenantClient(label: "alice")
                let (bob, _) = try await server.tenantClient(label: "bob")
                defer { Task { await alice.close(); await bob.close() } }
                let created = try await alice.call(
                    "outOfBand.createInvitation", params: ["label": "Aerie Alice", "goalCode": "aries.vc.issue", "goal": "a test"])
                let invitation = try #require(created["invitation"])
                let connectionId = try #require(created["connectionId"]?.stringValue)
                #expect(invitation["handshake_protocols"] == ["https://didcomm.org/didexchange/1.1"])
                #expect(created["invitationUrl"]?.stringValue?.contains("?oob=") == true)
                _ = try await agent.admin(
                    "POST", "/out-of-band/receive-invitation?auto_accept=true&use_existing_connection=false", body: invitation)
                let theirs = try await ACAPyDIDExchangeTests.completedConnection(
                    agent, invitationId: try #require(invitation["@id"]?.stringValue))
                #expect(theirs["their_label"] == "Aerie Alice")
                let ours = try await InviterTests.waitForState(alice, connectionId, 4)
                #expect(ours["role"] == "inviter")
                #expect(ours["handshakeProtocol"] == "https://didcomm.org/didexchange/1.1")
                #expect(ours["pwDid"]?.stringValue == theirs["their_did"]?.stringValue.map(PeerDID4.shortForm))
                #expect(ours["theirDid"]?.stringValue?.hasPrefix("did:peer:") == true)

                // Messages over it, both ways.
                let acapyConnection = try #require(theirs["connection_id"]?.stringValue)
                try await InviterTests.exchangeBasicMessages(alice, connectionId: connectionId, agent: agent, acapyConnection: acapyConnection)
                #expect(try await bob.call("connections.list")["connections"]?.arrayValue?.isEmpty == true)
            }
        } catch {
            print("ACA-Py 1.7.0 log:\n\(agent.log().suffix(4000))")
            await agent.stop()
            throw error
        }
        await agent.stop()
    }

    /// didexchange 1.0 as responder: ACA-Py 1.7.0 receives an invitation offering only 1.0, sends
    /// its 1.0 Request (an unqualified DID with a did_doc~attach), verifies Aerie's 1.0 Response
    /// (its did_doc~attach signed by the invitation key) and reaches `completed`; Aerie's side is
    /// 4 on its `complete`; basic messages both ways.
    @Test func acapy170AsInviteeCompletesADIDExchange10() async throws {
        let agent = try await ACAPyAgent.start(version: .v1_7_0)
        do {
            try await LiveServer.with(server: { $0.outbound.allowPrivateURLs = true }) { server in
                let (alice, _) = try await server.tenantClient(label: "alice")
                defer { Task { await alice.close() } }
                let created = try await alice.call(
                    "outOfBand.createInvitation",
                    params: ["label": "Aerie Alice", "handshakeProtocols": ["https://didcomm.org/didexchange/1.0"]])
                let invitation = try #require(created["invitation"])
                let connectionId = try #require(created["connectionId"]?.stringValue)
                #expect(invitation["handshake_protocols"] == ["https://didcomm.org/didexchange/1.0"])
                _ = try await agent.admin(
                    "POST", "/out-of-band/receive-invitation?auto_accept=true&use_existing_connection=false", body: invitation)
                let theirs = try await ACAPyDIDExchangeTests.completedConnection(
                    agent, invitationId: try #require(invitation["@id"]?.stringValue))
                #expect(theirs["connection_protocol"] == "didexchange/1.0", "\(theirs)")
                #expect(theirs["their_label"] == "Aerie Alice")
                let ours = try await InviterTests.waitForState(alice, connectionId, 4)
                #expect(ours["handshakeProtocol"] == "https://didcomm.org/didexchange/1.0")
                #expect(ours["pwDid"]?.stringValue == theirs["their_did"]?.stringValue)
                #expect(ours["pwDid"]?.stringValue?.hasPrefix("did:") == false)

                let acapyConnection = try #require(theirs["connection_id"]?.stringValue)
                try await InviterTests.exchangeBasicMessages(alice, connectionId: connectionId, agent: agent, acapyConnection: acapyConnection)
            }
        } catch {
            print("ACA-Py 1.7.0 log:\n\(agent.log().suffix(4000))")
            await agent.stop()
            throw error
        }
        await agent.stop()
    }

    /// ACA-Py 1.2.7 as the invitee of either didexchange version (its did:peer:4 in 1.1, an
    /// unqualified DID of its key with a did_doc~attach signed by that key in 1.0): each
    /// connects, and the DID Aerie shows for it is the one ACA-Py holds for itself (did:peer:4:
    /// the long form of ACA-Py's short one).
    @Test(arguments: ["1.1", "1.0"]) func acapy127AsInviteeCompletesADIDExchange(version: String) async throws {
        let agent = try await ACAPyAgent.start(version: .v1_2_7)
        do {
            try await LiveServer.with(server: { $0.outbound.allowPrivateURLs = true }) { server in
                let (alice, _) = try await server.tenantClient(label: "alice")
                defer { Task { await alice.close() } }
                let created = try await alice.call(
                    "outOfBand.createInvitation",
                    params: ["label": "Aerie Alice", "handshakeProtocols": [.string("https://didcomm.org/didexchange/\(version)")]])
                let invitation = try #require(created["invitation"])
                let connectionId = try #require(created["connectionId"]?.stringValue)
                _ = try await agent.admin(
                    "POST", "/out-of-band/receive-invitation?auto_accept=true&use_existing_connection=false", body: invitation)
                let theirs = try await ACAPyDIDExchangeTests.completedConnection(
                    agent, invitationId: try #require(invitation["@id"]?.stringValue))
                #expect(theirs["connection_protocol"]?.stringValue == "didexchange/\(version)", "\(theirs)")
                let ours = try await InviterTests.waitForState(alice, connectionId, 4)
                #expect(ours["pwDid"]?.stringValue == theirs["their_did"]?.stringValue.map(PeerDID4.shortForm))
                // ACA-Py keeps its did:peer:4 in the short form; Aerie the long form it was sent.
                let acapyDID = try #require(theirs["my_did"]?.stringValue)
                #expect(ours["theirDid"]?.stringValue?.hasPrefix(acapyDID) == true, "\(ours) \(theirs)")
                let acapyConnection = try #require(theirs["connection_id"]?.stringValue)
                try await InviterTests.exchangeBasicMessages(alice, connectionId: connectionId, agent: agent, acapyConnection: acapyConnection)
            }
        } catch {
            print("ACA-Py 1.2.7 log:\n\(agent.log().suffix(4000))")
            await agent.stop()
            throw error
        }
        await agent.stop()
    }

    /// Two tenants of one server over an invitation offering only didexchange 1.0: Bob's
    /// `outOfBand.accept` reaches 4 on Alice's 1.0 Response, Alice's side is 4 on Bob's
    /// `complete`, text messages both ways; a third tenant sees nothing.
    @Test func twoTenantsConnectOverDIDExchange10() async throws {
        try await LiveServer.with(server: { $0.outbound.allowPrivateURLs = true }) { server in
            let (alice, _) = try await server.tenantClient(label: "alice")
            let (bob, _) = try await server.tenantClient(label: "bob")
            let (carol, carolID) = try await server.tenantClient(label: "carol")
            defer { Task { await alice.close(); await bob.close(); await carol.close() } }
            let created = try await alice.call(
                "outOfBand.createInvitation", params: ["label": "Alice", "handshakeProtocols": ["https://didcomm.org/didexchange/1.0"]])
            let aliceSide = try #require(created["connectionId"]?.stringValue)
            let accepted = try await bob.call(
                "outOfBand.accept", params: ["url": created["invitationUrl"]!, "label": "Bob", "timeoutSeconds": 30])
            let bobSide = try #require(accepted["connection"]?["connectionId"]?.stringValue)
            #expect(accepted["connection"]?["state"] == 4, "\(accepted)")
            #expect(accepted["connection"]?["handshakeProtocol"] == "https://didcomm.org/didexchange/1.0")
            let ours = try await InviterTests.waitForState(alice, aliceSide, 4)
            #expect(ours["handshakeProtocol"] == "https://didcomm.org/didexchange/1.0")
            #expect(ours["theirDid"] == accepted["connection"]?["pwDid"])
            #expect(accepted["connection"]?["theirDid"] == ours["pwDid"])

            _ = try await alice.call("messages.sendText", params: ["connectionId": .string(aliceSide), "content": "hi Bob (1.0)"])
            _ = try await bob.call("messages.sendText", params: ["connectionId": .string(bobSide), "content": "hi Alice (1.0)"])
            #expect(try await InviterTests.receives(bob, content: "hi Bob (1.0)"))
            #expect(try await InviterTests.receives(alice, content: "hi Alice (1.0)"))
            #expect(try await carol.call("connections.list")["connections"]?.arrayValue?.isEmpty == true)
            #expect(try await DIDCommEndpointTests.mailboxCount(server, tenant: carolID) == 0)
        }
    }

    /// A didexchange Request is taken only in a version the invitation offered: a 1.0 Request to
    /// an invitation offering 1.1 (and a 1.1 Request to one offering 1.0) is refused with
    /// nothing stored; a 1.0 Request (ACA-Py's shape: an unqualified DID and a did_doc~attach) to
    /// the 1.0 invitation is answered with a 1.0 Response from a new pairwise key carrying a
    /// did_doc~attach signed by the invitation key.
    @Test func aDIDExchangeRequestIsTakenOnlyInAVersionTheInvitationOffered() async throws {
        let inbox = try await PeerInbox()
        defer { Task { await inbox.stop() } }
        try await LiveServer.with(server: { $0.outbound.allowPrivateURLs = true }) { server in
            let (alice, aliceID) = try await server.tenantClient(label: "alice")
            defer { Task { await alice.close() } }
            let port = server.didcommPort
            func invitationKey(_ created: JSONValue) throws -> String {
                let key = try #require(created["invitation"]?["services"]?.arrayValue?.first?["recipientKeys"]?.arrayValue?.first?.stringValue)
                return Base58.encode(try DIDKey.verkey(from: key))
            }
            let invitee = InviterTests.Invitee(key: inbox.key, endpoint: inbox.url)
            func request(version: String, invitationId: String) -> JSONValue {
                let id = UUID().uuidString.lowercased()
                let doc = invitee.request(invitationId: invitationId)["connection"]?["DIDDoc"] ?? .null
                return [
                    "@type": .string("https://didcomm.org/didexchange/\(version)/request"), "@id": .string(id), "label": "Hand-made",
                    "did": .string(invitee.did),
                    "did_doc~attach": ["@id": "doc", "mime-type": "application/json", "data": ["base64": .string(Base64.encode(doc.serialized()))]],
                    "~thread": ["thid": .string(id), "pthid": .string(invitationId)],
                ]
            }
            let v11 = try await alice.call("outOfBand.createInvitation")
            let v10 = try await alice.call("outOfBand.createInvitation", params: ["handshakeProtocols": ["https://didcomm.org/didexchange/1.0"]])
            let v11Id = try #require(v11["invitation"]?["@id"]?.stringValue)
            let v10Id = try #require(v10["invitation"]?["@id"]?.stringValue)
            let before = try await DIDCommEndpointTests.mailboxCount(server, tenant: aliceID)
            #expect(try await DIDCommEndpointTests.post(
                try invitee.pack(request(version: "1.0", invitationId: v11Id), to: try invitationKey(v11)), to: port) == 400)
            #expect(try await DIDCommEndpointTests.post(
                try invitee.pack(request(version: "1.1", invitationId: v10Id), to: try invitationKey(v10)), to: port) == 400)
            #expect(try await DIDCommEndpointTests.mailboxCount(server, tenant: aliceID) == before)
            for created in [v11, v10] {
                #expect(try await alice.call("connections.get", params: ["connectionId": created["connectionId"]!])["state"] == 1)
            }

            let accepted = request(version: "1.0", invitationId: v10Id)
            #expect(try await DIDCommEndpointTests.post(try invitee.pack(accepted, to: try invitationKey(v10)), to: port) == 202)
            let response = try #require(
                try await inbox.wait { $0["@type"]?.stringValue == "https://didcomm.org/didexchange/1.0/response" },
                "no 1.0 Response reached the invitee")
            #expect(response.message["~thread"] == ["thid": accepted["@id"]!, "pthid": .string(v10Id)])
            #expect(response.message["did_rotate~attach"] == nil)
            let attachment = try #require(response.message["did_doc~attach"])
            #expect(attachment["data"]?["jws"]?["header"]?["kid"]?.stringValue
                == (try DIDKey.did(verkey: try Base58.decode(try invitationKey(v10)))))
            let doc = try JSONValue(parsing: String(decoding: try Base64.decode(try #require(attachment["data"]?["base64"]?.stringValue)), as: UTF8.self))
            let did = try #require(response.message["did"]?.stringValue)
            #expect(doc["id"]?.stringValue == "did:sov:\(did)")
            #expect(doc["publicKey"]?.arrayValue?.first?["publicKeyBase58"]?.stringValue == response.senderVerkey)
            #expect(response.senderVerkey != (try invitationKey(v10)))
            let ours = try await InviterTests.waitForState(alice, try #require(v10["connectionId"]?.stringValue), 3)
            #expect(ours["pwDid"]?.stringValue == did)
            #expect(ours["theirDid"]?.stringValue == invitee.did)
        }
    }

    /// Invitations naming the tenant's invitation DID: ACA-Py 1.7.0 connects through the first
    /// and, for the second, sends handshake-reuse over that connection; Aerie's
    /// handshake-reuse-accepted makes ACA-Py's out-of-band record `reuse-accepted`, no second
    /// connection on either side.
    @Test func acapy170ReusesItsConnectionForASecondInvitationNamingTheTenantsDID() async throws {
        let agent = try await ACAPyAgent.start(version: .v1_7_0)
        do {
            try await LiveServer.with(server: { $0.outbound.allowPrivateURLs = true }) { server in
                let (alice, _) = try await server.tenantClient(label: "alice")
                defer { Task { await alice.close() } }
                let first = try await alice.call("outOfBand.createInvitation", params: ["useDid": true, "label": "Aerie Alice"])
                let didRecord = try #require(first["connectionId"]?.stringValue)
                #expect(first["multiUse"] == true)
                let service = try #require(first["invitation"]?["services"]?.arrayValue?.first?.stringValue)
                #expect(service.hasPrefix("did:peer:2."))
                _ = try await agent.admin(
                    "POST", "/out-of-band/receive-invitation?auto_accept=true&use_existing_connection=true", body: first["invitation"]!)
                let theirs = try await ACAPyDIDExchangeTests.completedConnection(
                    agent, invitationId: try #require(first["invitation"]?["@id"]?.stringValue))
                let acapyConnection = try #require(theirs["connection_id"]?.stringValue)
                var ours: [JSONValue] = []
                for _ in 0..<200 where ours.isEmpty {
                    ours = try await alice.call("connections.list", params: ["state": 4])["connections"]?.arrayValue ?? []
                    if ours.isEmpty { try await Task.sleep(for: .milliseconds(50)) }
                }
                #expect(ours.count == 1)
                #expect(ours.first?["invitationId"] == first["invitation"]?["@id"])

                let second = try await alice.call("outOfBand.createInvitation", params: ["useDid": true])
                #expect(second["connectionId"]?.stringValue == didRecord)
                #expect(second["invitation"]?["services"]?.arrayValue?.first?.stringValue == service)
                let oob = try await agent.admin(
                    "POST", "/out-of-band/receive-invitation?auto_accept=true&use_existing_connection=true", body: second["invitation"]!)
                #expect(oob["state"] == "reuse-accepted", "\(oob)")
                #expect(oob["connection_id"]?.stringValue == acapyConnection)
                let after = try await alice.call("connections.list")["connections"]?.arrayValue ?? []
                #expect(after.filter { $0["state"] == 4 }.count == 1)
                #expect(after.count == 2)  // the connection and the invitation DID's record
            }
        } catch {
            print("ACA-Py 1.7.0 log:\n\(agent.log().suffix(4000))")
            await agent.stop()
            throw error
        }
        await agent.stop()
    }

    @Test func twoTenantsConnectOverOutOfBandAndAReuseIsAnswered() async throws {
        try await LiveServer.with(server: { $0.outbound.allowPrivateURLs = true }) { server in
            let (alice, _) = try await server.tenantClient(label: "alice")
            let (bob, _) = try await server.tenantClient(label: "bob")
            let (carol, carolID) = try await server.tenantClient(label: "carol")
            defer { Task { await alice.close(); await bob.close(); await carol.close() } }
            let first = try await alice.call("outOfBand.createInvitation", params: ["label": "Alice", "multiUse": true])
            let accepted = try await bob.call(
                "outOfBand.accept", params: ["url": first["invitationUrl"]!, "label": "Bob", "timeoutSeconds": 30])
            let bobSide = try #require(accepted["connection"]?["connectionId"]?.stringValue)
            #expect(accepted["connection"]?["state"] == 4, "\(accepted)")
            #expect(accepted["connection"]?["handshakeProtocol"] == "https://didcomm.org/didexchange/1.1")
            let made = try await alice.call("connections.list", params: ["state": 4])["connections"]?.arrayValue ?? []
            var aliceSide = made.first?["connectionId"]?.stringValue
            for _ in 0..<200 where aliceSide == nil {
                try await Task.sleep(for: .milliseconds(50))
                aliceSide = try await alice.call("connections.list", params: ["state": 4])["connections"]?.arrayValue?.first?["connectionId"]?.stringValue
            }
            let aliceConnection = try #require(aliceSide, "alice's side never reached state 4")
            #expect(try await alice.call("connections.get", params: ["connectionId": first["connectionId"]!])["state"] == 1)

            _ = try await alice.call("messages.sendText", params: ["connectionId": .string(aliceConnection), "content": "hi Bob (oob)"])
            #expect(try await InviterTests.receives(bob, content: "hi Bob (oob)"))

            // A second invitation of Alice's: Bob reuses the connection he has; Alice answers.
            let second = try await alice.call("outOfBand.createInvitation", params: ["label": "Alice"])
            let reused = try await bob.call(
                "outOfBand.sendReuse",
                params: ["connectionId": .string(bobSide), "invitation": second["invitation"]!, "timeoutSeconds": 30])
            #expect(reused["connection"]?["stateName"] == "reused", "\(reused)")
            #expect(try await alice.call("connections.get", params: ["connectionId": second["connectionId"]!])["state"] == 1)

            // Invitations naming Alice's invitation DID: Bob connects through the first and his
            // outOfBand.accept of the second reuses that connection (same first key), answered.
            let byDid = try await alice.call("outOfBand.createInvitation", params: ["useDid": true])
            let viaDid = try await bob.call("outOfBand.accept", params: ["invitation": byDid["invitation"]!, "timeoutSeconds": 30])
            #expect(viaDid["connection"]?["state"] == 4, "\(viaDid)")
            let again = try await alice.call("outOfBand.createInvitation", params: ["useDid": true])
            let reuse = try await bob.call("outOfBand.accept", params: ["invitation": again["invitation"]!, "timeoutSeconds": 30])
            #expect(reuse["action"] == "reuse", "\(reuse)")
            #expect(reuse["connection"]?["connectionId"] == viaDid["connection"]?["connectionId"])
            #expect(reuse["connection"]?["stateName"] == "reused")

            #expect(try await carol.call("connections.list")["connections"]?.arrayValue?.isEmpty == true)
            #expect(try await DIDCommEndpointTests.mailboxCount(server, tenant: carolID) == 0)
        }
    }

    @Test func paramsAreChecked() async throws {
        try await LiveServer.with { server in
            let (alice, _) = try await server.tenantClient(label: "alice")
            defer { Task { await alice.close() } }
            await expectCode("invalid_params") {
                try await alice.call("outOfBand.createInvitation", params: ["handshakeProtocols": ["https://didcomm.org/didexchange/2.0"]])
            }
            await expectCode("invalid_params") {
                try await alice.call(
                    "outOfBand.createInvitation",
                    params: ["handshakeProtocols": ["https://didcomm.org/didexchange/1.0", "https://didcomm.org/didexchange/1.0"]])
            }
            await expectCode("invalid_params") { try await alice.call("outOfBand.createInvitation", params: ["handshakeProtocols": []]) }
            await expectCode("invalid_params") { try await alice.call("outOfBand.createInvitation", params: ["attachments": ["not a message"]]) }
            let created = try await alice.call(
                "outOfBand.createInvitation",
                params: [
                    "handshakeProtocols": ["https://didcomm.org/connections/1.0", "https://didcomm.org/didexchange/1.1"],
                    "attachments": [["@type": "https://didcomm.org/present-proof/2.0/request-presentation", "@id": "req-1"]],
                ])
            let invitation = try #require(created["invitation"])
            #expect(invitation["requests~attach"]?.arrayValue?.first?["data"]?["json"]?["@id"] == "req-1")
            let service = try #require(invitation["services"]?.arrayValue?.first)
            #expect(service["recipientKeys"]?.arrayValue?.first?.stringValue?.hasPrefix("did:key:z6Mk") == true)
            // Concurrent first uses of the invitation DID make one record; useDid is multi-use.
            let ids = try await withThrowingTaskGroup(of: String?.self) { group in
                for _ in 0..<4 {
                    group.addTask { try await alice.call("outOfBand.createInvitation", params: ["useDid": true])["connectionId"]?.stringValue }
                }
                return try await group.reduce(into: Set<String?>()) { $0.insert($1) }
            }
            #expect(ids.count == 1 && ids.first! != nil, "\(ids)")
            await expectCode("invalid_params") {
                try await alice.call("outOfBand.createInvitation", params: ["useDid": true, "multiUse": false])
            }
            // Aerie's own reader takes it as any out-of-band invitation.
            let parsed = try await alice.call("connections.parseInvitation", params: ["url": created["invitationUrl"]!])
            #expect(parsed["kind"] == "out-of-band")
            #expect(parsed["hasAttachment"] == true)
        }
    }
}
