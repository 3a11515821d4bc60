import AerieClient
import AerieCore
import AerieCrypto
import AerieTesting
import Foundation
import Testing

extension ACAPyConnectionTests {
    /// `connections.updateStateWithMessage` fed ACA-Py 1.2.7's own Connection Response, as a
    /// wallet does with a mailbox entry when the inbound handler could not apply it. The handler
    /// is made to fail by taking the runtime role's INSERT on the outbox away while the Response
    /// arrives (its trust ping cannot be queued, so its transaction rolls back); the Response
    /// stays in the mailbox and the connection in state 2 until the tenant applies it.
    @Test func updateStateWithMessageAppliesARealResponseFromTheMailbox() async throws {
        let agent = try await ACAPyAgent.start()
        do {
            try await LiveServer.with(server: {
                $0.outbound.allowPrivateURLs = true
                $0.delivery.enabled = false
            }) { server in
                let created = try await agent.admin("POST", "/connections/create-invitation", body: [:])
                let url = try #require(created["invitation_url"]?.stringValue)
                let theirs = try #require(created["connection_id"]?.stringValue)
                let (tenant, _) = try await server.tenantClient(label: "frank")
                defer { Task { await tenant.close() } }
                let accepted = try await tenant.call("connections.accept", params: ["url": .string(url)])
                #expect(accepted["state"] == 2, "\(accepted)")
                let id = try #require(accepted["connectionId"]?.stringValue)
                let pwDid = try #require(accepted["pwDid"]?.stringValue)

                try await Self.outboxInserts(server, allowed: false)
                // A second process on the database delivers the Request; the Response comes back
                // to the first one's endpoint, the one the Request advertised.
                let deliverer = try await server.sibling { $0.delivery.enabled = true }
                do {
                    var entry: JSONValue? = nil
                    for _ in 0..<150 {
                        let download = try await tenant.call("messages.download", params: ["pairwiseDids": [.string(pwDid)]])
                        entry = (download.arrayValue?.first?["msgs"]?.arrayValue ?? []).first { msg in
                            (msg["decryptedPayload"]?.stringValue ?? "").contains("connections/1.0/response")
                        }
                        if entry != nil { break }
                        try await Task.sleep(for: .milliseconds(100))
                    }
                    let response = try #require(entry, "ACA-Py's Response never reached the mailbox")
                    let payload = try JSONValue(parsing: Array(try #require(response["decryptedPayload"]?.stringValue).utf8))
                    #expect(payload["connection~sig"] != nil, "a real, signed Response: \(payload)")
                    let before = try await tenant.call("connections.get", params: ["connectionId": .string(id)])
                    #expect(before["state"] == 2, "the handler could not apply it: \(before)")

                    try await Self.outboxInserts(server, allowed: true)
                    let updated = try await tenant.call(
                        "connections.updateStateWithMessage", params: ["connectionId": .string(id), "message": response])
                    #expect(updated["state"] == 4, "\(updated)")
                    #expect(updated["stateName"] == "accepted")
                    #expect(updated["theirEndpoint"]?.stringValue == agent.endpoint)
                    // Our trust ping (queued by the update, sent by the second process) makes ACA-Py active.
                    let record = try await agent.waitForConnection(theirs, states: ["active", "completed"])
                    #expect(record["their_did"]?.stringValue.map(PeerDID4.shortForm) == pwDid)
                    #expect(updated["theirDid"]?.stringValue == record["my_did"]?.stringValue)
                    // The same Response again is a conflict: the connection is already accepted.
                    await expectCode("conflict") {
                        try await tenant.call("connections.updateStateWithMessage", params: ["connectionId": .string(id), "message": response])
                    }
                } catch {
                    try? await deliverer.stop()
                    throw error
                }
                try await deliverer.stop()
            }
        } catch {
            print("ACA-Py log:\n\(agent.log().suffix(4000))")
            await agent.stop()
            throw error
        }
        await agent.stop()
    }

    /// Grants or revokes the runtime role's INSERT on `aerie.outbox` in the server's database.
    static func outboxInserts(_ server: LiveServer, allowed: Bool) async throws {
        let sql = allowed ? "GRANT INSERT ON aerie.outbox TO aerie_runtime" : "REVOKE INSERT ON aerie.outbox FROM aerie_runtime"
        _ = try await WalletFixture.asSuperuser(server.database) { try $0.execute(sql) }
    }
}
