import AerieCore
import AerieCrypto
import AerieTransport
import Foundation
import Logging
import ServiceLifecycle
import Synchronization

/// A peer's DIDComm endpoint for tests: an `HTTPListener` on a free loopback port that opens what
/// it receives with the peer's key and keeps it; it answers `status` (202 by default), and
/// `onMessage` may act on each message (answer a ping...).
final class PeerInbox: Sendable {
    struct Received: Sendable {
        var message: JSONValue
        var senderVerkey: String?
    }

    private final class State: Sendable {
        let received = Mutex<[Received]>([])
        let status: Mutex<Int>
        init(status: Int) { self.status = Mutex(status) }
    }

    let key: Ed25519KeyPair
    let port: Int
    private let group: ServiceGroup
    private let running: Task<Void, any Error>
    private let state: State

    var url: String { "http://127.0.0.1:\(port)" }

    init(key: Ed25519KeyPair = .generate(), status: Int = 202, onMessage: (@Sendable (Received) async -> Void)? = nil) async throws {
        let state = State(status: status)
        let server = HTTPListener(
            configuration: HTTPListener.Configuration(host: "127.0.0.1", port: 0), logger: Logger(label: "peer-inbox"),
            didcomm: { body in
                if let opened = try? DIDCommEnvelope(parsing: body).open(with: key),
                    let message = try? JSONValue(parsing: opened.plaintext)
                {
                    let received = Received(message: message, senderVerkey: opened.senderVerkey)
                    state.received.withLock { $0.append(received) }
                    await onMessage?(received)
                }
                return (state.status.withLock { $0 }, nil)
            })
        let group = ServiceGroup(services: [server], gracefulShutdownSignals: [], logger: Logger(label: "peer-inbox"))
        self.key = key
        self.state = state
        self.group = group
        self.running = Task { try await group.run() }
        self.port = try await server.listeningPort()
    }

    var received: [Received] { state.received.withLock { $0 } }

    func setStatus(_ status: Int) { state.status.withLock { $0 = status } }

    /// Waits (10 s at most) for a message matching `predicate`.
    func wait(timeout: Duration = .seconds(10), for predicate: (JSONValue) -> Bool) async throws -> Received? {
        let deadline = ContinuousClock.now + timeout
        while ContinuousClock.now < deadline {
            if let found = received.first(where: { predicate($0.message) }) { return found }
            try await Task.sleep(for: .milliseconds(20))
        }
        return nil
    }

    func stop() async {
        await group.triggerGracefulShutdown()
        _ = try? await running.value
    }
}
