import AerieClient
import AerieCore
import AerieCrypto
import AerieTesting
import AerieTransport
import Foundation
import Testing

/// The outbound address policy, end to end (issue 13 item 7): an endpoint the server could never
/// send to is refused when the invitation is connected, before anything is stored, with an error
/// naming the setting that would allow it; a peer endpoint refused at delivery time (a DIDDoc
/// naming a private address) fails its send at once instead of retrying; `AERIE_ALLOWED_NETWORKS`
/// admits chosen private networks and nothing else.
@Suite(.timeLimit(.minutes(10))) struct OutboundAddressPolicyTests {
    static func invitation(endpoint: String) throws -> JSONValue {
        let key = try Ed25519KeyPair(seed: Random.bytes(32))
        return [
            "@type": "https://didcomm.org/connections/1.0/invitation", "@id": .string(UUID().uuidString), "label": "Local",
            "recipientKeys": .array([.string(key.verkeyBase58)]), "serviceEndpoint": .string(endpoint),
        ]
    }

    static func rpcError(_ body: () async throws -> JSONValue) async -> AerieClientError? {
        do {
            let answer = try await body()
            Issue.record("expected an error, got \(answer)")
            return nil
        } catch let error as AerieClientError {
            return error
        } catch {
            Issue.record("expected an AerieClientError, got \(error)")
            return nil
        }
    }

    static func count(_ table: String, tenant: TenantID, _ server: LiveServer) async throws -> Int {
        let rows = try await WalletFixture.asSuperuser(server.database) { session in
            try session.query("SELECT count(*)::text FROM aerie.\(table) WHERE tenant_id = $1::uuid", [.text(tenant.rawValue)]).allRows()
        }
        return Int(rows.first?[0] ?? "") ?? -1
    }

    @Test func aLoopbackEndpointIsRefusedBeforeAnythingIsStored() async throws {
        let listener = try await LoopbackListener.start()
        defer { Task { await listener.stop() } }
        try await LiveServer.with(server: {
            $0.outbound.allowPrivateURLs = false
            $0.outbound.allowedNetworks = []
        }) { server in
            let (alice, aliceID) = try await server.tenantClient(label: "alice")
            defer { Task { await alice.close() } }
            let endpoint = "http://127.0.0.1:\(listener.port)/"

            // accept: refused at once (no 30 s wait for an answer that cannot come), nothing stored.
            let started = ContinuousClock.now
            let refused = await Self.rpcError {
                try await alice.call("connections.accept", params: ["invitation": try Self.invitation(endpoint: endpoint), "wait": true])
            }
            // Well under the 30 s wait it replaces, far above a loaded CI box's slowness.
            #expect(ContinuousClock.now - started < .seconds(20))
            #expect(refused?.stableCode == "peer_unreachable", "\(String(describing: refused))")
            #expect(refused?.field == "invitation")
            #expect(refused?.message.contains("AERIE_ALLOWED_NETWORKS") == true, "\(String(describing: refused))")
            #expect(refused?.message.contains(endpoint) == true, "\(String(describing: refused))")
            #expect(try await Self.count("connections", tenant: aliceID, server) == 0)
            #expect(try await Self.count("tenant_keys", tenant: aliceID, server) == 0)
            #expect(try await Self.count("outbox", tenant: aliceID, server) == 0)

            // createWithInvite stores the invitation (nothing is sent); connect is refused and
            // leaves it as it was.
            let created = try await alice.call("connections.createWithInvite", params: ["invitation": try Self.invitation(endpoint: endpoint)])
            let id = try #require(created["connectionId"]?.stringValue)
            let connect = await Self.rpcError { try await alice.call("connections.connect", params: ["connectionId": .string(id)]) }
            #expect(connect?.stableCode == "peer_unreachable", "\(String(describing: connect))")
            #expect(try await alice.call("connections.get", params: ["connectionId": .string(id)])["state"] == 1)
            #expect(try await Self.count("tenant_keys", tenant: aliceID, server) == 0)
            #expect(try await Self.count("outbox", tenant: aliceID, server) == 0)

            // A host name is judged by the addresses it resolves to; a WebSocket endpoint cannot
            // be sent to (outbound is HTTP only).
            let named = await Self.rpcError {
                try await alice.call(
                    "connections.accept", params: ["invitation": try Self.invitation(endpoint: "http://localhost:\(listener.port)/")])
            }
            #expect(named?.stableCode == "peer_unreachable", "\(String(describing: named))")
            let websocket = await Self.rpcError {
                try await alice.call("connections.accept", params: ["invitation": try Self.invitation(endpoint: "wss://example.org/")])
            }
            #expect(websocket?.stableCode == "unsupported_invitation", "\(String(describing: websocket))")
            #expect(try await Self.count("connections", tenant: aliceID, server) == 1)

            // Judged without connecting: the listening address saw nothing.
            #expect(listener.connections == 0)
            let probe = try await RawLineClient.connect(port: listener.port)
            #expect(await probe.waitForClose())
            #expect(listener.connections == 1)
        }
    }

    @Test func allowedNetworksAdmitOnlyTheNamedNetworks() async throws {
        let listener = try await LoopbackListener.start()
        defer { Task { await listener.stop() } }
        try await LiveServer.with(server: {
            $0.outbound.allowPrivateURLs = false
            $0.outbound.allowedNetworks = [IPNetwork("127.0.0.1/32")!]
            $0.delivery.pollInterval = .milliseconds(100)
        }) { server in
            let (alice, _) = try await server.tenantClient(label: "alice")
            defer { Task { await alice.close() } }
            let accepted = try await alice.call(
                "connections.accept", params: ["invitation": try Self.invitation(endpoint: "http://127.0.0.1:\(listener.port)/")])
            #expect(accepted["state"] == 2, "\(accepted)")
            // The Request really goes there.
            for _ in 0..<100 where listener.connections == 0 { try await Task.sleep(for: .milliseconds(100)) }
            #expect(listener.connections >= 1)
            // 127.0.0.2 is loopback too, but outside the allowed network.
            let outside = await Self.rpcError {
                try await alice.call(
                    "connections.accept", params: ["invitation": try Self.invitation(endpoint: "http://127.0.0.2:\(listener.port)/")])
            }
            #expect(outside?.stableCode == "peer_unreachable", "\(String(describing: outside))")
        }
    }

    /// The peer's DIDDoc (from its Response) names an endpoint the policy refuses: the
    /// didexchange `complete` to it fails on its first attempt, with the reason, though the
    /// retry horizon (72 hours by default) is far off, and its outbox row goes.
    @Test func aRefusedPeerEndpointFailsTheSendAtOnce() async throws {
        try await LiveServer.with(server: {
            $0.outbound.allowPrivateURLs = false
            $0.outbound.allowedNetworks = [IPNetwork("127.0.0.1/32")!]
            $0.delivery.backoff = .seconds(30)
            $0.delivery.pollInterval = .milliseconds(100)
        }) { server in
            let (alice, aliceID) = try await server.tenantClient(label: "alice")
            defer { Task { await alice.close() } }
            // Established by a real didexchange handshake whose Response names 127.0.0.2; the
            // `complete` is enqueued by the call that applies the Response. (The Request to the
            // inviter's 127.0.0.1:9 is allowed, and retried.)
            let started = ContinuousClock.now
            _ = try await TestPeer.connect(alice, endpoint: "http://127.0.0.2:9")

            var left = -1
            for _ in 0..<100 {
                left = try await WalletFixture.asSuperuser(server.database) { session in
                    try session.query(
                        "SELECT count(*) FROM aerie.outbox WHERE tenant_id = $1::uuid AND destination = 'http://127.0.0.2:9'",
                        [.text(aliceID.rawValue)]
                    ).int(0, 0) ?? -1
                }
                if left == 0 { break }
                try await Task.sleep(for: .milliseconds(100))
            }
            #expect(left == 0, "the refused row is still there")
            #expect(ContinuousClock.now - started < .seconds(30), "the refusal waited for a retry")
        }
    }
}
