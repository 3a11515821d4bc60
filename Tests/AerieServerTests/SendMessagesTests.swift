import AerieClient
import AerieCore
import AerieCrypto
import AerieServer
import AerieStore
import AerieTesting
import Foundation
import Logging
import Synchronization
import Testing

/// `messages.send`, `messages.sendText`, trust pings and `connections.ping` through a live server,
/// with a `TestPeer` whose endpoint is a `PeerInbox` (the test opens what Aerie sends with the
/// peer's key), on real PostgreSQL.
@Suite(.timeLimit(.minutes(10))) struct SendMessagesTests {
    static let basicMessage = "https://didcomm.org/basicmessage/1.0/message"
    static let sentStatuses: JSONValue = ["MS-101", "MS-102", "MS-105"]

    static func configure(_ config: inout AerieConfiguration) {
        config.outbound.allowPrivateURLs = true
        config.delivery.horizon = .milliseconds(300)
        config.delivery.backoff = .milliseconds(100)
    }

    /// The messages of one connection in a download answer, by uid.
    static func messages(_ download: JSONValue) -> [String: JSONValue] {
        var result: [String: JSONValue] = [:]
        for group in download.arrayValue ?? [] {
            for msg in group["msgs"]?.arrayValue ?? [] { result[msg["uid"]?.stringValue ?? "?"] = msg }
        }
        return result
    }

    /// Downloads until the message `uid` has `status` (10 s at most); answers it.
    static func waitForStatus(_ client: AerieClient, uid: String, status: String) async throws -> JSONValue? {
        for _ in 0..<200 {
            let download = try await client.call("messages.download", params: ["uids": [.string(uid)], "status": sentStatuses])
            if let msg = messages(download)[uid], msg["statusCode"] == .string(status) { return msg }
            try await Task.sleep(for: .milliseconds(50))
        }
        return nil
    }

    static func expectError(_ code: Int, stable: String, field: String? = nil, _ call: () async throws -> JSONValue) async {
        do {
            let answer = try await call()
            Issue.record("expected \(stable), got \(answer)")
        } catch let error as AerieClientError {
            #expect(error.code == code, "\(error)")
            #expect(error.stableCode == stable, "\(error)")
            if let field { #expect(error.field == field, "\(error)") }
        } catch {
            Issue.record("\(error)")
        }
    }

    @Test func sendTextIsPackedForThePeerAndBecomesSent() async throws {
        let inbox = try await PeerInbox()
        try await LiveServer.with(server: Self.configure) { server in
            let (alice, _) = try await server.tenantClient(label: "alice")
            defer { Task { await alice.close() } }
            let seen = MessagesPushTests.Collector(alice)
            _ = try await alice.call("messages.subscribe")
            let peer = try await TestPeer.connect(alice, endpoint: inbox.url, key: inbox.key)

            let sent = try await alice.call(
                "messages.sendText", params: ["connectionId": .string(peer.connectionId), "content": "hello from Aerie"])
            #expect(sent["statusCode"] == "MS-101")
            #expect(sent["pairwiseDID"] == .string(peer.pwDid))
            let uid = try #require(sent["uid"]?.stringValue)
            let messageId = try #require(sent["@id"]?.stringValue)

            // The peer gets it authcrypted by our pairwise key, in RFC 0095's shape.
            let received = try #require(try await inbox.wait { $0["@id"] == .string(messageId) })
            #expect(received.senderVerkey == peer.pwVerkey)
            #expect(received.message["@type"] == .string(Self.basicMessage))
            #expect(received.message["content"] == "hello from Aerie")
            let sentTime = try #require(received.message["sent_time"]?.stringValue)
            #expect(sentTime.range(of: #"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{6}Z$"#, options: .regularExpression) != nil, "\(sentTime)")

            // MS-101 -> MS-102 once the endpoint took it, in the connection's history.
            let delivered = try #require(try await Self.waitForStatus(alice, uid: uid, status: "MS-102"))
            #expect(delivered["direction"] == "sent")
            #expect(delivered["senderDID"] == .string(peer.pwDid))
            #expect(delivered["type"] == "basicMessage")
            #expect(delivered["deliveryDetails"] == [])
            let pushed = try await seen.wait(for: "messages.delivered")
            #expect(pushed.first?.params["uid"] == .string(uid))
            #expect(pushed.first?.params["statusCode"] == "MS-102")
            #expect(pushed.first?.params["pairwiseDID"] == .string(peer.pwDid))
            #expect(seen.all("messages.received").isEmpty, "a sent message is not received: \(seen.all().map(\.params))")
            // Received-message readers are unchanged: the default download (MS-103) does not list it.
            #expect(Self.messages(try await alice.call("messages.download"))[uid] == nil)
            // Its status is the delivery's: updateStatus does not touch a sent message.
            let update = try await alice.call(
                "messages.updateStatus", params: ["status": "MS-106", "messages": [["pairwiseDID": .string(peer.pwDid), "uids": [.string(uid)]]]])
            #expect(update["updated"] == 0)

            // messages.send with a backend's @type and body; @id filled in, threads by replyTo.
            let port = server.didcommPort
            let question: JSONValue = [
                "@type": "https://didcomm.org/questionanswer/1.0/question", "@id": "q-1", "question_text": "Ready?",
                "~thread": ["thid": "t-outer"],
            ]
            #expect(try await DIDCommEndpointTests.post(try peer.pack(question), to: port) == 202)
            #expect(try await DIDCommEndpointTests.post(try peer.pack(["@type": .string(Self.basicMessage), "@id": "b-1", "content": "hi"]), to: port) == 202)
            let inbound = try await alice.call("messages.download", params: ["pairwiseDids": [.string(peer.pwDid)]])
            let inboundUids = try MessagesMailboxTests.uids(inbound)
            let answer = try await alice.call(
                "messages.send",
                params: [
                    "connectionId": .string(peer.connectionId), "replyTo": .string(try #require(inboundUids["q-1"])),
                    "message": ["@type": "https://didcomm.org/questionanswer/1.0/answer", "response": "Yes"],
                ])
            let answerId = try #require(answer["@id"]?.stringValue)
            #expect(answer["threadId"] == "t-outer")
            let answered = try #require(try await inbox.wait { $0["@id"] == .string(answerId) })
            #expect(answered.message["~thread"]?["thid"] == "t-outer")
            #expect(answered.message["response"] == "Yes")
            let reply = try await alice.call(
                "messages.sendText",
                params: ["connectionId": .string(peer.connectionId), "content": "and you?", "replyTo": .string(try #require(inboundUids["b-1"]))])
            let replyId = try #require(reply["@id"]?.stringValue)
            let replied = try #require(try await inbox.wait { $0["@id"] == .string(replyId) })
            #expect(replied.message["~thread"]?["thid"] == "b-1")
            // The history lists the reply with refMsgId naming what it answers.
            let replyUid = try #require(reply["uid"]?.stringValue)
            let replyView = try #require(try await Self.waitForStatus(alice, uid: replyUid, status: "MS-102"))
            #expect(replyView["refMsgId"] == "b-1")
            // All of it: received and sent, one history of the connection.
            let history = try await alice.call(
                "messages.download", params: ["pairwiseDids": [.string(peer.pwDid)], "status": ["MS-101", "MS-102", "MS-103", "MS-105"]])
            #expect(Self.messages(history).count == 5, "\(history)")
        }
        await inbox.stop()
    }

    @Test func refusedSendsAreClearErrorsAndStoreNothing() async throws {
        try await LiveServer.with(server: { Self.configure(&$0); $0.delivery.enabled = false }) { server in
            let (alice, aliceID) = try await server.tenantClient(label: "alice")
            let (bob, _) = try await server.tenantClient(label: "bob")
            defer { Task { await alice.close(); await bob.close() } }
            let peer = try await TestPeer.connect(alice)
            let id = JSONValue.string(peer.connectionId)
            let text: (JSONValue) -> JSONValue = { ["connectionId": $0, "content": "x"] }

            // Unknown, another tenant's, and deleted connections: not_found.
            await Self.expectError(-32004, stable: "not_found") { try await alice.call("messages.sendText", params: text(.string(UUID().uuidString))) }
            await Self.expectError(-32004, stable: "not_found") { try await bob.call("messages.sendText", params: text(id)) }
            await Self.expectError(-32004, stable: "not_found") { try await bob.call("connections.ping", params: ["connectionId": id, "timeoutSeconds": 1]) }
            // Not yet established: state 1 (created) and 2 (request sent to a peer that never answers).
            let created = try await alice.call(
                "connections.createWithInvite",
                params: ["invitation": try HandMadeHandshake.invitation(inviter: .generate(), id: UUID().uuidString)])
            let pendingId = try #require(created["connectionId"])
            await Self.expectError(-32009, stable: "conflict") { try await alice.call("messages.sendText", params: text(pendingId)) }
            let requested = try await alice.call(
                "connections.accept", params: ["invitation": try HandMadeHandshake.invitation(inviter: .generate(), id: UUID().uuidString)])
            #expect(requested["state"] == 2)
            do {
                _ = try await alice.call("messages.send", params: ["connectionId": requested["connectionId"] ?? .null, "message": ["@type": .string(Self.basicMessage), "content": "x"]])
                Issue.record("sent on a connection in state 2")
            } catch let error as AerieClientError {
                #expect(error.stableCode == "conflict")
                #expect(error.data?["stateName"] == "requested", "\(error)")
            }
            await Self.expectError(-32009, stable: "conflict") { try await alice.call("connections.ping", params: ["connectionId": pendingId]) }

            // Shapes, ids and sizes: invalid_params naming the field, before anything is read.
            let send: (JSONValue) -> JSONValue = { ["connectionId": id, "message": $0] }
            await Self.expectError(-32602, stable: "invalid_params", field: "connectionId") { try await alice.call("messages.send", params: ["connectionId": "nope", "message": ["@type": .string(Self.basicMessage)]]) }
            await Self.expectError(-32602, stable: "invalid_params", field: "message") { try await alice.call("messages.send", params: send("text")) }
            await Self.expectError(-32602, stable: "invalid_params", field: "message") { try await alice.call("messages.send", params: send([1, 2])) }
            await Self.expectError(-32602, stable: "invalid_params", field: "message.@type") { try await alice.call("messages.send", params: send(["content": "no type"])) }
            await Self.expectError(-32602, stable: "invalid_params", field: "message.@type") { try await alice.call("messages.send", params: send(["@type": "hello"])) }
            await Self.expectError(-32602, stable: "invalid_params", field: "message.@type") { try await alice.call("messages.send", params: send(["@type": "https://didcomm.org/basicmessage/one/message"])) }
            await Self.expectError(-32602, stable: "invalid_params", field: "message.@type") { try await alice.call("messages.send", params: send(["@type": "https://didcomm.org/routing/1.0/forward", "to": "x"])) }
            await Self.expectError(-32602, stable: "invalid_params", field: "message.@id") { try await alice.call("messages.send", params: send(["@type": .string(Self.basicMessage), "@id": .string(String(repeating: "i", count: 300))])) }
            await Self.expectError(-32602, stable: "invalid_params", field: "message.@id") { try await alice.call("messages.send", params: send(["@type": .string(Self.basicMessage), "@id": 7])) }
            await Self.expectError(-32602, stable: "invalid_params", field: "message.~thread") { try await alice.call("messages.send", params: send(["@type": .string(Self.basicMessage), "~thread": "t"])) }
            let big = JSONValue.string(String(repeating: "a", count: 70 * 1024))
            await Self.expectError(-32602, stable: "invalid_params", field: "message") { try await alice.call("messages.send", params: send(["@type": .string(Self.basicMessage), "content": big])) }
            await Self.expectError(-32602, stable: "invalid_params", field: "content") { try await alice.call("messages.sendText", params: ["connectionId": id, "content": ""]) }
            await Self.expectError(-32602, stable: "invalid_params", field: "content") { try await alice.call("messages.sendText", params: ["connectionId": id, "content": big]) }
            await Self.expectError(-32602, stable: "invalid_params", field: "replyTo") { try await alice.call("messages.sendText", params: ["connectionId": id, "content": "x", "replyTo": "nope"]) }
            await Self.expectError(-32602, stable: "invalid_params", field: "replyTo") { try await alice.call("messages.sendText", params: ["connectionId": id, "content": "x", "replyTo": .string(UUID().uuidString)]) }
            await Self.expectError(-32602, stable: "invalid_params", field: "timeoutSeconds") { try await alice.call("connections.ping", params: ["connectionId": id, "timeoutSeconds": 600]) }

            // A replyTo of another connection (and another tenant's) is refused.
            let other = try await TestPeer.connect(alice)
            #expect(try await DIDCommEndpointTests.post(try other.pack(["@type": .string(Self.basicMessage), "@id": "o-1", "content": "x"]), to: server.didcommPort) == 202)
            let otherUid = try #require(try MessagesMailboxTests.uids(try await alice.call("messages.download"))["o-1"])
            await Self.expectError(-32602, stable: "invalid_params", field: "replyTo") { try await alice.call("messages.sendText", params: ["connectionId": id, "content": "x", "replyTo": .string(otherUid)]) }

            // The same @id twice to one peer: the second is refused, the first stays.
            let first = try await alice.call("messages.send", params: send(["@type": .string(Self.basicMessage), "@id": "dup-1", "content": "one"]))
            await Self.expectError(-32009, stable: "conflict", field: "message.@id") { try await alice.call("messages.send", params: send(["@type": .string(Self.basicMessage), "@id": "dup-1", "content": "two"])) }

            // Nothing of the refusals was stored: one sent message (and its outbox row) in all.
            let runtime = server.database.runtime(maxConnections: 1)
            let counts = try await runtime.withSession(tenant: aliceID) { session -> (Int, Int) in
                let sent = try session.query("SELECT count(*)::text FROM aerie.mailbox WHERE direction = 'sent'", [])
                let rows = try session.query("SELECT count(*)::text FROM aerie.outbox WHERE message_uid IS NOT NULL", [])
                return (Int(sent.string(0, 0) ?? "") ?? -1, Int(rows.string(0, 0) ?? "") ?? -1)
            }
            await runtime.shutdown()
            #expect(counts.0 == 1 && counts.1 == 1, "\(counts)")
            #expect(first["@id"] == "dup-1")

            // Bob sees none of Alice's history, whatever the status.
            #expect(try await bob.call("messages.download", params: ["status": ["MS-101", "MS-102", "MS-103", "MS-104", "MS-105", "MS-106"]]) == JSONValue.array([]))

            // Deleted: refused like unknown.
            _ = try await alice.call("connections.delete", params: ["connectionId": id])
            await Self.expectError(-32004, stable: "not_found") { try await alice.call("messages.sendText", params: text(id)) }
        }
    }

    @Test func unreachablePeerEndsDeliveryFailedWithTheReason() async throws {
        try await LiveServer.with(server: Self.configure) { server in
            let (alice, bob, aliceSeen, bobSeen) = try await MessagesPushTests.subscribedPair(server)
            defer { Task { await alice.close(); await bob.close() } }
            let peer = try await TestPeer.connect(alice)  // its endpoint refuses connections
            let sent = try await alice.call("messages.sendText", params: ["connectionId": .string(peer.connectionId), "content": "anyone?"])
            let uid = try #require(sent["uid"]?.stringValue)
            let failed = try #require(try await Self.waitForStatus(alice, uid: uid, status: "MS-105"), "never MS-105")
            let details = try #require(failed["deliveryDetails"]?.arrayValue?.first)
            #expect(details["statusCode"] == "MS-105")
            #expect((details["reason"]?.stringValue ?? "").isEmpty == false, "\(failed)")
            let pushed = try #require(try await aliceSeen.wait(for: "messages.deliveryFailed").first)
            #expect(pushed.params["uid"] == .string(uid))
            #expect(pushed.params["reason"] == details["reason"])
            // The connection itself stays established (a message's failure is not the connection's).
            #expect(try await alice.call("connections.get", params: ["connectionId": .string(peer.connectionId)])["state"] == 4)
            #expect(bobSeen.all().filter { $0.method.hasPrefix("messages.") }.isEmpty, "\(bobSeen.all().map(\.params))")
        }
    }

    /// RFC 0048: the peer's ping that asks for a response is answered once, threaded to it; a
    /// ping that does not ask, and a stranger's, get nothing.
    @Test func pingsOfThePeerAreAnsweredAndNobodyElses() async throws {
        let inbox = try await PeerInbox()
        try await LiveServer.with(server: Self.configure) { server in
            let (alice, _) = try await server.tenantClient(label: "alice")
            defer { Task { await alice.close() } }
            let peer = try await TestPeer.connect(alice, endpoint: inbox.url, key: inbox.key)
            let port = server.didcommPort
            let ping: JSONValue = ["@type": "https://didcomm.org/trust_ping/1.0/ping", "@id": "ping-1"]
            #expect(try await DIDCommEndpointTests.post(try peer.pack(ping), to: port) == 202)
            #expect(try await DIDCommEndpointTests.post(try peer.pack(ping), to: port) == 202)  // a redelivery
            let response = try #require(try await inbox.wait { $0["~thread"]?["thid"] == "ping-1" })
            #expect(response.message["@type"] == "https://didcomm.org/trust_ping/1.0/ping_response")
            #expect(response.senderVerkey == peer.pwVerkey)

            let quiet: JSONValue = [
                "@type": "did:sov:BzCbsNYhMrjHiqZDTUASHg;spec/trust_ping/1.0/ping", "@id": "ping-2", "response_requested": false,
            ]
            #expect(try await DIDCommEndpointTests.post(try peer.pack(quiet), to: port) == 202)
            let strangers: JSONValue = ["@type": "https://didcomm.org/trust_ping/1.0/ping", "@id": "ping-3"]
            #expect(try await DIDCommEndpointTests.post(try peer.forge(strangers, from: .generate()), to: port) == 400)
            #expect(try await DIDCommEndpointTests.post(try peer.forge(strangers, from: nil), to: port) == 400)
            let legacy: JSONValue = ["@type": "did:sov:BzCbsNYhMrjHiqZDTUASHg;spec/trust_ping/1.0/ping", "@id": "ping-4"]
            #expect(try await DIDCommEndpointTests.post(try peer.pack(legacy), to: port) == 202)
            _ = try #require(try await inbox.wait { $0["~thread"]?["thid"] == "ping-4" })
            // Every ping was handled before its 202, so any answer is already an outbox row: once
            // the outbox is empty, every answer there was has reached the inbox.
            let drained = try await InboundHandlingTests.eventually {
                try await WalletFixture.asSuperuser(server.database) { try $0.query("SELECT 1 FROM aerie.outbox").rowCount } == 0
            }
            #expect(drained, "the outbox never emptied")
            let answered = inbox.received.filter { $0.message["@type"] == "https://didcomm.org/trust_ping/1.0/ping_response" }
                .compactMap { $0.message["~thread"]?["thid"]?.stringValue }.sorted()
            #expect(answered == ["ping-1", "ping-4"], "\(answered)")
        }
        await inbox.stop()
    }

    /// `connections.ping` measures the round trip to a peer that answers, across two server
    /// processes (the answer reaches the other one), and times out on one that does not.
    @Test func connectionsPingReportsTheRoundTripAndTimesOut() async throws {
        let answersTo = PortBox()
        let key = Ed25519KeyPair.generate()
        let inbox = try await PeerInbox(key: key) { received in
            guard received.message["@type"] == "https://didcomm.org/trust_ping/1.0/ping", let id = received.message["@id"],
                let (port, pwVerkey) = answersTo.value, let sender = received.senderVerkey, sender == pwVerkey
            else { return }
            let response: JSONValue = ["@type": "https://didcomm.org/trust_ping/1.0/ping_response", "@id": .string(UUID().uuidString), "~thread": ["thid": id]]
            if let envelope = try? DIDCommEnvelope.pack(response.serialized(), to: [pwVerkey], from: key) {
                _ = try? await DIDCommEndpointTests.post(envelope, to: port)
            }
        }
        try await LiveServer.with(server: Self.configure) { server in
            let sibling = try await server.sibling()
            let (alice, _) = try await server.tenantClient(label: "alice")
            defer { Task { await alice.close() } }
            let peer = try await TestPeer.connect(alice, endpoint: inbox.url, key: key)
            // The peer answers to the other process's endpoint.
            answersTo.set((sibling.didcommPort, peer.pwVerkey))
            let pong = try await alice.call("connections.ping", params: ["connectionId": .string(peer.connectionId), "timeoutSeconds": 10])
            let rtt = try #require(pong["roundTripMs"].flatMap { value -> Double? in
                if case .double(let d) = value { return d }
                return value.intValue.map(Double.init)
            })
            #expect(rtt > 0 && rtt < 10_000, "\(pong)")
            print("connections.ping round trip to the test peer via another process: \(rtt) ms")
            let history = try await alice.call(
                "messages.download", params: ["uids": [pong["uid"] ?? .null, pong["responseUid"] ?? .null], "status": ["MS-101", "MS-102", "MS-103"]])
            #expect(Self.messages(history).count == 2, "\(history)")

            answersTo.set(nil)
            let started = ContinuousClock.now
            await Self.expectError(-32021, stable: "timeout") {
                try await alice.call("connections.ping", params: ["connectionId": .string(peer.connectionId), "timeoutSeconds": 1])
            }
            // The 1 s timeout answered, not a hang (loose: a loaded CI box).
            #expect(ContinuousClock.now - started < .seconds(20))
            try await sibling.stop()
        }
        await inbox.stop()
    }
}

/// Where a test peer answers, settable from the test while its inbox runs.
final class PortBox: Sendable {
    private let state = Mutex<(Int, String)?>(nil)
    var value: (Int, String)? { state.withLock { $0 } }
    func set(_ value: (Int, String)?) { state.withLock { $0 = value } }
}

extension SendMessagesTests {
    /// The real aerie-server killed (`AERIE_FAULT_POINT=send.afterRecord`) after the sent record
    /// was written and before its outbox row: after restart neither exists, and a send then
    /// stores both and reaches the peer.
    @Test func crashBetweenRecordAndOutboxRowLeavesNeither() async throws {
        let database = try await TestPostgres.shared.freshDatabase()
        let server = try ServerProcess(database: database, environment: ["AERIE_ALLOW_PRIVATE_URLS": "1"])
        let inbox = try await PeerInbox()
        do {
            try await server.start(extra: ["AERIE_FAULT_POINT": "send.afterRecord"])
            let tenant = try await server.createTenant(label: "crash")
            let client = try await server.tenantClient(token: tenant.token)
            let peer = try await TestPeer.connect(client, endpoint: inbox.url, key: inbox.key)
            _ = try? await client.call("messages.sendText", params: ["connectionId": .string(peer.connectionId), "content": "lost"])
            await client.close()
            try #require(await server.waitForExit(timeout: .seconds(30)), "fault point send.afterRecord was never reached")

            let owner = AerieDatabase(
                configuration: DatabaseConfiguration(conninfo: database.superuserConninfo, maxConnections: 1), logger: Logger(label: "test"))
            let count: @Sendable (String) async throws -> Int = { sql in
                try await owner.withSession { session in Int(try session.query(sql, []).string(0, 0) ?? "") ?? -1 }
            }
            #expect(try await count("SELECT count(*)::text FROM aerie.mailbox WHERE direction = 'sent'") == 0)
            #expect(try await count("SELECT count(*)::text FROM aerie.outbox WHERE message_uid IS NOT NULL") == 0)

            try await server.start()
            let again = try await server.tenantClient(token: tenant.token)
            let sent = try await again.call("messages.sendText", params: ["connectionId": .string(peer.connectionId), "content": "kept"])
            let uid = try #require(sent["uid"]?.stringValue)
            #expect(try await Self.waitForStatus(again, uid: uid, status: "MS-102") != nil)
            #expect(inbox.received.compactMap { $0.message["content"]?.stringValue } == ["kept"])
            #expect(try await count("SELECT count(*)::text FROM aerie.mailbox WHERE direction = 'sent'") == 1)
            // Delivered: the outbox row is gone (schema/0032); the tenant has no backend, so its
            // delivery event was pushed and not logged (schema/0033: the log is a backend's stream).
            #expect(try await count("SELECT count(*)::text FROM aerie.outbox WHERE message_uid IS NOT NULL") == 0)
            #expect(try await count("SELECT count(*)::text FROM aerie.events WHERE data->>'messageUid' = '\(uid)'") == 0)
            await again.close()
            await owner.shutdown()
        } catch {
            print("server log:\n\(server.log().suffix(4000))")
            await server.cleanUp()
            await inbox.stop()
            try? await database.drop()
            throw error
        }
        await server.cleanUp()
        await inbox.stop()
        try? await database.drop()
    }
}

extension SendMessagesTests {
    /// A peer behind a mediator (routing keys in its DIDDoc): the message reaches the endpoint as
    /// a `forward` to the mediator's key, and only the peer's key opens what it carries.
    @Test func sendsAreForwardWrappedThroughThePeersRoutingKeys() async throws {
        let mediator = Ed25519KeyPair.generate()
        let peerKey = Ed25519KeyPair.generate()
        let inbox = try await PeerInbox(key: mediator)  // opens the outer layer only
        try await LiveServer.with(server: Self.configure) { server in
            let (alice, aliceID) = try await server.tenantClient(label: "alice")
            defer { Task { await alice.close() } }
            let peer = try await TestPeer.connect(alice, endpoint: inbox.url, key: peerKey)
            // Through the tenant's own store: the route is sealed.
            let id = try #require(UUID(uuidString: peer.connectionId))
            try await WalletFixture.withContext(of: aliceID, on: server) { context in
                try await context.database.transaction { tx in
                    guard var record = try tx.connections.getForUpdate(id) else { throw AerieError.notFound("no connection \(id)") }
                    record.theirRoutingKeys = [mediator.verkeyBase58]
                    _ = try tx.connections.update(record)
                }
            }

            let sent = try await alice.call("messages.sendText", params: ["connectionId": .string(peer.connectionId), "content": "via mediator"])
            let forward = try #require(try await inbox.wait { $0["@type"] == "https://didcomm.org/routing/1.0/forward" })
            #expect(forward.senderVerkey == nil, "a forward is anoncrypted")
            #expect(forward.message["to"] == .string(peerKey.verkeyBase58))
            let inner = try #require(forward.message["msg"])
            let opened = try DIDCommEnvelope(parsing: inner.serialized()).open(with: peerKey)
            #expect(opened.senderVerkey == peer.pwVerkey)
            let message = try JSONValue(parsing: opened.plaintext)
            #expect(message["content"] == "via mediator")
            #expect(message["@id"] == sent["@id"])
            let uid = try #require(sent["uid"]?.stringValue)
            #expect(try await Self.waitForStatus(alice, uid: uid, status: "MS-102") != nil)
        }
        await inbox.stop()
    }

    /// Sends racing the connection's delete: each send either committed before the delete (and
    /// the delete removed its record and row) or is refused; nothing of the connection is left.
    @Test func sendsRacingADeleteLeaveNothingBehind() async throws {
        try await LiveServer.with(server: { Self.configure(&$0); $0.delivery.enabled = false }) { server in
            let (alice, aliceID) = try await server.tenantClient(label: "alice")
            defer { Task { await alice.close() } }
            let peer = try await TestPeer.connect(alice)
            let id = JSONValue.string(peer.connectionId)
            let outcomes = try await withThrowingTaskGroup(of: String.self) { group in
                for n in 0..<12 {
                    group.addTask {
                        do {
                            _ = try await alice.call("messages.sendText", params: ["connectionId": id, "content": .string("m\(n)")])
                            return "sent"
                        } catch let error as AerieClientError {
                            return error.stableCode ?? "\(error.code)"
                        }
                    }
                }
                group.addTask {
                    try await Task.sleep(for: .milliseconds(20))
                    _ = try await alice.call("connections.delete", params: ["connectionId": id])
                    return "deleted"
                }
                return try await group.reduce(into: [String]()) { $0.append($1) }
            }
            #expect(outcomes.allSatisfy { ["sent", "deleted", "not_found"].contains($0) }, "\(outcomes)")
            let runtime = server.database.runtime(maxConnections: 1)
            let left = try await runtime.withSession(tenant: aliceID) { session -> (String?, String?) in
                let mailbox = try session.query("SELECT count(*)::text FROM aerie.mailbox WHERE connection_id = $1::uuid", [.text(peer.connectionId)])
                let outbox = try session.query("SELECT count(*)::text FROM aerie.outbox WHERE connection_id = $1::uuid OR message_uid IS NOT NULL", [.text(peer.connectionId)])
                return (mailbox.string(0, 0), outbox.string(0, 0))
            }
            await runtime.shutdown()
            #expect(left.0 == "0" && left.1 == "0", "\(left) after \(outcomes)")
        }
    }
}
