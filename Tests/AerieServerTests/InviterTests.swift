import AerieClient
import AerieCore
import AerieCrypto
import AerieTesting
import Foundation
import Testing

/// Issue 17, item 3: the inviter role of RFC 0160. `connections.createInvitation` hands out an
/// invitation whose key routes to the tenant; a Request authcrypted by the key its DIDDoc names
/// is answered with a Response signed by the invitation key, and the invitee's first message
/// makes the connection `accepted`. Hand-made invitees (keys the test holds, a `PeerInbox` as
/// their endpoint) prove the refusals; ACA-Py 1.2.7 and a second tenant of the same server are
/// the real invitees.
@Suite(.timeLimit(.minutes(10))) struct InviterTests {
    /// An invitee the test plays: its key, DID and endpoint.
    struct Invitee {
        let key: Ed25519KeyPair
        let endpoint: String
        var did: String { KeyReference.unqualifiedDID(verkey: key.verkey) }
        var verkey: String { key.verkeyBase58 }

        /// A connections/1.0 Request whose DIDDoc names `named` (default: our own key).
        func request(id: String = UUID().uuidString.lowercased(), invitationId: String, naming named: String? = nil) -> JSONValue {
            let verkey = named ?? self.verkey
            let qualified = "did:sov:\(did)"
            let doc: JSONValue = [
                "@context": "https://w3id.org/did/v1", "id": .string(qualified),
                "publicKey": [["id": .string("\(qualified)#1"), "type": "Ed25519VerificationKey2018",
                               "controller": .string(qualified), "publicKeyBase58": .string(verkey)]],
                "service": [["id": .string("\(qualified);indy"), "type": "IndyAgent", "priority": 0,
                             "recipientKeys": [.string(verkey)], "routingKeys": [], "serviceEndpoint": .string(endpoint)]],
            ]
            return [
                "@type": "https://didcomm.org/connections/1.0/request", "@id": .string(id), "label": "Hand-made invitee",
                "connection": ["DID": .string(did), "DIDDoc": doc],
                "~thread": ["thid": .string(id), "pthid": .string(invitationId)],
            ]
        }

        func pack(_ message: JSONValue, to recipient: String) throws -> [UInt8] {
            try DIDCommEnvelope.pack(message.serialized(), to: [recipient], from: key)
        }
    }

    static func invitationKey(_ created: JSONValue) throws -> String {
        try #require(created["invitation"]?["recipientKeys"]?.arrayValue?.first?.stringValue)
    }

    /// Polls `connections.get` (20 s at most) until the state is `state`.
    /// Whether a basic message with `content` reaches `client`'s mailbox within 10 s.
    static func receives(_ client: AerieClient, content: String) async throws -> Bool {
        for _ in 0..<200 {
            if try await SenderAuthenticationTests.downloaded(client).contains(where: { $0.content == content }) { return true }
            try await Task.sleep(for: .milliseconds(50))
        }
        return false
    }

    /// Basic messages both ways between `client`'s connection and ACA-Py's: ACA-Py's
    /// `send-message` arrives in the mailbox, and `messages.sendText` is taken by ACA-Py (MS-102).
    static func exchangeBasicMessages(
        _ client: AerieClient, connectionId: String, agent: ACAPyAgent, acapyConnection: String,
        sourceLocation: SourceLocation = #_sourceLocation
    ) async throws {
        let inbound = "hello from ACA-Py \(UUID().uuidString.prefix(8))"
        _ = try await agent.admin("POST", "/connections/\(acapyConnection)/send-message", body: ["content": .string(inbound)])
        #expect(try await receives(client, content: inbound), "ACA-Py's basic message never arrived", sourceLocation: sourceLocation)
        let sent = try await client.call("messages.sendText", params: ["connectionId": .string(connectionId), "content": "hi ACA-Py"])
        let uid = try #require(sent["uid"]?.stringValue, sourceLocation: sourceLocation)
        #expect(try await SendMessagesTests.waitForStatus(client, uid: uid, status: "MS-102") != nil, sourceLocation: sourceLocation)
    }

    static func waitForState(_ client: AerieClient, _ connectionId: String, _ state: Int) async throws -> JSONValue {
        var last = JSONValue.null
        for _ in 0..<400 {
            last = try await client.call("connections.get", params: ["connectionId": .string(connectionId)])
            if last["state"] == .int(Int64(state)) { return last }
            try await Task.sleep(for: .milliseconds(50))
        }
        Issue.record("connection \(connectionId) never reached state \(state): \(last)")
        return last
    }

    @Test func aRequestIsAnsweredSignedByTheInvitationKeyAndTheFirstMessageAccepts() async throws {
        let inbox = try await PeerInbox()
        defer { Task { await inbox.stop() } }
        try await LiveServer.with(server: { $0.outbound.allowPrivateURLs = true }) { server in
            let (alice, aliceID) = try await server.tenantClient(label: "alice")
            let (bob, bobID) = try await server.tenantClient(label: "bob")
            defer { Task { await alice.close(); await bob.close() } }
            let created = try await alice.call("connections.createInvitation", params: ["label": "Alice Inc", "alias": "shop"])
            let connectionId = try #require(created["connectionId"]?.stringValue)
            let invitation = try #require(created["invitation"])
            let invitationKey = try Self.invitationKey(created)
            let invitationId = try #require(invitation["@id"]?.stringValue)
            #expect(created["state"] == 1)
            #expect(created["stateName"] == "initialized")
            #expect(invitation["@type"] == "https://didcomm.org/connections/1.0/invitation")
            #expect(invitation["label"] == "Alice Inc")
            #expect(invitation["serviceEndpoint"]?.stringValue == "http://127.0.0.1:\(server.didcommPort)")
            // The URL carries the same invitation, read back by Aerie's own parser.
            let url = try #require(created["invitationUrl"]?.stringValue)
            #expect(url.contains("?c_i="))
            let parsed = try await bob.call("connections.parseInvitation", params: ["url": .string(url)])
            #expect(parsed["kind"] == "aries")
            #expect(parsed["recipientKeys"] == [.string(invitationKey)])

            let invitee = Invitee(key: inbox.key, endpoint: inbox.url)
            let request = invitee.request(invitationId: invitationId)
            #expect(try await DIDCommEndpointTests.post(try invitee.pack(request, to: invitationKey), to: server.didcommPort) == 202)
            let response = try #require(
                try await inbox.wait { $0["@type"]?.stringValue == "https://didcomm.org/connections/1.0/response" },
                "no Response reached the invitee")
            #expect(response.message["~thread"]?["thid"] == request["@id"])
            // Signed by the invitation key; sent from the new pairwise key its DIDDoc names.
            let verified = try SignatureDecorator(json: try #require(response.message["connection~sig"]))
                .verify(expectedSigner: invitationKey)
            let pwDid = try #require(verified.value["DID"]?.stringValue)
            let pwVerkey = try #require(
                verified.value["DIDDoc"]?["publicKey"]?.arrayValue?.first?["publicKeyBase58"]?.stringValue)
            #expect(pwVerkey != invitationKey)
            #expect(response.senderVerkey == pwVerkey)
            #expect(verified.value["DIDDoc"]?["service"]?.arrayValue?.first?["serviceEndpoint"] == invitation["serviceEndpoint"])

            let responded = try await alice.call("connections.get", params: ["connectionId": .string(connectionId)])
            #expect(responded["state"] == 3)
            #expect(responded["stateName"] == "responded")
            #expect(responded["role"] == "inviter")
            #expect(responded["alias"] == "shop")
            #expect(responded["pwDid"]?.stringValue == pwDid)
            #expect(responded["theirDid"]?.stringValue == invitee.did)
            #expect(responded["label"] == "Hand-made invitee")
            // Not established yet: nothing can be sent.
            await #expect(throws: AerieClientError.self) {
                _ = try await alice.call("messages.sendText", params: ["connectionId": .string(connectionId), "content": "too early"])
            }

            // The invitee's first message (a ping asking for a response) accepts the connection
            // and is answered.
            let ping: JSONValue = ["@type": "https://didcomm.org/trust_ping/1.0/ping", "@id": "ping-1", "response_requested": true]
            #expect(try await DIDCommEndpointTests.post(try invitee.pack(ping, to: pwVerkey), to: server.didcommPort) == 202)
            let accepted = try await Self.waitForState(alice, connectionId, 4)
            #expect(accepted["stateName"] == "accepted")
            #expect(try await inbox.wait { $0["~thread"]?["thid"] == "ping-1" } != nil, "the ping was not answered")

            // Both ways now, and bob (another tenant) sees none of it.
            _ = try await alice.call("messages.sendText", params: ["connectionId": .string(connectionId), "content": "welcome"])
            #expect(try await inbox.wait { $0["content"] == "welcome" } != nil)
            #expect(try await DIDCommEndpointTests.mailboxCount(server, tenant: bobID) == 0)
            #expect(try await DIDCommEndpointTests.mailboxCount(server, tenant: aliceID) >= 2)
            #expect(try await bob.call("connections.list")["connections"]?.arrayValue?.isEmpty == true)
            await #expect(throws: AerieClientError.self) {
                _ = try await bob.call("connections.get", params: ["connectionId": .string(connectionId)])
            }
        }
    }

    @Test func aSingleUseInvitationTakesOneRequestAndRefusesStrangersAndForgeries() async throws {
        let inbox = try await PeerInbox()
        defer { Task { await inbox.stop() } }
        try await LiveServer.with(server: { $0.outbound.allowPrivateURLs = true }) { server in
            let (alice, aliceID) = try await server.tenantClient(label: "alice")
            defer { Task { await alice.close() } }
            let port = server.didcommPort

            // A forged Request: its DIDDoc names a key other than the one that packed it (someone
            // replaying another invitee's Request, or claiming a key they do not hold); and an
            // anoncrypted one. Both refused; nothing stored; the invitation stays open.
            let open = try await alice.call("connections.createInvitation")
            let openKey = try Self.invitationKey(open)
            let openId = try #require(open["invitation"]?["@id"]?.stringValue)
            let victim = Invitee(key: .generate(), endpoint: inbox.url)
            let forger = Invitee(key: .generate(), endpoint: inbox.url)
            let before = try await DIDCommEndpointTests.mailboxCount(server, tenant: aliceID)
            let forged = forger.request(invitationId: openId, naming: victim.verkey)
            #expect(try await DIDCommEndpointTests.post(try forger.pack(forged, to: openKey), to: port) == 400)
            let anon = try DIDCommEnvelope.pack(victim.request(invitationId: openId).serialized(), to: [openKey], from: nil)
            #expect(try await DIDCommEndpointTests.post(anon, to: port) == 400)
            // Not a Request: an invitation key takes nothing else.
            let ping: JSONValue = ["@type": "https://didcomm.org/trust_ping/1.0/ping", "@id": "p", "response_requested": true]
            #expect(try await DIDCommEndpointTests.post(try victim.pack(ping, to: openKey), to: port) == 400)
            #expect(try await DIDCommEndpointTests.mailboxCount(server, tenant: aliceID) == before)
            #expect(try await alice.call("connections.get", params: ["connectionId": open["connectionId"]!])["state"] == 1)

            // The genuine Request uses it; a stranger's later Request (and the same invitee's
            // second one) to the used invitation are refused.
            #expect(try await DIDCommEndpointTests.post(try victim.pack(victim.request(invitationId: openId), to: openKey), to: port) == 202)
            #expect(try await Self.waitForState(alice, try #require(open["connectionId"]?.stringValue), 3)["theirDid"]?.stringValue == victim.did)
            let stranger = Invitee(key: .generate(), endpoint: inbox.url)
            #expect(try await DIDCommEndpointTests.post(try stranger.pack(stranger.request(invitationId: openId), to: openKey), to: port) == 400)
            #expect(try await DIDCommEndpointTests.post(try victim.pack(victim.request(invitationId: openId), to: openKey), to: port) == 400)
            let connections = try await alice.call("connections.list")["connections"]?.arrayValue ?? []
            #expect(connections.count == 1)
            #expect(connections.first?["theirDid"]?.stringValue == victim.did)
        }
    }

    @Test func concurrentRequestsToOneSingleUseInvitationMakeOneConnection() async throws {
        var opened: [PeerInbox] = []
        for _ in 0..<8 { opened.append(try await PeerInbox()) }
        let inboxes = opened
        defer { Task { for inbox in inboxes { await inbox.stop() } } }
        try await LiveServer.with(server: { $0.outbound.allowPrivateURLs = true }) { server in
            let (alice, aliceID) = try await server.tenantClient(label: "alice")
            defer { Task { await alice.close() } }
            let created = try await alice.call("connections.createInvitation")
            let key = try Self.invitationKey(created)
            let invitationId = try #require(created["invitation"]?["@id"]?.stringValue)
            let invitees = inboxes.map { Invitee(key: $0.key, endpoint: $0.url) }
            let envelopes = try invitees.map { try $0.pack($0.request(invitationId: invitationId), to: key) }
            let port = server.didcommPort
            let statuses = try await withThrowingTaskGroup(of: Int.self) { group in
                for envelope in envelopes { group.addTask { try await DIDCommEndpointTests.post(envelope, to: port) } }
                return try await group.reduce(into: [Int]()) { $0.append($1) }
            }
            #expect(statuses.filter { $0 == 202 }.count == 1, "\(statuses)")
            #expect(statuses.filter { $0 == 400 }.count == invitees.count - 1, "\(statuses)")
            let connections = try await alice.call("connections.list")["connections"]?.arrayValue ?? []
            #expect(connections.count == 1)
            #expect(connections.first?["state"] == 3)
            #expect(invitees.map(\.did).contains(connections.first?["theirDid"]?.stringValue ?? "-"))
            #expect(try await DIDCommEndpointTests.mailboxCount(server, tenant: aliceID) == 1)
            // The winner got its Response; the others got nothing.
            let winner = try #require(invitees.firstIndex { $0.did == connections.first?["theirDid"]?.stringValue })
            #expect(try await inboxes[winner].wait { $0["@type"]?.stringValue?.hasSuffix("/response") == true } != nil)
            #expect(inboxes.indices.filter { $0 != winner }.allSatisfy { inboxes[$0].received.isEmpty })
        }
    }

    @Test func aMultiUseInvitationMakesAConnectionPerRequest() async throws {
        let inbox = try await PeerInbox()
        defer { Task { await inbox.stop() } }
        try await LiveServer.with(server: { $0.outbound.allowPrivateURLs = true }) { server in
            let (alice, _) = try await server.tenantClient(label: "alice")
            defer { Task { await alice.close() } }
            let created = try await alice.call("connections.createInvitation", params: ["multiUse": true, "alias": "desk"])
            #expect(created["multiUse"] == true)
            let key = try Self.invitationKey(created)
            let invitationId = try #require(created["invitation"]?["@id"]?.stringValue)
            let invitees = (0..<3).map { _ in Invitee(key: .generate(), endpoint: inbox.url) }
            for invitee in invitees {
                #expect(try await DIDCommEndpointTests.post(try invitee.pack(invitee.request(invitationId: invitationId), to: key), to: server.didcommPort) == 202)
            }
            let connections = try await alice.call("connections.list")["connections"]?.arrayValue ?? []
            let made = connections.filter { $0["state"] == 3 }
            #expect(made.count == 3)
            #expect(Set(made.compactMap { $0["theirDid"]?.stringValue }) == Set(invitees.map(\.did)))
            #expect(Set(made.compactMap { $0["pwVerkey"]?.stringValue }).count == 3)
            #expect(!made.contains { $0["pwVerkey"]?.stringValue == key })
            #expect(made.allSatisfy { $0["role"] == "inviter" && $0["alias"] == "desk" && $0["invitationId"]?.stringValue == invitationId })
            // The invitation itself stays open.
            let invitation = try await alice.call("connections.get", params: ["connectionId": created["connectionId"]!])
            #expect(invitation["state"] == 1)
            #expect(invitation["pwVerkey"]?.stringValue == key)
        }
    }

    /// Deleting an open invitation revokes it (its key goes with it: a Request finds no one);
    /// bad params are refused with the field; rpc.discover describes the method; the invitee's
    /// problem report about our Response fails the inviter's side.
    @Test func deleteRevokesParamsAreCheckedAndAProblemReportFails() async throws {
        let inbox = try await PeerInbox()
        defer { Task { await inbox.stop() } }
        try await LiveServer.with(server: { $0.outbound.allowPrivateURLs = true }) { server in
            let (alice, _) = try await server.tenantClient(label: "alice")
            defer { Task { await alice.close() } }
            let port = server.didcommPort
            let invitee = Invitee(key: inbox.key, endpoint: inbox.url)

            let revoked = try await alice.call("connections.createInvitation", params: ["multiUse": true])
            _ = try await alice.call("connections.delete", params: ["connectionId": revoked["connectionId"]!])
            let revokedId = try #require(revoked["invitation"]?["@id"]?.stringValue)
            #expect(try await DIDCommEndpointTests.post(
                try invitee.pack(invitee.request(invitationId: revokedId), to: try Self.invitationKey(revoked)), to: port) == 400)

            await expectCode("invalid_params") { try await alice.call("connections.createInvitation", params: ["label": ""]) }
            await expectCode("invalid_params") {
                try await alice.call("connections.createInvitation", params: ["alias": .string(String(repeating: "a", count: 501))])
            }
            let doc = try await alice.call("rpc.discover")
            let method = doc["methods"]?.arrayValue?.first { $0["name"] == "connections.createInvitation" }
            #expect(Set(method?["params"]?.arrayValue?.compactMap { $0["name"]?.stringValue } ?? []) == ["label", "multiUse", "alias", "maxUses", "expiresAt"])

            let created = try await alice.call("connections.createInvitation")
            let connectionId = try #require(created["connectionId"]?.stringValue)
            let request = invitee.request(invitationId: try #require(created["invitation"]?["@id"]?.stringValue))
            #expect(try await DIDCommEndpointTests.post(try invitee.pack(request, to: try Self.invitationKey(created)), to: port) == 202)
            let responded = try await Self.waitForState(alice, connectionId, 3)
            let report: JSONValue = [
                "@type": "https://didcomm.org/connections/1.0/problem_report", "@id": "report-1",
                "~thread": ["thid": request["@id"]!], "explain": "your response did not verify",
            ]
            let pwVerkey = try #require(responded["pwVerkey"]?.stringValue)
            #expect(try await DIDCommEndpointTests.post(try invitee.pack(report, to: pwVerkey), to: port) == 202)
            let failed = try await Self.waitForState(alice, connectionId, 0)
            #expect(failed["stateName"] == "failed")
            #expect(failed["failureReason"] == "your response did not verify")
        }
    }

    /// Item 5: two tenants of one Aerie connect over connections/1.0 through the server's own
    /// HTTP endpoint, exchange basic messages both ways, and a third tenant sees none of it.
    @Test func twoTenantsConnectAndTalkAndAThirdSeesNothing() async throws {
        try await LiveServer.with(server: { $0.outbound.allowPrivateURLs = true }) { server in
            let (alice, aliceID) = try await server.tenantClient(label: "alice")
            let (bob, bobID) = try await server.tenantClient(label: "bob")
            let (carol, carolID) = try await server.tenantClient(label: "carol")
            defer { Task { await alice.close(); await bob.close(); await carol.close() } }
            let created = try await alice.call("connections.createInvitation", params: ["label": "Alice"])
            let aliceSide = try #require(created["connectionId"]?.stringValue)
            let accepted = try await bob.call(
                "connections.accept", params: ["url": created["invitationUrl"]!, "wait": true, "timeoutSeconds": 30, "label": "Bob"])
            #expect(accepted["state"] == 4, "\(accepted)")
            #expect(accepted["role"] == "invitee")
            let bobSide = try #require(accepted["connectionId"]?.stringValue)
            // Bob's trust ping after the Response accepts Alice's side.
            let aliceView = try await Self.waitForState(alice, aliceSide, 4)
            #expect(aliceView["label"] == "Bob")
            #expect(aliceView["theirDid"] == accepted["pwDid"])
            #expect(accepted["theirDid"] == aliceView["pwDid"])

            _ = try await alice.call("messages.sendText", params: ["connectionId": .string(aliceSide), "content": "hi Bob"])
            _ = try await bob.call("messages.sendText", params: ["connectionId": .string(bobSide), "content": "hi Alice"])
            #expect(try await Self.receives(bob, content: "hi Bob"))
            #expect(try await Self.receives(alice, content: "hi Alice"))
            #expect(try await SenderAuthenticationTests.downloaded(bob).first { $0.content == "hi Bob" }?.sender == aliceView["pwDid"]?.stringValue)

            // Carol: nothing of theirs, not even by id.
            #expect(try await carol.call("connections.list")["connections"]?.arrayValue?.isEmpty == true)
            #expect(try await DIDCommEndpointTests.mailboxCount(server, tenant: carolID) == 0)
            for id in [aliceSide, bobSide] {
                await #expect(throws: AerieClientError.self) {
                    _ = try await carol.call("connections.get", params: ["connectionId": .string(id)])
                }
            }
            #expect(try await DIDCommEndpointTests.mailboxCount(server, tenant: aliceID) > 0)
            #expect(try await DIDCommEndpointTests.mailboxCount(server, tenant: bobID) > 0)
        }
    }

    /// ACA-Py 1.2.7 as the invitee: its `receive-invitation` of Aerie's invitation reaches
    /// `active` (it pings after our Response; our answer completes it), Aerie's side `accepted`.
    @Test func acapyAsInviteeReachesActive() async throws {
        try await ACAPyConnectionTests.withAerieAndACAPy { server, agent in
            let (alice, _) = try await server.tenantClient(label: "alice")
            let (bob, _) = try await server.tenantClient(label: "bob")
            defer { Task { await alice.close(); await bob.close() } }
            let created = try await alice.call("connections.createInvitation", params: ["label": "Aerie Alice"])
            let connectionId = try #require(created["connectionId"]?.stringValue)
            let theirs = try await agent.admin(
                "POST", "/connections/receive-invitation?auto_accept=true", body: created["invitation"])
            let acapyConnection = try #require(theirs["connection_id"]?.stringValue)
            let active = try await agent.waitForConnection(acapyConnection, states: ["active", "completed"])
            #expect(active["their_label"] == "Aerie Alice")
            let ours = try await Self.waitForState(alice, connectionId, 4)
            #expect(ours["role"] == "inviter")
            #expect(ours["theirDid"]?.stringValue == active["my_did"]?.stringValue)
            #expect(ours["pwDid"]?.stringValue == active["their_did"]?.stringValue)

            // Messages both ways over it.
            try await Self.exchangeBasicMessages(alice, connectionId: connectionId, agent: agent, acapyConnection: acapyConnection)
            #expect(try await bob.call("connections.list")["connections"]?.arrayValue?.isEmpty == true)
        }
    }
}
