import AerieClient
import AerieCore
import AerieServer
import AerieTesting
import AerieTransport
import Foundation
import Testing

/// `AERIE_ALLOWED_NETWORKS` opens non-public networks to peers only and
/// `AERIE_WEBHOOK_ALLOWED_NETWORKS` to the operator's webhook receivers only: allowing an
/// internal receivers' network never lets a stranger's endpoint make the server POST into it.
@Suite(.timeLimit(.minutes(10))) struct NetworkSeparationTests {
    @Test func eachListOpensItsNetworksToItsOwnDestinationsOnly() async throws {
        let peer = try await LoopbackListener.start()
        defer { Task { await peer.stop() } }
        try await LiveServer.with(server: {
            $0.outbound.allowPrivateURLs = false
            $0.outbound.allowedNetworks = [IPNetwork("127.0.0.1/32")!]
            $0.outbound.webhookAllowedNetworks = [IPNetwork("127.0.0.2/32")!]
            $0.webhooks.allowHTTP = true
            $0.delivery.pollInterval = .milliseconds(100)
        }) { server in
            let admin = try await server.adminClient()
            defer { Task { await admin.close() } }
            let backend = try await BackendSessionTests.createBackend(admin, "receivers")
            func setWebhook(_ url: String) async -> AerieClientError? {
                await OutboundAddressPolicyTests.rpcError {
                    try await admin.call("admin.backends.setWebhook", params: ["backendId": .string(backend.id), "url": .string(url)])
                }
            }
            // The peers' network is refused as a webhook receiver, naming the webhook setting.
            let peersNetwork = await setWebhook("http://127.0.0.1:\(peer.port)/hook")
            #expect(peersNetwork?.code == -32602, "\(String(describing: peersNetwork))")
            #expect(peersNetwork?.field == "url")
            #expect(peersNetwork?.message.contains("AERIE_WEBHOOK_ALLOWED_NETWORKS") == true, "\(String(describing: peersNetwork))")
            // The receivers' network is accepted as one.
            let accepted = try await admin.call(
                "admin.backends.setWebhook", params: ["backendId": .string(backend.id), "url": .string("http://127.0.0.2:\(peer.port)/hook")])
            #expect(accepted["url"] == .string("http://127.0.0.2:\(peer.port)/hook"))

            let (alice, _) = try await server.tenantClient(label: "alice")
            defer { Task { await alice.close() } }
            // The receivers' network is refused as a peer's endpoint...
            let receiversNetwork = await OutboundAddressPolicyTests.rpcError {
                try await alice.call(
                    "connections.accept",
                    params: ["invitation": try OutboundAddressPolicyTests.invitation(endpoint: "http://127.0.0.2:\(peer.port)/")])
            }
            #expect(receiversNetwork?.stableCode == "peer_unreachable", "\(String(describing: receiversNetwork))")
            #expect(receiversNetwork?.message.contains("AERIE_ALLOWED_NETWORKS") == true, "\(String(describing: receiversNetwork))")
            // ...and the peers' network accepted, the Request really sent there.
            let connecting = try await alice.call(
                "connections.accept",
                params: ["invitation": try OutboundAddressPolicyTests.invitation(endpoint: "http://127.0.0.1:\(peer.port)/")])
            #expect(connecting["state"] == 2, "\(connecting)")
            for _ in 0..<100 where peer.connections == 0 { try await Task.sleep(for: .milliseconds(100)) }
            #expect(peer.connections >= 1)
        }
    }

    @Test func theWebhookListIsReadFromTheEnvironment() throws {
        let configuration = try AerieConfiguration.fromEnvironment([
            "AERIE_ALLOWED_NETWORKS": "10.0.0.0/8", "AERIE_WEBHOOK_ALLOWED_NETWORKS": "192.168.5.0/24,fd00::/8",
        ])
        #expect(configuration.outbound.allowedNetworks == [IPNetwork("10.0.0.0/8")!])
        #expect(configuration.outbound.webhookAllowedNetworks == [IPNetwork("192.168.5.0/24")!, IPNetwork("fd00::/8")!])
        #expect(try AerieConfiguration.fromEnvironment([:]).outbound.webhookAllowedNetworks.isEmpty)
        #expect(throws: (any Error).self) { try AerieConfiguration.fromEnvironment(["AERIE_WEBHOOK_ALLOWED_NETWORKS": "not a network"]) }
    }
}
