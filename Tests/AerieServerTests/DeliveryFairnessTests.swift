import AerieClient
import AerieCore
import AerieTesting
import Foundation
import Testing

/// Outbound delivery isolates destinations (issue 13 item 4): tenant A's peer is a tarpit (a
/// socket that accepts and never answers, so each send holds its transfer until the 15 s
/// timeout), with a dozen Requests queued to it; tenant B meanwhile connects to a real ACA-Py in
/// normal time, because the tarpit holds at most its per-destination share of the delivery
/// slots and the due scan skips its rows while it does.
@Suite(.serialized, .timeLimit(.minutes(10))) struct DeliveryFairnessTests {
    @Test func aTarpitPeerDelaysOnlyItsOwnRows() async throws {
        let tarpit = try await LoopbackListener.start(closingAccepted: false)
        defer { Task { await tarpit.stop() } }
        let agent = try await ACAPyAgent.start()
        do {
            try await LiveServer.with(server: {
                $0.allowPrivateURLs = true
                $0.deliveryConcurrency = 8
                $0.deliveryPerDestination = 3
            }) { server in
                let (alice, _) = try await server.tenantClient(label: "alice")
                let (bob, _) = try await server.tenantClient(label: "bob")
                defer { Task { await alice.close(); await bob.close() } }
                for _ in 0..<12 {
                    let invitation = try OutboundAddressPolicyTests.invitation(endpoint: "http://127.0.0.1:\(tarpit.port)/")
                    #expect(try await alice.call("connections.accept", params: ["invitation": invitation])["state"] == 2)
                }
                // The tarpit now holds its share of the slots.
                for _ in 0..<100 where tarpit.connections < 3 { try await Task.sleep(for: .milliseconds(50)) }
                #expect(tarpit.connections == 3)

                let created = try await agent.admin("POST", "/connections/create-invitation", body: [:])
                let url = try #require(created["invitation_url"]?.stringValue)
                let started = ContinuousClock.now
                let accepted = try await bob.call(
                    "connections.accept", params: ["url": .string(url), "wait": true, "timeoutSeconds": 30])
                let elapsed = ContinuousClock.now - started
                #expect(accepted["state"] == 4, "\(accepted)")
                // Well inside the tarpit's 15 s hold: bob's Request never waited behind alice's.
                #expect(elapsed < .seconds(10), "bob's connection took \(elapsed)")
                // And the tarpit still held no more than its share.
                #expect(tarpit.connections == 3, "\(tarpit.connections) connections to the tarpit")
            }
        } catch {
            print("ACA-Py log:\n\(agent.log().suffix(4000))")
            await agent.stop()
            throw error
        }
        await agent.stop()
    }
}
