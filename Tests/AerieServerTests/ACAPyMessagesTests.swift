import AerieClient
import AerieCore
import AerieStore
import AerieTesting
import Foundation
import Testing

/// Messages from an independent peer: ACA-Py 1.2.7 sends a trust ping and a basic message over an
/// established connection; both appear in `messages.download` under our pairwise DID.
@Suite(.serialized, .timeLimit(.minutes(10))) struct ACAPyMessagesTests {
    @Test func trustPingAndBasicMessageFromACAPyAreDownloaded() async throws {
        try await ACAPyConnectionTests.withAerieAndACAPy { server, agent in
            let created = try await agent.admin("POST", "/connections/create-invitation", body: [:])
            let url = try #require(created["invitation_url"]?.stringValue)
            let acapyConnection = try #require(created["connection_id"]?.stringValue)
            let (alice, _) = try await server.tenantClient(label: "Alice Secret Tenant Label")
            let (bob, _) = try await server.tenantClient(label: "bob")
            defer { Task { await alice.close(); await bob.close() } }
            let accepted = try await alice.call(
                "connections.accept", params: ["url": .string(url), "wait": true, "timeoutSeconds": 30, "label": "Alice"])
            let pwDid = try #require(accepted["pwDid"]?.stringValue)
            let theirs = try await agent.waitForConnection(acapyConnection, states: ["active", "completed"])
            let acapyDid = try #require(theirs["my_did"]?.stringValue)

            _ = try await agent.admin("POST", "/connections/\(acapyConnection)/send-ping", body: ["comment": "ping from ACA-Py"])
            _ = try await agent.admin("POST", "/connections/\(acapyConnection)/send-message", body: ["content": "hello from ACA-Py"])

            var basic: JSONValue? = nil
            var pingSeen = false
            for _ in 0..<100 {
                let download = try await alice.call("messages.download", params: ["pairwiseDids": [.string(pwDid)]])
                guard case .array(let groups) = download else { break }
                for group in groups {
                    #expect(group["pairwiseDID"]?.stringValue == pwDid)
                    guard case .array(let msgs)? = group["msgs"] else { continue }
                    for msg in msgs {
                        if msg["type"] == "basicMessage" { basic = msg }
                        if msg["type"] == "trustPing",
                            let payload = msg["decryptedPayload"]?.stringValue, payload.contains("ping from ACA-Py")
                        {
                            pingSeen = true
                        }
                    }
                }
                if basic != nil && pingSeen { break }
                try await Task.sleep(for: .milliseconds(100))
            }
            let message = try #require(basic)
            #expect(pingSeen)
            #expect(message["senderDID"]?.stringValue == acapyDid)
            #expect(message["statusCode"] == "MS-103")
            let payload = try JSONValue(parsing: try #require(message["decryptedPayload"]?.stringValue))
            #expect(payload["content"] == "hello from ACA-Py")
            #expect(try await bob.call("messages.download", params: ["status": ["MS-103", "MS-106"]]) == JSONValue.array([]))

            let uid = try #require(message["uid"])
            let reviewed = try await alice.call(
                "messages.updateStatus", params: ["status": "MS-106", "messages": [["pairwiseDID": .string(pwDid), "uids": [uid]]]])
            #expect(reviewed["updated"] == 1)
            let pending = try await alice.call("messages.download", params: ["uids": [uid]])
            #expect(pending == JSONValue.array([]))

            // At rest: a superuser's SELECT of every table and a pg_dump hold none of what this
            // flow carried (the peer's label, DID and endpoint, its invitation, the messages, a
            // setting). An outbox row holds its endpoint until delivered: the scan waits for the
            // ping's response to go.
            _ = try await alice.call("settings.set", params: ["key": "profile", "value": ["name": "Alice Secret Name"]])
            let plaintext = [
                "hello from ACA-Py", "ping from ACA-Py", "ACA-Py Inviter", "Alice Secret Name", "Alice Secret Tenant Label", acapyDid,
                agent.endpoint,
            ]
            var unsent = -1
            for _ in 0..<100 {
                unsent = try await WalletFixture.asSuperuser(server.database) { session in
                    try session.query("SELECT count(*) FROM aerie.outbox").int(0, 0) ?? -1
                }
                if unsent == 0 { break }
                try await Task.sleep(for: .milliseconds(100))
            }
            #expect(unsent == 0, "the outbox did not drain")
            let rows = try await SealedStorageTests.everyRow(server.database)
            #expect(rows.contains(pwDid), "the SELECT sees Alice's connection")
            SealedStorageTests.expectNoSecrets(plaintext, in: rows, "a superuser's SELECT after an ACA-Py flow")
            let dump = try SealedStorageTests.pgDump(server.database.superuserConninfo)
            #expect(dump.contains(pwDid), "the dump sees Alice's connection")
            SealedStorageTests.expectNoSecrets(plaintext, in: dump, "pg_dump after an ACA-Py flow")
        }
    }

    /// Push with a real peer: the connection reaching state 4 and ACA-Py's basic message arrive
    /// as notifications on Alice's subscribed session; Bob's subscription sees none of it.
    @Test func stateChangesAndMessagesFromACAPyArePushed() async throws {
        try await ACAPyConnectionTests.withAerieAndACAPy { server, agent in
            let created = try await agent.admin("POST", "/connections/create-invitation", body: [:])
            let url = try #require(created["invitation_url"]?.stringValue)
            let acapyConnection = try #require(created["connection_id"]?.stringValue)
            let (alice, bob, aliceSeen, bobSeen) = try await MessagesPushTests.subscribedPair(server)
            defer { Task { await alice.close(); await bob.close() } }

            let accepted = try await alice.call(
                "connections.accept", params: ["url": .string(url), "wait": true, "timeoutSeconds": 30, "label": "Alice"])
            let connectionId = try #require(accepted["connectionId"]?.stringValue)
            let pwDid = try #require(accepted["pwDid"]?.stringValue)
            let changes = try await aliceSeen.wait(for: "connections.stateChanged", count: 3)
            #expect(changes.map { $0.params["state"] } == [1, 2, 4], "\(changes.map(\.params))")
            #expect(changes.last?.params == ["connectionId": .string(connectionId), "state": 4, "stateName": "accepted"])

            _ = try await agent.waitForConnection(acapyConnection, states: ["active", "completed"])
            _ = try await agent.admin("POST", "/connections/\(acapyConnection)/send-message", body: ["content": "pushed"])
            var basic: AerieClient.ServerNotification? = nil
            for _ in 0..<250 where basic == nil {
                basic = aliceSeen.all("messages.received").first { $0.params["type"] == "basicMessage" }
                if basic == nil { try await Task.sleep(for: .milliseconds(40)) }
            }
            let pushed = try #require(basic)
            #expect(pushed.params["pairwiseDID"] == .string(pwDid))
            let uid = try #require(pushed.params["uid"])
            let download = try await alice.call("messages.download", params: ["uids": [uid]])
            #expect(download.arrayValue?.first?["msgs"]?.arrayValue?.first?["type"] == "basicMessage")
            // None of Alice's events reached Bob: his first notification is his own, made after them.
            let bobsOwn = try await MessagesMailboxTests.connect(bob)
            let bobFirst = try #require(try await bobSeen.wait(for: "connections.stateChanged").first)
            #expect(bobFirst.params["connectionId"] == .string(bobsOwn.id), "\(bobSeen.all().map(\.params))")
            #expect(bobSeen.all().first?.params["connectionId"] == .string(bobsOwn.id), "\(bobSeen.all().map(\.params))")
        }
    }
}
