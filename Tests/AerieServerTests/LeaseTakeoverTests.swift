import AerieClient
import AerieCore
import AerieCrypto
import AerieTesting
import AerieTransport
import Foundation
import Logging
import ServiceLifecycle
import Synchronization
import Testing

/// Issue 18: two real `aerie-server` processes on one database. The first is killed with
/// SIGKILL while it is in the middle of sending an outbox row (the peer holds the request
/// unanswered); the second, never told anything, sends that row once its lease has run out.
@Suite(.serialized, .timeLimit(.minutes(10))) struct LeaseTakeoverTests {
    /// A DIDComm peer that holds every POST unanswered until `answering`, then answers 202.
    final class Peer: Sendable {
        let state = Mutex<(answering: Bool, held: [[UInt8]], answered: [[UInt8]])>((false, [], []))

        var held: [[UInt8]] { state.withLock { $0.held } }
        var answered: [[UInt8]] { state.withLock { $0.answered } }
        func startAnswering() { state.withLock { $0.answering = true } }

        func receive(_ body: [UInt8]) async -> (status: Int, body: [UInt8]?) {
            let answering = state.withLock { state in
                if state.answering { state.answered.append(body) } else { state.held.append(body) }
                return state.answering
            }
            if answering { return (202, nil) }
            while !state.withLock({ $0.answering }) { try? await Task.sleep(for: .milliseconds(50)) }
            return (503, nil)
        }
    }

    @Test func aDeadServersLeasedRowIsSentByAnother() async throws {
        let peer = Peer()
        let listener = HTTPListener(
            configuration: HTTPListener.Configuration(host: "127.0.0.1", port: 0), logger: Logger(label: "peer"),
            didcomm: { body in await peer.receive(body) })
        let group = ServiceGroup(services: [listener], gracefulShutdownSignals: [], logger: Logger(label: "peer"))
        let running = Task { try await group.run() }
        defer {
            Task {
                await group.triggerGracefulShutdown()
                _ = try? await running.value
            }
        }
        let peerPort = try await listener.listeningPort()

        let database = try await TestPostgres.shared.freshDatabase()
        let masterKey = Data(Random.bytes(32)).base64EncodedString()
        func server(_ instance: String) throws -> ServerProcess {
            try ServerProcess(
                database: database,
                environment: ["AERIE_INSTANCE": instance, "AERIE_MASTER_KEY": masterKey, "AERIE_DELIVERY_LEASE_SECONDS": "3"])
        }
        let first = try server("first")
        let second = try server("second")
        do {
            try await first.start()
            let tenant = try await first.createTenant(label: "lease")
            let client = try await first.tenantClient(token: tenant.token)
            let invitation: JSONValue = [
                "@type": "https://didcomm.org/connections/1.0/invitation", "@id": .string(UUID().uuidString.lowercased()),
                "label": "held peer", "recipientKeys": [.string(Ed25519KeyPair.generate().verkeyBase58)],
                "serviceEndpoint": .string("http://127.0.0.1:\(peerPort)"),
            ]
            _ = try await client.call("connections.accept", params: ["invitation": invitation, "wait": false])
            await client.close()

            // The first server is sending the Request: the peer holds it. Then the machine dies.
            let deadline = ContinuousClock.now + .seconds(30)
            while peer.held.isEmpty, ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(50)) }
            let sentByFirst = try #require(peer.held.first, "the first server never posted the Request")
            await first.kill9()
            peer.startAnswering()

            // The second server was not running when the row was leased; it takes it after the lease.
            let started = ContinuousClock.now
            try await second.start()
            while peer.answered.isEmpty, ContinuousClock.now - started < .seconds(30) {
                try await Task.sleep(for: .milliseconds(50))
            }
            let sentBySecond = try #require(peer.answered.first, "the second server never sent the dead server's row")
            #expect(sentBySecond == sentByFirst, "the same envelope, so the peer can tell it is the same message")
            #expect(peer.answered.count == 1)

            // And it recorded the row as sent: nothing pending, one successful delivery.
            var metrics = try await RawLineClient.httpGet(port: second.metricsPort, path: "/metrics").body
            for _ in 0..<80 where OperatorEndpointTests.value(metrics, "aerie_outbox_pending") != 0 {
                try await Task.sleep(for: .milliseconds(100))
                metrics = try await RawLineClient.httpGet(port: second.metricsPort, path: "/metrics").body
            }
            #expect(OperatorEndpointTests.value(metrics, "aerie_outbox_pending") == 0)
            #expect(OperatorEndpointTests.value(metrics, "aerie_delivery_attempts_total", ["outcome": "sent"]) == 1)
            print("lease takeover: the dead server's row was sent by the other \(ContinuousClock.now - started) after it started")
        } catch {
            print("first:\n\(first.log().suffix(2000))\nsecond:\n\(second.log().suffix(2000))")
            await first.cleanUp()
            await second.cleanUp()
            try? await database.drop()
            throw error
        }
        await first.cleanUp()
        await second.cleanUp()
        try? await database.drop()
    }
}
