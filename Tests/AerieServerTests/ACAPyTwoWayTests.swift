import AerieClient
import AerieCore
import AerieTesting
import AerieTransport
import Foundation
import Logging
import ServiceLifecycle
import Synchronization
import Testing

/// Two-way messaging with an independent peer (issue 17): Aerie's basic messages reach ACA-Py
/// (its `basicmessages` webhook), ACA-Py's reach Aerie, and trust pings are answered both ways
/// (ACA-Py's `send-ping` gets Aerie's response, seen in its `ping` webhook with `--monitor-ping`;
/// Aerie's `connections.ping` gets ACA-Py's response and a round trip). ACA-Py 1.2.7 over
/// connections/1.0 and 1.7.0 over out-of-band didexchange/1.1.
@Suite(.serialized, .timeLimit(.minutes(10))) struct ACAPyTwoWayTests {
    @Test(arguments: ACAPyAgent.Version.allCases)
    func basicMessagesAndPingsBothWays(version: ACAPyAgent.Version) async throws {
        let hooks = try await ACAPyWebhooks()
        let agent = try await ACAPyAgent.start(version: version, extraArguments: ["--webhook-url", hooks.url, "--monitor-ping"])
        do {
            try await LiveServer.with(server: { $0.outbound.allowPrivateURLs = true }) { server in
                try await Self.exchange(server, agent, hooks, version: version)
            }
        } catch {
            print("ACA-Py \(version.rawValue) log:\n\(agent.log().suffix(4000))\nwebhooks: \(hooks.all.map(\.topic))")
            await agent.stop()
            await hooks.stop()
            throw error
        }
        await agent.stop()
        await hooks.stop()
    }

    static func exchange(_ server: LiveServer, _ agent: ACAPyAgent, _ hooks: ACAPyWebhooks, version: ACAPyAgent.Version) async throws {
        let (alice, _) = try await server.tenantClient(label: "alice")
        let (bob, _) = try await server.tenantClient(label: "bob")
        defer { Task { await alice.close(); await bob.close() } }
        let seen = MessagesPushTests.Collector(alice)
        _ = try await alice.call("messages.subscribe")

        // Connect: connections/1.0 with 1.2.7, out-of-band didexchange/1.1 with 1.7.0.
        let connectionId: String
        let acapyConnection: String
        switch version {
        case .v1_2_7:
            let created = try await agent.admin("POST", "/connections/create-invitation", body: [:])
            acapyConnection = try #require(created["connection_id"]?.stringValue)
            let accepted = try await alice.call(
                "connections.accept",
                params: ["url": try #require(created["invitation_url"]), "wait": true, "timeoutSeconds": 30, "label": "Alice"])
            connectionId = try #require(accepted["connectionId"]?.stringValue)
            _ = try await agent.waitForConnection(acapyConnection, states: ["active", "completed"])
        case .v1_7_0:
            let created = try await agent.admin(
                "POST", "/out-of-band/create-invitation",
                body: ["handshake_protocols": ["https://didcomm.org/didexchange/1.1"], "use_public_did": false])
            let invitation = try #require(created["invitation"])
            let accepted = try await alice.call(
                "connections.accept", params: ["invitation": invitation, "wait": true, "timeoutSeconds": 30, "label": "Alice"])
            connectionId = try #require(accepted["connectionId"]?.stringValue)
            let theirs = try await ACAPyDIDExchangeTests.completedConnection(
                agent, invitationId: try #require(invitation["@id"]?.stringValue))
            acapyConnection = try #require(theirs["connection_id"]?.stringValue)
        }

        // Aerie -> ACA-Py: a basic message, seen by ACA-Py's basicmessages webhook; MS-102 here.
        let sent = try await alice.call(
            "messages.sendText", params: ["connectionId": .string(connectionId), "content": "hello ACA-Py, from Aerie"])
        let uid = try #require(sent["uid"]?.stringValue)
        let received = try await hooks.wait("basicmessages") { $0["content"] == "hello ACA-Py, from Aerie" }
        #expect(received?["connection_id"]?.stringValue == acapyConnection, "\(String(describing: received))")
        #expect(received?["message_id"] == sent["@id"])
        #expect(try await SendMessagesTests.waitForStatus(alice, uid: uid, status: "MS-102") != nil)
        #expect(try await seen.wait(for: "messages.delivered").first?.params["uid"] == .string(uid))

        // ACA-Py -> Aerie: its send-message, downloaded; answered with replyTo (threaded).
        _ = try await agent.admin("POST", "/connections/\(acapyConnection)/send-message", body: ["content": "hello Aerie, from ACA-Py"])
        var incoming: JSONValue? = nil
        for _ in 0..<200 where incoming == nil {
            let download = try await alice.call("messages.download")
            incoming = SendMessagesTests.messages(download).values.first {
                $0["type"] == "basicMessage" && ($0["decryptedPayload"]?.stringValue ?? "").contains("hello Aerie, from ACA-Py")
            }
            if incoming == nil { try await Task.sleep(for: .milliseconds(50)) }
        }
        let incomingUid = try #require(incoming?["uid"], "ACA-Py's basic message never arrived")
        let reply = try await alice.call(
            "messages.sendText", params: ["connectionId": .string(connectionId), "content": "got it", "replyTo": incomingUid])
        #expect(try await hooks.wait("basicmessages") { $0["content"] == "got it" } != nil)
        let replyUid = try #require(reply["uid"]?.stringValue)
        #expect(try await SendMessagesTests.waitForStatus(alice, uid: replyUid, status: "MS-102") != nil)

        // ACA-Py pings Aerie: Aerie answers (ACA-Py's ping webhook: response_received on its thread).
        let ping = try await agent.admin("POST", "/connections/\(acapyConnection)/send-ping", body: ["comment": "ping from ACA-Py"])
        let pingThread = try #require(ping["thread_id"]?.stringValue, "\(ping)")
        let answered = try await hooks.wait("ping") { $0["thread_id"]?.stringValue == pingThread && $0["state"] == "response_received" }
        #expect(answered != nil, "no response_received for \(pingThread): \(hooks.all.filter { $0.topic == "ping" }.map(\.body))")

        // Aerie pings ACA-Py: the response arrives, with the round trip.
        var trips: [Double] = []
        for _ in 0..<5 {
            let pong = try await alice.call("connections.ping", params: ["connectionId": .string(connectionId), "timeoutSeconds": 15])
            let ms = try #require(pong["roundTripMs"].flatMap { value -> Double? in
                if case .double(let d) = value { return d }
                return value.intValue.map(Double.init)
            }, "\(pong)")
            trips.append(ms)
        }
        #expect(trips.allSatisfy { $0 > 0 && $0 < 15_000 }, "\(trips)")
        print("connections.ping round trips to ACA-Py \(version.rawValue) (ms): \(trips.map { String(format: "%.1f", $0) })")
        let pings = hooks.all.filter { $0.topic == "ping" && $0.body["state"] == "received" }
        #expect(pings.count >= 5, "ACA-Py saw \(pings.count) pings")

        // Bob (another tenant) cannot send on Alice's connection nor see any of it.
        do {
            _ = try await bob.call("messages.sendText", params: ["connectionId": .string(connectionId), "content": "not mine"])
            Issue.record("bob sent on alice's connection")
        } catch let error as AerieClientError {
            #expect(error.stableCode == "not_found")
        }
        #expect(try await bob.call("messages.download", params: ["status": ["MS-101", "MS-102", "MS-103", "MS-105", "MS-106"]]) == JSONValue.array([]))
    }
}
