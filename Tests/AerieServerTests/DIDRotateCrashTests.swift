import AerieClient
import AerieCore
import AerieCrypto
import AerieTesting
import Foundation
import Testing

/// Our DID rotation against ACA-Py 1.2.7 when aerie-server dies at once (`AERIE_FAULT_POINT`, as
/// `kill -9` would, debug builds): after our `rotate` reached ACA-Py but before its delivery was
/// recorded (`outbox.afterPost`: redelivered after the restart), and while ACA-Py's `ack` is being
/// handled, before the transaction that makes the new key ours and retires the old one commits
/// (`inbound.beforeCommit`: ACA-Py, not answered, sends the ack again). After the restart the
/// rotation completes and a basic message goes each way on the rotated connection.
@Suite(.serialized, .timeLimit(.minutes(10))) struct DIDRotateCrashTests {
    @Test(arguments: ["outbox.afterPost", "inbound.beforeCommit"])
    func aCrashDuringOurRotationLosesNothing(point: String) async throws {
        #expect(FaultPoint.names.contains(point))
        let hooks = try await ACAPyWebhooks()
        let agent = try await ACAPyAgent.start(extraArguments: ["--webhook-url", hooks.url])
        let database = try await TestPostgres.shared.freshDatabase()
        let server = try ServerProcess(database: database)
        do {
            try await Self.crashAndRecover(at: point, server, agent, hooks)
        } catch {
            print("server log:\n\(server.log().suffix(4000))\nACA-Py log:\n\(agent.log().suffix(3000))")
            await server.cleanUp()
            await agent.stop()
            await hooks.stop()
            try? await database.drop()
            throw error
        }
        await server.cleanUp()
        await agent.stop()
        await hooks.stop()
        try? await database.drop()
    }

    static func crashAndRecover(at point: String, _ server: ServerProcess, _ agent: ACAPyAgent, _ hooks: ACAPyWebhooks) async throws {
        try await server.start()
        let tenant = try await server.createTenant(label: "alice")
        var alice = try await server.tenantClient(token: tenant.token)
        let (connectionId, acapyConnection) = try await DiscoverFeaturesTests.connectThroughDIDPeer4Invitation(alice, agent)
        let before = try await DIDRotateTests.get(alice, connectionId)
        await alice.close()

        // Armed only now, so the first delivery (or inbound commit) after this start is the rotation's.
        await server.stop()
        try await server.start(extra: ["AERIE_FAULT_POINT": point])
        alice = try await server.tenantClient(token: tenant.token)
        let rotated = try await alice.call("connections.rotateDid", params: ["connectionId": .string(connectionId), "wait": false])
        let newDid = try #require(rotated["did"]?.stringValue)
        await alice.close()
        try #require(await server.waitForExit(timeout: .seconds(60)), "fault point \(point) was never reached")

        try await server.start()
        let client = try await server.tenantClient(token: tenant.token)
        defer { Task { await client.close() } }
        try await Self.rotationCompleted(client, connectionId, acapyConnection, newDid: newDid, before: before, point, agent, hooks)
    }

    static func rotationCompleted(
        _ alice: AerieClient, _ connectionId: String, _ acapyConnection: String, newDid: String, before: JSONValue, _ point: String,
        _ agent: ACAPyAgent, _ hooks: ACAPyWebhooks
    ) async throws {
        var after = JSONValue.null
        for _ in 0..<600 {
            after = try await DIDRotateTests.get(alice, connectionId)
            if after["pwDid"] == .string(newDid) { break }
            try await Task.sleep(for: .milliseconds(100))
        }
        #expect(after["pwDid"] == .string(newDid), "after a crash at \(point): \(after)")
        #expect(after["pwVerkey"] != before["pwVerkey"])
        #expect(after["rotatingToDid"] == nil || after["rotatingToDid"] == .null, "\(after)")
        let theirView = try await agent.admin("GET", "/connections/\(acapyConnection)")
        #expect(theirView["their_did"]?.stringValue.map(PeerDID4.shortForm) == newDid, "\(theirView)")

        _ = try await alice.call("messages.sendText", params: ["connectionId": .string(connectionId), "content": "Aerie after the crash"])
        let seen = try await hooks.wait("basicmessages") { $0["content"] == "Aerie after the crash" }
        #expect(seen?["connection_id"]?.stringValue == acapyConnection, "\(String(describing: seen))")
        _ = try await agent.admin("POST", "/connections/\(acapyConnection)/send-message", body: ["content": "ACA-Py after the crash"])
        #expect(try await DIDRotateTests.received("ACA-Py after the crash", by: alice) != nil)
    }
}
