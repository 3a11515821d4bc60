import AerieClient
import AerieCore
import AerieCrypto
import AerieTesting
import Foundation
import Testing

/// Outbound delivery under the address policy, end to end: a server that does not allow private
/// URLs (the default) never connects to a loopback endpoint; the Request's delivery fails and the
/// connection ends failed with the policy's reason.
@Suite(.timeLimit(.minutes(10))) struct OutboundAddressPolicyTests {
    @Test func aLoopbackEndpointIsRefusedAndTheConnectionFails() async throws {
        let listener = try await LoopbackListener.start()
        defer { Task { await listener.stop() } }
        try await LiveServer.with(server: {
            $0.allowPrivateURLs = false
            $0.deliveryMaxAttempts = 2
            $0.deliveryBackoff = .milliseconds(10)
            $0.deliveryPollInterval = .milliseconds(100)
        }) { server in
            let (alice, aliceID) = try await server.tenantClient(label: "alice")
            defer { Task { await alice.close() } }
            let key = try Ed25519KeyPair(seed: Random.bytes(32))
            let invitation: JSONValue = [
                "@type": "https://didcomm.org/connections/1.0/invitation", "@id": .string(UUID().uuidString), "label": "Local",
                "recipientKeys": .array([.string(key.verkeyBase58)]),
                "serviceEndpoint": .string("http://127.0.0.1:\(listener.port)/"),
            ]
            let created = try await alice.call("connections.createWithInvite", params: ["invitation": invitation])
            let id = try #require(created["connectionId"]?.stringValue)
            #expect(try await alice.call("connections.connect", params: ["connectionId": .string(id)])["state"] == 2)

            var state: JSONValue = .null
            for _ in 0..<150 {
                state = try await alice.call("connections.get", params: ["connectionId": .string(id)])
                if state["stateName"] == "failed" { break }
                try await Task.sleep(for: .milliseconds(100))
            }
            #expect(state["stateName"] == "failed", "\(state)")
            #expect(state["state"] == 0)
            #expect(
                state["failureReason"]
                    == "delivery failed after 2 attempts: the endpoint is a loopback, private or otherwise non-public address",
                "\(state)")
            let outbox = try await WalletFixture.asSuperuser(server.database) { session in
                try session.query(
                    "SELECT status, attempts::text, last_error FROM aerie.outbox WHERE tenant_id = $1::uuid AND connection_id = $2::uuid",
                    [.text(aliceID.rawValue), .text(id)]
                ).allRows()
            }
            #expect(outbox.count == 1, "\(outbox)")
            #expect(outbox.first?[0] == "failed", "\(outbox)")
            #expect(outbox.first?[1] == "2", "\(outbox)")
            #expect(outbox.first?[2]?.contains("non-public address") == true, "\(outbox)")
            // Refused before any connection was made, though the address was listening.
            #expect(listener.connections == 0)
            let probe = try await RawLineClient.connect(port: listener.port)
            #expect(await probe.waitForClose())
            #expect(listener.connections == 1)
        }
    }
}
