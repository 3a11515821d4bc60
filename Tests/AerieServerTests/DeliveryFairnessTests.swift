import AerieClient
import AerieCore
import AerieTesting
import Foundation
import Testing

/// Outbound delivery isolates destinations by address (`DeliveryLimits`): tenant A's peers are
/// tarpits (sockets that accept and never answer, so each send holds its transfer until the
/// 15 s timeout) on several ports of one address (127.0.0.2 stands for the attacker's host),
/// with Requests queued to every port; the tarpit holds at most its per-destination share of
/// the delivery slots however many ports it names, the due scan skips its rows while it does,
/// and once its deliveries time out it drops to one slot. Tenant B meanwhile delivers in
/// normal time.
@Suite(.serialized, .timeLimit(.minutes(10))) struct DeliveryFairnessTests {
    /// Tarpits on `ports` ports of 127.0.0.2 and `requests` Requests of alice's spread over them.
    static func tarpits(_ ports: Int, requests: Int, alice: AerieClient) async throws -> [LoopbackListener] {
        var tarpits: [LoopbackListener] = []
        for _ in 0..<ports { tarpits.append(try await LoopbackListener.start(closingAccepted: false, host: "127.0.0.2")) }
        for n in 0..<requests {
            let invitation = try OutboundAddressPolicyTests.invitation(endpoint: "http://127.0.0.2:\(tarpits[n % ports].port)/")
            #expect(try await alice.call("connections.accept", params: ["invitation": invitation])["state"] == 2)
        }
        return tarpits
    }

    static func held(_ tarpits: [LoopbackListener]) -> Int { tarpits.reduce(0) { $0 + $1.connections } }

    @Test func aTarpitPeerDelaysOnlyItsOwnRows() async throws {
        let agent = try await ACAPyAgent.start()
        var tarpits: [LoopbackListener] = []
        do {
            try await LiveServer.with(server: {
                $0.outbound.allowPrivateURLs = true
                $0.delivery.concurrency = 8
                $0.delivery.perDestination = 3
            }) { server in
                let (alice, _) = try await server.tenantClient(label: "alice")
                let (bob, _) = try await server.tenantClient(label: "bob")
                defer { Task { await alice.close(); await bob.close() } }
                tarpits = try await Self.tarpits(4, requests: 12, alice: alice)
                // The tarpit now holds its share of the slots: three, though it named four ports.
                for _ in 0..<100 where Self.held(tarpits) < 3 { try await Task.sleep(for: .milliseconds(50)) }
                try await Task.sleep(for: .milliseconds(300))
                #expect(Self.held(tarpits) == 3)

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
                #expect(Self.held(tarpits) == 3, "\(Self.held(tarpits)) connections to the tarpit")
            }
        } catch {
            print("ACA-Py log:\n\(agent.log().suffix(4000))")
            await agent.stop()
            for tarpit in tarpits { await tarpit.stop() }
            throw error
        }
        await agent.stop()
        for tarpit in tarpits { await tarpit.stop() }
    }

    /// The attack at the default limits (32 slots, 4 per destination): eight tarpit
    /// ports of one host named in 40 Requests. They hold 4 slots, not 32; after their first
    /// timeouts (15 s) the circuit breaker leaves them one; Bob's basic messages to his peer
    /// arrive in under 3 s all along, across the tarpit's timeout wave.
    @Test func eightTarpitPortsOfOneHostHoldOneDestinationsSlotsThenOne() async throws {
        let inbox = try await PeerInbox()
        var tarpits: [LoopbackListener] = []
        defer { Task { await inbox.stop() } }
        do {
            try await LiveServer.with(server: { $0.outbound.allowPrivateURLs = true }) { server in
                let (alice, _) = try await server.tenantClient(label: "alice")
                let (bob, _) = try await server.tenantClient(label: "bob")
                defer { Task { await alice.close(); await bob.close() } }
                let peer = try await TestPeer.connect(bob, endpoint: inbox.url, key: inbox.key)
                let started = ContinuousClock.now
                tarpits = try await Self.tarpits(8, requests: 40, alice: alice)
                for _ in 0..<100 where Self.held(tarpits) < 4 { try await Task.sleep(for: .milliseconds(50)) }

                var slowest: Duration = .zero
                var n = 0
                // Bob sends until 25 s after the tarpit's first connections: past their 15 s timeout.
                while ContinuousClock.now - started < .seconds(25) {
                    n += 1
                    let sentAt = ContinuousClock.now
                    let sent = try await bob.call(
                        "messages.sendText", params: ["connectionId": .string(peer.connectionId), "content": .string("bob \(n)")])
                    let id = try #require(sent["@id"]?.stringValue)
                    #expect(try await inbox.wait(timeout: .seconds(3)) { $0["@id"] == .string(id) } != nil, "bob \(n) took over 3 s")
                    slowest = max(slowest, ContinuousClock.now - sentAt)
                    if ContinuousClock.now - started < .seconds(14) {
                        #expect(Self.held(tarpits) <= 4, "\(Self.held(tarpits)) connections to the tarpit before its timeout")
                    }
                    try await Task.sleep(for: .milliseconds(500))
                }
                // The first four timed out at ~15 s; since then one slot at a time (no second
                // timeout yet at 25 s): five connections, where without the breaker there would be eight.
                #expect(Self.held(tarpits) == 5, "\(Self.held(tarpits)) connections to the tarpit")
                #expect(slowest < .seconds(3), "bob's slowest delivery took \(slowest)")
                print("eight tarpit ports: bob's \(n) messages, slowest delivery \(slowest)")
            }
        } catch {
            for tarpit in tarpits { await tarpit.stop() }
            throw error
        }
        for tarpit in tarpits { await tarpit.stop() }
    }
}
