import AerieTransport
import Foundation
import Logging
import ServiceLifecycle
import Synchronization

/// DIDComm endpoints that take every POST (202) and count them, opening nothing: the peers of a
/// benchmark's outbound deliveries, where what matters is how many arrive, not what they say.
/// `hosts` endpoints, each on its own loopback address (127.0.0.1, 127.0.0.2, ...): delivery
/// counts every port of one address as one destination, so each address is a peer of its own.
public final class CountingInbox: Sendable {
    private let group: ServiceGroup
    private let running: Task<Void, any Error>
    /// The endpoints' URLs, one per host.
    public let urls: [String]

    private final class Box: Sendable {
        let count = Atomic<Int>(0)
    }

    private let box: Box

    public init(hosts: Int = 1) async throws {
        let box = Box()
        var listeners: [HTTPListener] = []
        for index in 0..<max(1, hosts) {
            let host = "127.0.\(index / 250).\(index % 250 + 1)"
            listeners.append(
                HTTPListener(
                    configuration: HTTPListener.Configuration(host: host, port: 0), logger: Logger(label: "counting-inbox"),
                    didcomm: { _ in
                        box.count.add(1, ordering: .relaxed)
                        return (202, nil)
                    }))
        }
        let group = ServiceGroup(services: listeners, gracefulShutdownSignals: [], logger: Logger(label: "counting-inbox"))
        self.box = box
        self.group = group
        running = Task { try await group.run() }
        var urls: [String] = []
        for (index, listener) in listeners.enumerated() {
            urls.append("http://127.0.\(index / 250).\(index % 250 + 1):\(try await listener.listeningPort())")
        }
        self.urls = urls
    }

    /// POSTs taken so far, by all the endpoints.
    public var count: Int { box.count.load(ordering: .relaxed) }

    public func stop() async {
        await group.triggerGracefulShutdown()
        _ = try? await running.value
    }
}
