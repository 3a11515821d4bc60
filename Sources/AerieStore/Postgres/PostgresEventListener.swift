import Foundation
import Logging
import Synchronization

/// LISTENs on one PostgreSQL channel on a dedicated connection and thread (libpq blocks, and the
/// wait is indefinite, so it must not hold a pool thread), handing each payload to `deliver`.
/// A lost connection is reopened and the LISTEN repeated; notifications sent while it was down
/// are lost (PostgreSQL keeps none for an absent listener).
package final class PostgresEventListener: Sendable {
    package let channel: String
    private let conninfo: String
    private let logger: Logger
    private let deliver: @Sendable (String) -> Void
    private let listeningChanged: @Sendable (Bool) -> Void
    private let state = Mutex<(started: Bool, stopped: Bool, listening: Bool)>((false, false, false))

    /// How long one wait blocks, so that `stop()` is noticed.
    static let pollMilliseconds: Int32 = 200
    static let reconnectDelay: TimeInterval = 1

    /// `listeningChanged` runs on the listening thread when the LISTEN is in place (true, before
    /// any notification of that connection is delivered) and when it is lost (false), so that
    /// whatever relies on seeing every event knows when it may not have.
    package init(
        conninfo: String, channel: String, logger: Logger,
        listeningChanged: @escaping @Sendable (Bool) -> Void = { _ in },
        deliver: @escaping @Sendable (String) -> Void
    ) {
        precondition(channel.allSatisfy { $0.isLetter || $0 == "_" }, "channel must be a plain identifier")
        self.conninfo = conninfo
        self.channel = channel
        self.logger = logger
        self.listeningChanged = listeningChanged
        self.deliver = deliver
    }

    /// Whether the LISTEN is in place now.
    package var isListening: Bool { state.withLock { $0.listening } }

    /// Starts the listening thread once.
    package func start() {
        let first = state.withLock { state in
            defer { state.started = true }
            return !state.started
        }
        guard first else { return }
        let thread = Thread { [self] in self.loop() }
        thread.name = "aerie-listen"
        thread.start()
    }

    /// Ends the thread within one poll interval.
    package func stop() {
        state.withLock { $0.stopped = true }
    }

    private var stopped: Bool { state.withLock { $0.stopped } }

    private func setNotListening() {
        let was = state.withLock { state in
            defer { state.listening = false }
            return state.listening
        }
        if was { listeningChanged(false) }
    }

    private func loop() {
        while !stopped {
            do {
                let connection = try PostgresConnection(conninfo: conninfo)
                defer { connection.close() }
                try connection.script("LISTEN \(channel)")
                listeningChanged(true)
                state.withLock { $0.listening = true }
                logger.debug("listening for events", metadata: ["channel": "\(channel)"])
                while !stopped {
                    for event in try connection.waitForNotifications(timeoutMilliseconds: Self.pollMilliseconds)
                    where event.channel == channel {
                        deliver(event.payload)
                    }
                }
                setNotListening()
            } catch {
                setNotListening()
                if stopped { return }
                logger.warning("event listener connection failed; reconnecting", metadata: ["error": "\(error)"])
                var waited: TimeInterval = 0
                while waited < Self.reconnectDelay, !stopped {
                    Thread.sleep(forTimeInterval: 0.1)
                    waited += 0.1
                }
            }
        }
    }
}
