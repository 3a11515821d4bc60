import AerieCore
import AerieTransport
import Foundation
import Logging
import ServiceLifecycle
import Synchronization

/// A receiver of ACA-Py's webhooks (`--webhook-url`, posted to `{url}/topic/{topic}/`), kept as
/// (topic, body) in arrival order.
public final class ACAPyWebhooks: Sendable {
    private final class Received: Sendable {
        let items = Mutex<[(topic: String, body: JSONValue)]>([])
        let counts = Mutex<[String: Int]>([:])

        func append(_ topic: String, _ body: JSONValue) {
            items.withLock { $0.append((topic, body)) }
            counts.withLock { $0[topic, default: 0] += 1 }
        }
    }
    private let received: Received
    private let group: ServiceGroup
    private let running: Task<Void, any Error>
    public let port: Int

    public init() async throws {
        let received = Received()
        let server = HTTPListener(
            configuration: HTTPListener.Configuration(host: "127.0.0.1", port: 0), name: "webhooks", logger: Logger(label: "webhooks")
        ) { request in
            let parts = request.path.split(separator: "/")
            if let index = parts.firstIndex(of: "topic"), index + 1 < parts.count, let body = try? JSONValue(parsing: request.body) {
                received.append(String(parts[index + 1]), body)
            }
            return HTTPListener.Answer(status: 200)
        }
        let group = ServiceGroup(services: [server], gracefulShutdownSignals: [], logger: Logger(label: "webhooks"))
        self.received = received
        self.group = group
        running = Task { try await group.run() }
        port = try await server.listeningPort()
    }

    /// What to pass ACA-Py as `--webhook-url`.
    public var url: String { "http://127.0.0.1:\(port)/hooks" }

    /// Waits (`timeout` at most) for a webhook of `topic` whose body matches.
    public func wait(_ topic: String, timeout: Duration = .seconds(20), where predicate: (JSONValue) -> Bool) async throws -> JSONValue? {
        let deadline = ContinuousClock.now + timeout
        while ContinuousClock.now < deadline {
            if let found = all.first(where: { $0.topic == topic && predicate($0.body) }) { return found.body }
            try await Task.sleep(for: .milliseconds(50))
        }
        return nil
    }

    public var all: [(topic: String, body: JSONValue)] { received.items.withLock { $0 } }

    /// How many webhooks of `topic` arrived so far.
    public func count(_ topic: String) -> Int {
        received.counts.withLock { $0[topic] ?? 0 }
    }

    public func stop() async {
        await group.triggerGracefulShutdown()
        _ = try? await running.value
    }
}
