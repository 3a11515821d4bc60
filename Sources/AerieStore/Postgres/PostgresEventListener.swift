import Foundation
import Logging
import Synchronization

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

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
    /// `stop()` writes a byte here to end the thread's wait for notifications, which otherwise
    /// blocks until one arrives: no timed polls while the server is idle (a 200 ms poll woke the
    /// thread five times a second). -1 when the pipe could not be made: the wait then times out
    /// every `pollMilliseconds` to notice `stop()`.
    private let wakePipe: (read: Int32, write: Int32)

    /// How long one wait blocks when there is no wake pipe.
    static let pollMilliseconds: Int32 = 200
    static let reconnectDelay: TimeInterval = 1
    /// TCP keepalive on the LISTEN connection (unless the connection string sets its own): it is
    /// idle while nothing happens, and without probes a peer or path that died silently (a
    /// failover, a dropped NAT entry) would leave it waiting for notifications that never come,
    /// with every cache it keeps true trusted. Found within about a minute this way.
    package static let connectionDefaults: [(keyword: String, value: String)] = [
        ("keepalives", "1"), ("keepalives_idle", "30"), ("keepalives_interval", "10"), ("keepalives_count", "3"),
        ("tcp_user_timeout", "60000"),
    ]

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
        var fds: [Int32] = [-1, -1]
        wakePipe = pipe(&fds) == 0 ? (fds[0], fds[1]) : (-1, -1)
    }

    deinit {
        if wakePipe.read >= 0 {
            close(wakePipe.read)
            close(wakePipe.write)
        }
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

    /// Ends the thread: its wait for notifications returns at once.
    package func stop() {
        let first = state.withLock { state in
            defer { state.stopped = true }
            return !state.stopped
        }
        if first, wakePipe.write >= 0 {
            var byte: UInt8 = 1
            _ = write(wakePipe.write, &byte, 1)
        }
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
                let connection = try PostgresConnection(conninfo: conninfo, defaults: Self.connectionDefaults)
                defer { connection.close() }
                try connection.script("LISTEN \(channel)")
                listeningChanged(true)
                state.withLock { $0.listening = true }
                logger.debug("listening for events", metadata: ["channel": "\(channel)"])
                while !stopped {
                    let events = try connection.waitForNotifications(
                        timeoutMilliseconds: wakePipe.read >= 0 ? -1 : Self.pollMilliseconds, wakeDescriptor: wakePipe.read)
                    for event in events where event.channel == channel {
                        deliver(event.payload)
                    }
                }
                setNotListening()
            } catch {
                setNotListening()
                if stopped { return }
                logger.warning("event listener connection failed; reconnecting", metadata: ["error": "\(error)"])
                // Ends early when `stop()` writes the pipe; without a pipe (fd -1, which poll
                // ignores) it is a plain wait, and `stop()` is seen when it ends.
                var descriptor = pollfd(fd: wakePipe.read, events: Int16(POLLIN), revents: 0)
                _ = poll(&descriptor, 1, Int32(Self.reconnectDelay * 1000))
            }
        }
    }
}
