import AerieClient
import AerieCore
import AerieCrypto
import AerieTesting
import Foundation
import Testing

/// did:peer:4 as our own DID method in didexchange 1.1, against ACA-Py 1.2.7 and 1.7.0 in both
/// roles and between two tenants: Aerie requests with its long form and records its short form;
/// as responder it answers in the Request's method; `useDid: "did:peer:4"` invitations carry the
/// long form; a basic message each way on every connection. Bad did:peer:4s are refused.
@Suite(.serialized, .timeLimit(.minutes(10))) struct PeerDID4InteropTests {
    /// Aerie requests (the default for didexchange 1.1: did:peer:4), ACA-Py answers: its
    /// connection names our DID by the short form of the long one we sent, ours names its DID
    /// by the long form it sent (also did:peer:4: ACA-Py answers in the Request's method).
    @Test(arguments: ACAPyAgent.Version.allCases)
    func aerieRequestsWithDIDPeer4(version: ACAPyAgent.Version) async throws {
        try await ACAPyDIDExchangeTests.withAerieAndACAPy(version) { server, agent in
            let created = try await agent.admin(
                "POST", "/out-of-band/create-invitation",
                body: ["handshake_protocols": [.string(ACAPyDIDExchangeTests.dx11)], "use_public_did": false])
            let invitation = try #require(created["invitation"], "\(created)")
            let (alice, _) = try await server.tenantClient(label: "alice")
            defer { Task { await alice.close() } }
            let accepted = try await alice.call(
                "outOfBand.accept", params: ["invitation": invitation, "label": "Alice", "didMethod": "did:peer:4", "timeoutSeconds": 30])
            let connection = try #require(accepted["connection"])
            #expect(connection["state"] == 4, "\(accepted)")
            let pwDid = try #require(connection["pwDid"]?.stringValue)
            #expect(PeerDIDMethod(of: pwDid) == .peer4 && !PeerDID4.isLongForm(pwDid), "\(pwDid)")
            let theirs = try await ACAPyDIDExchangeTests.completedConnection(
                agent, invitationId: try #require(invitation["@id"]?.stringValue))
            // ACA-Py records a did:peer:4 short once `complete` arrives, long when another
            // message completed the connection first: compared by the short form.
            #expect(theirs["their_did"]?.stringValue.map(PeerDID4.shortForm) == pwDid)
            let theirDid = try #require(connection["theirDid"]?.stringValue)
            #expect(PeerDID4.isLongForm(theirDid), "\(theirDid)")
            #expect(PeerDID4.shortForm(theirDid) == theirs["my_did"]?.stringValue.map(PeerDID4.shortForm))
            try await InviterTests.exchangeBasicMessages(
                alice, connectionId: try #require(connection["connectionId"]?.stringValue), agent: agent,
                acapyConnection: try #require(theirs["connection_id"]?.stringValue))
        }
    }

    /// ACA-Py requests in each method (`use_did_method` on its accept-invitation) and Aerie
    /// answers in the same one: ACA-Py's connection names our DID in that method (the short form
    /// of a did:peer:4), ours names ACA-Py's. A basic message each way.
    @Test(arguments: ACAPyAgent.Version.allCases, PeerDIDMethod.allCases)
    func aerieAnswersInTheRequestsMethod(version: ACAPyAgent.Version, method: PeerDIDMethod) async throws {
        try await ACAPyDIDExchangeTests.withAerieAndACAPy(version) { server, agent in
            let (alice, _) = try await server.tenantClient(label: "alice")
            defer { Task { await alice.close() } }
            let created = try await alice.call("outOfBand.createInvitation", params: ["label": "Aerie Alice"])
            let invitation = try #require(created["invitation"])
            let connectionId = try #require(created["connectionId"]?.stringValue)
            let received = try await agent.admin(
                "POST", "/out-of-band/receive-invitation?auto_accept=false&use_existing_connection=false", body: invitation)
            let acapyConnection = try #require(received["connection_id"]?.stringValue, "\(received)")
            _ = try await agent.admin(
                "POST", "/didexchange/\(acapyConnection)/accept-invitation?use_did_method=\(method.rawValue)")
            let theirs = try await ACAPyDIDExchangeTests.completedConnection(
                agent, invitationId: try #require(invitation["@id"]?.stringValue))
            let ours = try await InviterTests.waitForState(alice, connectionId, 4)
            let pwDid = try #require(ours["pwDid"]?.stringValue)
            #expect(PeerDIDMethod(of: pwDid) == method, "\(pwDid)")
            #expect(!PeerDID4.isLongForm(pwDid))
            #expect(theirs["their_did"]?.stringValue.map(PeerDID4.shortForm) == pwDid)
            let theirDid = try #require(ours["theirDid"]?.stringValue)
            #expect(PeerDIDMethod(of: theirDid) == method)
            #expect(PeerDID4.shortForm(theirDid) == theirs["my_did"]?.stringValue.map(PeerDID4.shortForm))
            try await InviterTests.exchangeBasicMessages(alice, connectionId: connectionId, agent: agent, acapyConnection: acapyConnection)
        }
    }

    /// `useDid: "did:peer:4"`: the invitation's service is the tenant's did:peer:4 in its long
    /// form (one per tenant and method, apart from its did:peer:2), ACA-Py resolves it and
    /// connects; its second invitation naming the same DID is reused over that connection.
    @Test(arguments: ACAPyAgent.Version.allCases)
    func aUseDidPeer4InvitationIsAcceptedAndReused(version: ACAPyAgent.Version) async throws {
        try await ACAPyDIDExchangeTests.withAerieAndACAPy(version) { server, agent in
            let (alice, _) = try await server.tenantClient(label: "alice")
            defer { Task { await alice.close() } }
            let first = try await alice.call("outOfBand.createInvitation", params: ["useDid": "did:peer:4", "label": "Aerie Alice"])
            let service = try #require(first["invitation"]?["services"]?.arrayValue?.first?.stringValue)
            #expect(PeerDID4.isLongForm(service), "\(service)")
            #expect(first["invitationUrl"]?.stringValue?.contains("?oob=") == true, "\(first)")
            let peer2 = try await alice.call("outOfBand.createInvitation", params: ["useDid": "did:peer:2"])
            #expect(peer2["connectionId"] != first["connectionId"])
            #expect(peer2["invitation"]?["services"]?.arrayValue?.first?.stringValue?.hasPrefix("did:peer:2.") == true)

            _ = try await agent.admin(
                "POST", "/out-of-band/receive-invitation?auto_accept=true&use_existing_connection=true", body: first["invitation"]!)
            let theirs = try await ACAPyDIDExchangeTests.completedConnection(
                agent, invitationId: try #require(first["invitation"]?["@id"]?.stringValue))
            let acapyConnection = try #require(theirs["connection_id"]?.stringValue)
            var established: [JSONValue] = []
            for _ in 0..<200 where established.isEmpty {
                established = try await alice.call("connections.list", params: ["state": 4])["connections"]?.arrayValue ?? []
                if established.isEmpty { try await Task.sleep(for: .milliseconds(50)) }
            }
            let connectionId = try #require(established.first?["connectionId"]?.stringValue)
            // ACA-Py requested with its did:peer:4 (auto-accept), answered in it.
            let ours = try await alice.call("connections.get", params: ["connectionId": .string(connectionId)])
            #expect(PeerDIDMethod(of: ours["pwDid"]?.stringValue ?? "") == .peer4, "\(ours)")
            try await InviterTests.exchangeBasicMessages(alice, connectionId: connectionId, agent: agent, acapyConnection: acapyConnection)

            let second = try await alice.call("outOfBand.createInvitation", params: ["useDid": "did:peer:4"])
            #expect(second["connectionId"] == first["connectionId"])
            #expect(second["invitation"]?["services"]?.arrayValue?.first?.stringValue == service)
            let oob = try await agent.admin(
                "POST", "/out-of-band/receive-invitation?auto_accept=true&use_existing_connection=true", body: second["invitation"]!)
            #expect(oob["state"] == "reuse-accepted", "\(oob)")
            #expect(oob["connection_id"]?.stringValue == acapyConnection)
        }
    }

    /// Two tenants of one server: Bob requests with did:peer:4 (the default), Alice answers in
    /// it; each names the other's DID in the form it was sent, and a message goes each way; a
    /// third tenant sees nothing. Then the same with did:peer:2 asked for.
    @Test(arguments: [nil, PeerDIDMethod.peer2])
    func twoTenantsConnect(didMethod: PeerDIDMethod?) async throws {
        try await LiveServer.with(server: { $0.outbound.allowPrivateURLs = true }) { server in
            let (alice, _) = try await server.tenantClient(label: "alice")
            let (bob, _) = try await server.tenantClient(label: "bob")
            let (carol, carolID) = try await server.tenantClient(label: "carol")
            defer { Task { await alice.close(); await bob.close(); await carol.close() } }
            let created = try await alice.call("outOfBand.createInvitation", params: ["label": "Alice"])
            let aliceSide = try #require(created["connectionId"]?.stringValue)
            var params: [String: JSONValue] = ["url": created["invitationUrl"]!, "label": "Bob", "timeoutSeconds": 30]
            if let didMethod { params["didMethod"] = .string(didMethod.rawValue) }
            let accepted = try await bob.call("outOfBand.accept", params: .object(params))
            let bobSide = try #require(accepted["connection"]?["connectionId"]?.stringValue)
            #expect(accepted["connection"]?["state"] == 4, "\(accepted)")
            let ours = try await InviterTests.waitForState(alice, aliceSide, 4)
            let method = didMethod ?? .peer4
            let bobDid = try #require(accepted["connection"]?["pwDid"]?.stringValue)
            let aliceDid = try #require(ours["pwDid"]?.stringValue)
            #expect(PeerDIDMethod(of: bobDid) == method && PeerDIDMethod(of: aliceDid) == method)
            #expect(PeerDID4.shortForm(try #require(ours["theirDid"]?.stringValue)) == bobDid)
            #expect(PeerDID4.shortForm(try #require(accepted["connection"]?["theirDid"]?.stringValue)) == aliceDid)

            _ = try await alice.call("messages.sendText", params: ["connectionId": .string(aliceSide), "content": "hi Bob (peer DID)"])
            _ = try await bob.call("messages.sendText", params: ["connectionId": .string(bobSide), "content": "hi Alice (peer DID)"])
            #expect(try await InviterTests.receives(bob, content: "hi Bob (peer DID)"))
            #expect(try await InviterTests.receives(alice, content: "hi Alice (peer DID)"))
            #expect(try await carol.call("connections.list")["connections"]?.arrayValue?.isEmpty == true)
            #expect(try await DIDCommEndpointTests.mailboxCount(server, tenant: carolID) == 0)
        }
    }

    /// Both forms name one DID: after Bob connected through Alice's `useDid: "did:peer:4"`
    /// invitation (its long form), an invitation naming the short form finds that connection
    /// (`connections.accept` answers it as existing; `outOfBand.accept` reuses it) and makes none.
    @Test func aShortFormNamesTheConnectionItsLongFormMade() async throws {
        try await LiveServer.with(server: { $0.outbound.allowPrivateURLs = true }) { server in
            let (alice, _) = try await server.tenantClient(label: "alice")
            let (bob, _) = try await server.tenantClient(label: "bob")
            defer { Task { await alice.close(); await bob.close() } }
            let created = try await alice.call("outOfBand.createInvitation", params: ["useDid": "did:peer:4", "label": "Alice"])
            let long = try #require(created["invitation"]?["services"]?.arrayValue?.first?.stringValue)
            let accepted = try await bob.call("outOfBand.accept", params: ["invitation": created["invitation"]!, "timeoutSeconds": 30])
            let bobSide = try #require(accepted["connection"]?["connectionId"]?.stringValue)
            #expect(accepted["connection"]?["state"] == 4, "\(accepted)")

            let short: JSONValue = [
                "@type": "https://didcomm.org/out-of-band/1.1/invitation", "@id": "inv-short-again", "label": "Alice",
                "handshake_protocols": ["https://didcomm.org/didexchange/1.1"], "services": [.string(PeerDID4.shortForm(long))],
            ]
            let again = try await bob.call("connections.accept", params: ["invitation": short])
            #expect(again["connectionId"]?.stringValue == bobSide, "\(again)")
            #expect(again["existing"] == true)
            let reused = try await bob.call("outOfBand.accept", params: ["invitation": short, "timeoutSeconds": 30])
            #expect(reused["connection"]?["connectionId"]?.stringValue == bobSide, "\(reused)")
            #expect(try await bob.call("connections.list")["connections"]?.arrayValue?.count == 1)
        }
    }

    /// A didexchange Request whose did:peer:4 does not hold (its hash does not match its
    /// document, or it is longer than any DID read) or is a short form (no document) is refused
    /// with a 400 and nothing stored; a bad `didMethod` or `useDid` is invalid_params; an
    /// invitation naming a did:peer:4 short form the tenant never saw in its long form is refused
    /// as unsupported, by name.
    @Test func badDIDPeer4sAreRefused() async throws {
        try await LiveServer.with(server: { $0.outbound.allowPrivateURLs = true }) { server in
            let (alice, aliceID) = try await server.tenantClient(label: "alice")
            defer { Task { await alice.close() } }
            let created = try await alice.call("outOfBand.createInvitation")
            let invitationId = try #require(created["invitation"]?["@id"]?.stringValue)
            let key = try #require(created["invitation"]?["services"]?.arrayValue?.first?["recipientKeys"]?.arrayValue?.first?.stringValue)
            let invitationKey = Base58.encode(try DIDKey.verkey(from: key))

            let requester = Ed25519KeyPair.generate()
            let good = try PeerDIDMethod.peer4.make(verkey: requester.verkey, serviceEndpoint: "http://127.0.0.1:9")
            var tampered = Array(good.did)
            tampered[tampered.count - 4] = tampered[tampered.count - 4] == "a" ? "b" : "a"
            let oversized = good.did + String(repeating: "z", count: PeerDID4.maxLength)
            let before = try await DIDCommEndpointTests.mailboxCount(server, tenant: aliceID)
            for did in [String(tampered), good.shortForm, oversized] {
                let id = UUID().uuidString.lowercased()
                let request: JSONValue = [
                    "@type": "https://didcomm.org/didexchange/1.1/request", "@id": .string(id), "label": "Mallory",
                    "did": .string(did), "~thread": ["thid": .string(id), "pthid": .string(invitationId)],
                ]
                let packed = try DIDCommEnvelope.pack(request.serialized(), to: [invitationKey], from: requester)
                #expect(try await DIDCommEndpointTests.post(packed, to: server.didcommPort) == 400, "\(did.prefix(60))")
            }
            #expect(try await DIDCommEndpointTests.mailboxCount(server, tenant: aliceID) == before)
            #expect(try await alice.call("connections.get", params: ["connectionId": created["connectionId"]!])["state"] == 1)

            for (method, params) in [
                ("outOfBand.createInvitation", ["useDid": "did:peer:1"] as JSONValue),
                ("connections.accept", ["invitation": created["invitation"]!, "didMethod": "did:peer:1"]),
                ("outOfBand.accept", ["invitation": created["invitation"]!, "didMethod": "did:web"]),
            ] {
                let error = await #expect(throws: AerieClientError.self, "\(method)") { _ = try await alice.call(method, params: params) }
                #expect(error?.stableCode == "invalid_params", "\(method): \(String(describing: error))")
            }

            let (bob, _) = try await server.tenantClient(label: "bob")
            defer { Task { await bob.close() } }
            let unseen: JSONValue = [
                "@type": "https://didcomm.org/out-of-band/1.1/invitation", "@id": "inv-short", "label": "Someone",
                "handshake_protocols": ["https://didcomm.org/didexchange/1.1"], "services": [.string(good.shortForm)],
            ]
            for method in ["connections.accept", "outOfBand.accept"] {
                let error = await #expect(throws: AerieClientError.self, "\(method)") {
                    _ = try await bob.call(method, params: ["invitation": unseen])
                }
                #expect(error?.stableCode == "unsupported_invitation", "\(method): \(String(describing: error))")
                #expect(error?.message.contains("short form") == true, "\(method): \(String(describing: error))")
            }
            #expect(try await bob.call("connections.list")["connections"]?.arrayValue?.isEmpty == true)
        }
    }
}
