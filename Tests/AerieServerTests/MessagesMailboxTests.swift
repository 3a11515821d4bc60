import AerieClient
import AerieCore
import AerieCrypto
import AerieStore
import AerieTesting
import Foundation
import Logging
import Testing

/// `messages.*` through a live server, with messages packed as a peer would and posted to the
/// inbound endpoint.
@Suite(.timeLimit(.minutes(10))) struct MessagesMailboxTests {
    struct Connection {
        let id: String
        let pwDid: String
        let pwVerkey: String
        let peer: Ed25519KeyPair
        var peerDid: String? = nil
    }

    /// An established connection to a `TestPeer` (the endpoint takes only the peer's messages).
    static func connect(_ client: AerieClient) async throws -> Connection {
        let peer = try await TestPeer.connect(client)
        return Connection(id: peer.connectionId, pwDid: peer.pwDid, pwVerkey: peer.pwVerkey, peer: peer.key, peerDid: peer.did)
    }

    static func connect(_ client: AerieClient, on server: LiveServer) async throws -> Connection {
        try await connect(client)
    }

    /// Sets a connection's peer verkey, as an accepted Response would, on a connection still
    /// connecting, for tests that need a peer key before state 4 (through the tenant's own
    /// store: the verkey is sealed).
    static func setPeer(_ verkey: String, of connectionId: String, tenant: TenantID, on server: LiveServer) async throws {
        let id = try #require(UUID(uuidString: connectionId))
        try await WalletFixture.withContext(of: tenant, on: server) { context in
            try await context.database.transaction { tx in
                guard var record = try tx.connections.getForUpdate(id) else { throw AerieError.notFound("no connection \(id)") }
                record.theirVerkey = verkey
                _ = try tx.connections.update(record)
            }
        }
    }

    @discardableResult
    static func send(_ type: String, id: String, to connection: Connection, port: Int, extra: [String: JSONValue] = [:]) async throws -> Int {
        var message: [String: JSONValue] = ["@type": .string(type), "@id": .string(id)]
        message.merge(extra) { $1 }
        let envelope = try DIDCommEnvelope.pack(
            Array(JSONValue.object(message).jsonString.utf8), to: [connection.pwVerkey], from: connection.peer)
        return try await DIDCommEndpointTests.post(envelope, to: port)
    }

    /// uid by `@id`, from a download answer.
    static func uids(_ download: JSONValue) throws -> [String: String] {
        var result: [String: String] = [:]
        for group in download.arrayValue ?? [] {
            for msg in group["msgs"]?.arrayValue ?? [] {
                let payload = try JSONValue(parsing: Array(try #require(msg["decryptedPayload"]?.stringValue).utf8))
                result[try #require(payload["@id"]?.stringValue)] = msg["uid"]?.stringValue
            }
        }
        return result
    }

    /// `[pairwiseDID: [@id]]` in the answer's order, flattened as "did:id".
    static func ids(_ download: JSONValue) throws -> [String] {
        try (download.arrayValue ?? []).flatMap { group in
            try (group["msgs"]?.arrayValue ?? []).map { msg in
                let payload = try JSONValue(parsing: Array(try #require(msg["decryptedPayload"]?.stringValue).utf8))
                return "\(group["pairwiseDID"]?.stringValue ?? "?"):\(payload["@id"]?.stringValue ?? "?")"
            }
        }
    }

    static func expectInvalid(_ client: AerieClient, _ method: String, _ params: JSONValue) async {
        do {
            _ = try await client.call(method, params: params)
            Issue.record("expected invalid params for \(params)")
        } catch let error as AerieClientError {
            #expect(error.code == -32602, "\(params)")
        } catch {
            Issue.record("\(error)")
        }
    }

    /// The download is written as text, not as a value: over a raw line it is one valid JSON-RPC
    /// response line in the serializer's compact, sorted form, its id echoed as sent (escapes
    /// included), alone or in a batch, and what AerieClient reads from it is the same value; a
    /// notification gets no line.
    @Test func downloadOverARawLineIsOneValidResponse() async throws {
        try await LiveServer.with(server: { $0.outbound.allowPrivateURLs = true; $0.delivery.enabled = false }) { server in
            let admin = try await server.adminClient()
            let created = try await admin.call("admin.tenants.create", params: ["label": "raw"])
            await admin.close()
            let token = try #require(created["token"]?.stringValue)
            let client = try await server.client()
            try await client.authenticate(token: token)
            defer { Task { await client.close() } }
            let c1 = try await Self.connect(client)
            let awkward = "quote \" backslash \\ newline \n control \u{1} é 😀 \u{2028} </script>"
            #expect(try await Self.send("https://didcomm.org/basicmessage/1.0/message", id: "b1", to: c1, port: server.didcommPort,
                                        extra: ["content": .string(awkward), "~thread": ["thid": "x"]]) == 202)
            #expect(try await Self.send("https://didcomm.org/issue-credential/1.0/offer-credential", id: "o1", to: c1, port: server.didcommPort) == 202)
            let seen = try await client.call("messages.download")
            #expect(try Self.ids(seen) == ["\(c1.pwDid):b1", "\(c1.pwDid):o1"])
            let b1 = try #require(seen[0]?["msgs"]?[0]?["decryptedPayload"]?.stringValue)
            #expect(try JSONValue(parsing: b1)["content"] == .string(awkward))

            let raw = try await RawLineClient.connect(port: server.port)
            defer { Task { await raw.close() } }
            try await raw.send(#"{"jsonrpc":"2.0","id":0,"method":"session.authenticate","params":{"token":"\#(token)"}}"# + "\n")
            #expect(try JSONValue(parsing: try #require(await raw.readLine()))["result"] != nil)

            try await raw.send(#"{"jsonrpc":"2.0","id":"d\"1\\ é","method":"messages.download"}"# + "\n")
            let line = try #require(await raw.readLine())
            let reply = try JSONValue(parsing: line)
            #expect(line == reply.jsonString)
            #expect(reply == ["jsonrpc": "2.0", "id": "d\"1\\ é", "result": seen])

            // A notification: no line (the ping's answer is the next one).
            try await raw.send(#"{"jsonrpc":"2.0","method":"messages.download"}"# + "\n")
            try await raw.send(#"{"jsonrpc":"2.0","id":7,"method":"system.ping"}"# + "\n")
            #expect(try JSONValue(parsing: try #require(await raw.readLine())) == ["jsonrpc": "2.0", "id": 7, "result": "pong"])

            try await raw.send(
                #"[{"jsonrpc":"2.0","id":1,"method":"messages.download"},{"jsonrpc":"2.0","id":2,"method":"system.ping"},"#
                    + #"{"jsonrpc":"2.0","id":3,"method":"messages.downloadPage","params":{"limit":1}},"#
                    + #"{"jsonrpc":"2.0","method":"messages.download"}]"# + "\n")
            let batchLine = try #require(await raw.readLine())
            let batch = try JSONValue(parsing: batchLine)
            #expect(batchLine == batch.jsonString)
            guard case .array(let responses) = batch else {
                Issue.record("not a batch answer: \(batchLine.prefix(200))")
                return
            }
            var byID: [Int64: JSONValue] = [:]
            for response in responses { if let id = response["id"]?.intValue { byID[id] = response["result"] } }
            #expect(responses.count == 3)
            #expect(byID[1] == seen)
            #expect(byID[2] == "pong")
            let page = try #require(byID[3])
            #expect(page["messages"] == .array([["msgs": .array([try #require(seen[0]?["msgs"]?[0])]), "pairwiseDID": .string(c1.pwDid)]]))
            #expect(page["nextCursor"]?.stringValue?.isEmpty == false)
            let next = try await client.call("messages.downloadPage", params: ["limit": 1, "cursor": try #require(page["nextCursor"])])
            #expect(try Self.ids(try #require(next["messages"])) == ["\(c1.pwDid):o1"])
        }
    }

    @Test func downloadFiltersUpdatesAndPagesPerTenant() async throws {
        try await LiveServer.with(server: { $0.outbound.allowPrivateURLs = true; $0.delivery.enabled = false }) { server in
            let (alice, aliceID) = try await server.tenantClient(label: "alice")
            let (bob, _) = try await server.tenantClient(label: "bob")
            defer { Task { await alice.close(); await bob.close() } }
            let c1 = try await Self.connect(alice)
            let c2 = try await Self.connect(alice)
            let c3 = try await Self.connect(bob)
            // A DID that is easy to read in the assertions below, in place of the Response's did:peer:2.
            let runtime = server.database.runtime(maxConnections: 1)
            try await runtime.withSession(tenant: aliceID) { session in
                _ = try session.execute(
                    "UPDATE aerie.connections SET their_did = 'TheirDid1111111111111', their_did_sealed = NULL WHERE id = $1::uuid", [.text(c1.id)])
            }
            await runtime.shutdown()

            let port = server.didcommPort
            #expect(try await Self.send("https://didcomm.org/issue-credential/1.0/offer-credential", id: "o1", to: c1, port: port) == 202)
            #expect(try await Self.send("https://didcomm.org/basicmessage/1.0/message", id: "b1", to: c1, port: port,
                                        extra: ["content": "hello", "~thread": ["thid": "o1"]]) == 202)
            // A repeated delivery is stored once.
            #expect(try await Self.send("https://didcomm.org/issue-credential/1.0/offer-credential", id: "o1", to: c1, port: port) == 202)
            #expect(try await Self.send("https://didcomm.org/present-proof/1.0/request-presentation", id: "p1", to: c2, port: port) == 202)
            #expect(try await Self.send("did:sov:BzCbsNYhMrjHiqZDTUASHg;spec/questionanswer/1.0/question", id: "q1", to: c2, port: port) == 202)
            #expect(try await Self.send("https://didcomm.org/trust_ping/1.0/ping", id: "t1", to: c3, port: port) == 202)

            // Everything pending, grouped by connection in arrival order, in the seed's shape.
            let all = try await alice.call("messages.download")
            #expect(try Self.ids(all) == ["\(c1.pwDid):o1", "\(c1.pwDid):b1", "\(c2.pwDid):p1", "\(c2.pwDid):q1"])
            let first = try #require(all[0]?["msgs"]?[0])
            #expect(Set(first.objectValue?.keys.map { $0 } ?? []) == [
                "statusCode", "payload", "senderDID", "uid", "type", "refMsgId", "deliveryDetails", "decryptedPayload",
            ])
            #expect(first["statusCode"] == "MS-103")
            #expect(first["payload"] == .null)
            #expect(first["senderDID"] == "TheirDid1111111111111")
            #expect(first["type"] == "credOffer")
            #expect(first["refMsgId"] == .null)
            #expect(first["deliveryDetails"] == [])
            #expect(all[0]?["msgs"]?[1]?["type"] == "basicMessage")
            #expect(all[0]?["msgs"]?[1]?["refMsgId"] == "o1")
            #expect(all[1]?["msgs"]?[0]?["type"] == "proofReq")
            // The peer's DID from its (hand-made) Response: the sender is known, and authenticated.
            #expect(all[1]?["msgs"]?[0]?["senderDID"] == c2.peerDid.map { .string($0) })
            #expect(all[1]?["msgs"]?[1]?["type"] == "question")
            let q1Payload = try JSONValue(parsing: Array(try #require(all[1]?["msgs"]?[1]?["decryptedPayload"]?.stringValue).utf8))
            #expect(q1Payload["@type"] == "did:sov:BzCbsNYhMrjHiqZDTUASHg;spec/questionanswer/1.0/question")
            let aliceUids = try Self.uids(all)

            let bobAll = try await bob.call("messages.download")
            #expect(try Self.ids(bobAll) == ["\(c3.pwDid):t1"])
            #expect(bobAll[0]?["msgs"]?[0]?["type"] == "trustPing")
            let pingUid = try #require(try Self.uids(bobAll)["t1"])

            // Filters, alone and combined.
            #expect(try Self.ids(try await alice.call("messages.download", params: ["pairwiseDids": .string(c2.pwDid)]))
                == ["\(c2.pwDid):p1", "\(c2.pwDid):q1"])
            let b1 = try #require(aliceUids["b1"]), p1 = try #require(aliceUids["p1"]), o1 = try #require(aliceUids["o1"])
            #expect(try Self.ids(try await alice.call("messages.download", params: ["uids": .string("\(b1),\(p1)")]))
                == ["\(c1.pwDid):b1", "\(c2.pwDid):p1"])
            #expect(try await alice.call("messages.download", params: ["uids": [.string(b1)], "pairwiseDids": [.string(c2.pwDid)]]) == JSONValue.array([]))
            #expect(try Self.ids(try await alice.call(
                "messages.download", params: ["uids": [.string(b1), .string(p1)], "pairwiseDids": [.string(c1.pwDid)]]))
                == ["\(c1.pwDid):b1"])
            #expect(try await alice.call("messages.download", params: ["status": "MS-106"]) == JSONValue.array([]))
            // Nothing of Bob's reaches Alice, whatever she names.
            #expect(try await alice.call("messages.download", params: ["uids": [.string(pingUid)]]) == JSONValue.array([]))
            #expect(try await alice.call("messages.download", params: ["pairwiseDids": [.string(c3.pwDid)]]) == JSONValue.array([]))
            #expect(try await bob.call("messages.download", params: ["uids": [.string(o1)]]) == JSONValue.array([]))

            // updateStatus: valid, foreign (Bob's), malformed, and another connection's uids.
            let update: JSONValue = [
                "status": "MS-106",
                "messages": [
                    ["pairwiseDID": .string(c1.pwDid), "uids": [.string(o1), .string(pingUid), "junk"]],
                    ["pairwiseDID": .string(c2.pwDid), "uids": [.string(b1)]],
                ],
            ]
            let updated = try await alice.call("messages.updateStatus", params: update)
            #expect(updated["updated"] == 1)
            #expect(updated["notFound"] == [
                ["pairwiseDID": .string(c1.pwDid), "uids": [.string(pingUid), "junk"]],
                ["pairwiseDID": .string(c2.pwDid), "uids": [.string(b1)]],
            ])
            #expect(try await alice.call("messages.updateStatus", params: update) == updated)
            #expect(try Self.ids(try await alice.call("messages.download")) == ["\(c1.pwDid):b1", "\(c2.pwDid):p1", "\(c2.pwDid):q1"])
            let reviewed = try await alice.call("messages.download", params: ["status": "MS-106"])
            #expect(try Self.ids(reviewed) == ["\(c1.pwDid):o1"])
            #expect(reviewed[0]?["msgs"]?[0]?["statusCode"] == "MS-106")
            #expect(try Self.ids(try await bob.call("messages.download")) == ["\(c3.pwDid):t1"])
            // Bob cannot review Alice's message through his own connection either.
            let bobUpdate = try await bob.call(
                "messages.updateStatus", params: ["status": "MS-106", "messages": [["pairwiseDID": .string(c3.pwDid), "uids": [.string(p1)]]]])
            #expect(bobUpdate["updated"] == 0)
            #expect(try Self.ids(try await alice.call("messages.download", params: ["uids": [.string(p1)]])) == ["\(c2.pwDid):p1"])

            // Paging in arrival order, with a message arriving between pages.
            let both: JSONValue = ["MS-103", "MS-106"]
            let page1 = try await alice.call("messages.downloadPage", params: ["status": both, "limit": 2])
            #expect(try Self.ids(try #require(page1["messages"])) == ["\(c1.pwDid):o1", "\(c1.pwDid):b1"])
            let cursor1 = try #require(page1["nextCursor"]?.stringValue)
            #expect(try await Self.send("https://didcomm.org/notification/1.0/ack", id: "a1", to: c1, port: port) == 202)
            let page2 = try await alice.call("messages.downloadPage", params: ["status": both, "limit": 2, "cursor": .string(cursor1)])
            #expect(try Self.ids(try #require(page2["messages"])) == ["\(c2.pwDid):p1", "\(c2.pwDid):q1"])
            let page3 = try await alice.call(
                "messages.downloadPage", params: ["status": both, "limit": 2, "cursor": try #require(page2["nextCursor"])])
            #expect(try Self.ids(try #require(page3["messages"])) == ["\(c1.pwDid):a1"])
            #expect(page3["messages"]?[0]?["msgs"]?[0]?["type"] == "ack")
            #expect(page3["nextCursor"] == .null)
            // Bob's cursor space is his own.
            let bobPage = try await bob.call("messages.downloadPage", params: ["status": both, "cursor": .string(cursor1)])
            #expect(try Self.ids(try #require(bobPage["messages"])) == ["\(c3.pwDid):t1"])

            // Invalid params name the field.
            await Self.expectInvalid(alice, "messages.download", ["status": "MS-107"])
            await Self.expectInvalid(alice, "messages.download", ["limit": 501])
            await Self.expectInvalid(alice, "messages.downloadPage", ["cursor": "nope"])
            await Self.expectInvalid(alice, "messages.updateStatus", ["status": "MS-100", "messages": []])
        }
    }

    @Test func retentionPurgesOnlyOldReviewedMessagesOfEveryTenant() async throws {
        try await LiveServer.with(server: {
            $0.outbound.allowPrivateURLs = true
            $0.delivery.enabled = false
            $0.tenants.messageRetentionDays = 30
            $0.tenants.retentionSweepInterval = .milliseconds(100)
        }) { server in
            let (alice, aliceID) = try await server.tenantClient(label: "alice")
            let (bob, bobID) = try await server.tenantClient(label: "bob")
            defer { Task { await alice.close(); await bob.close() } }
            let a = try await Self.connect(alice)
            let b = try await Self.connect(bob)
            let port = server.didcommPort
            for (id, connection) in [("old-reviewed", a), ("old-pending", a), ("new-reviewed", a), ("bob-old-reviewed", b), ("bob-old-pending", b)] {
                #expect(try await Self.send("https://didcomm.org/basicmessage/1.0/message", id: id, to: connection, port: port) == 202)
            }
            let aliceUids = try Self.uids(try await alice.call("messages.download"))
            let bobUids = try Self.uids(try await bob.call("messages.download"))
            for (client, did, uids) in [
                (alice, a.pwDid, [aliceUids["old-reviewed"], aliceUids["new-reviewed"]]), (bob, b.pwDid, [bobUids["bob-old-reviewed"]]),
            ] {
                let result = try await client.call(
                    "messages.updateStatus",
                    params: ["status": "MS-106", "messages": [["pairwiseDID": .string(did), "uids": .array(uids.map { .string($0 ?? "") })]]])
                #expect(result["updated"] == .int(Int64(uids.count)))
            }
            let runtime = server.database.runtime(maxConnections: 1)
            for tenant in [aliceID, bobID] {
                try await runtime.withSession(tenant: tenant) { session in
                    _ = try session.execute(
                        "UPDATE aerie.mailbox SET received_at = now() - interval '40 days' WHERE message_id LIKE '%old%'", [])
                }
            }
            await runtime.shutdown()

            let both: JSONValue = ["status": ["MS-103", "MS-106"]]
            var aliceLeft: Set<String> = []
            var bobLeft: Set<String> = []
            for _ in 0..<50 {
                aliceLeft = Set(try Self.uids(try await alice.call("messages.download", params: both)).keys)
                bobLeft = Set(try Self.uids(try await bob.call("messages.download", params: both)).keys)
                if aliceLeft.count == 2 && bobLeft.count == 1 { break }
                try await Task.sleep(for: .milliseconds(100))
            }
            #expect(aliceLeft == ["old-pending", "new-reviewed"])
            #expect(bobLeft == ["bob-old-pending"])
        }
    }
}

extension JSONValue {
    fileprivate var objectValue: [String: JSONValue]? {
        if case .object(let fields) = self { return fields }
        return nil
    }
    fileprivate subscript(index: Int) -> JSONValue? {
        guard let values = arrayValue, values.indices.contains(index) else { return nil }
        return values[index]
    }
}
