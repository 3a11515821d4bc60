import AerieTesting
import AerieTransport
import Foundation
import Logging
import ServiceLifecycle
import Synchronization

/// One public DIDComm endpoint in front of several servers, as HAProxy with `retry-on 503` and
/// `option redispatch` (deploy/haproxy): each POST goes to the first server, and to the next
/// while a server answers 503 or cannot be reached. What peers of a moved tenant reach.
final class SharedEndpoint: Sendable {
    let port: Int
    private final class Ports: Sendable {
        let value = Mutex<[Int]>([])
    }

    private let servers = Ports()
    private let group: ServiceGroup
    private let running: Task<Void, any Error>

    var url: String { "http://127.0.0.1:\(port)" }

    init() async throws {
        let servers = self.servers
        let listener = HTTPListener(
            configuration: HTTPListener.Configuration(host: "127.0.0.1", port: 0), logger: Logger(label: "shared-endpoint"),
            didcomm: { body in
                var last = 503
                for port in servers.value.withLock({ $0 }) {
                    guard let answer = try? await LoopbackHTTP.request(
                        "POST", port: port, path: "/", body: body, contentType: "application/didcomm-envelope-enc")
                    else { continue }
                    last = answer.status
                    if answer.status != 503 { return (answer.status, answer.body.isEmpty ? nil : answer.body) }
                }
                return (last, nil)
            })
        group = ServiceGroup(services: [listener], gracefulShutdownSignals: [], logger: Logger(label: "shared-endpoint"))
        let group = self.group
        running = Task { try await group.run() }
        port = try await listener.listeningPort()
    }

    /// The servers' DIDComm ports, in the order tried.
    func route(to ports: [Int]) { servers.value.withLock { $0 = ports } }

    func stop() async {
        await group.triggerGracefulShutdown()
        _ = try? await running.value
    }
}
