import NIOCore
import NIOPosix
import Synchronization

/// A bare TCP line client for protocol tests: sends exact bytes, reads lines back as they come,
/// so a test can send garbage, oversize lines or pipelined requests and see the server's answers.
///
/// Every read has a deadline: a server that stops answering or never closes fails the test with
/// `RawLineClient.Timeout` (or `waitForClose` answers false) instead of hanging the run.
public final class RawLineClient: Sendable {
    /// The deadline of a read when the caller gives none.
    public static let defaultTimeout: Duration = .seconds(15)

    /// No line (or no close) from the server within the deadline.
    public struct Timeout: Error, CustomStringConvertible {
        public let description: String
    }

    private let channel: NIOAsyncChannel<ByteBuffer, ByteBuffer>
    private let lines = LineQueue()
    private let reader: Task<Void, Never>

    public static func connect(host: String = "127.0.0.1", port: Int) async throws -> RawLineClient {
        let channel = try await ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .connectTimeout(.seconds(5))
            .channelOption(.socketOption(.tcp_nodelay), value: 1)
            .connect(host: host, port: port) { channel in
                channel.eventLoop.makeCompletedFuture {
                    try NIOAsyncChannel<ByteBuffer, ByteBuffer>(wrappingChannelSynchronously: channel)
                }
            }
        return RawLineClient(channel: channel)
    }

    private init(channel: NIOAsyncChannel<ByteBuffer, ByteBuffer>) {
        self.channel = channel
        let lines = self.lines
        reader = Task {
            var pending: [UInt8] = []
            do {
                for try await chunk in channel.inbound {
                    pending.append(contentsOf: chunk.readableBytesView)
                    while let newline = pending.firstIndex(of: UInt8(ascii: "\n")) {
                        lines.push(String(decoding: pending[..<newline], as: UTF8.self))
                        pending.removeSubrange(...newline)
                    }
                }
            } catch {}
            lines.finish()
        }
    }

    /// Sends `text` as is (add `\n` yourself).
    public func send(_ text: String) async throws {
        try await send(Array(text.utf8))
    }

    public func send(_ bytes: [UInt8]) async throws {
        try await channel.outbound.write(channel.channel.allocator.buffer(bytes: bytes))
    }

    /// The next line from the server, or nil once the server closed the session; throws
    /// `Timeout` when neither happens within `timeout`.
    public func readLine(timeout: Duration = RawLineClient.defaultTimeout) async throws -> String? {
        switch await lines.next(timeout: timeout) {
        case .line(let line): return line
        case .closed: return nil
        case .timedOut: throw Timeout(description: "no line from the server within \(timeout)")
        }
    }

    /// Whether the server closed the session within `timeout` (lines before the close are dropped).
    public func waitForClose(timeout: Duration = RawLineClient.defaultTimeout) async -> Bool {
        let deadline = ContinuousClock.now + timeout
        while true {
            switch await lines.next(timeout: deadline - .now) {
            case .line: continue
            case .closed: return true
            case .timedOut: return false
            }
        }
    }

    public func close() async {
        channel.outbound.finish()
        try? await channel.channel.close()
        reader.cancel()
    }

    /// A client dropped without `close()` must still finish its writer (NIO traps otherwise).
    deinit {
        channel.outbound.finish()
        channel.channel.close(promise: nil)
    }
}

/// Lines in arrival order with one waiting reader at a time; a read gives up at its deadline
/// without losing a line that arrives later.
private final class LineQueue: Sendable {
    enum Next: Sendable { case line(String), closed, timedOut }

    private struct State {
        var lines: [String] = []
        var finished = false
        var waiter: (id: Int, continuation: CheckedContinuation<Next, Never>)?
        var nextWaiter = 0
        /// The newest read whose timer fired (perhaps before that read started waiting).
        var lastExpired = 0
    }

    private let state = Mutex(State())

    func push(_ line: String) {
        let waiter = state.withLock { state -> CheckedContinuation<Next, Never>? in
            if let waiter = state.waiter {
                state.waiter = nil
                return waiter.continuation
            }
            state.lines.append(line)
            return nil
        }
        waiter?.resume(returning: .line(line))
    }

    func finish() {
        let waiter = state.withLock { state -> CheckedContinuation<Next, Never>? in
            state.finished = true
            defer { state.waiter = nil }
            return state.waiter?.continuation
        }
        waiter?.resume(returning: .closed)
    }

    func next(timeout: Duration) async -> Next {
        guard timeout > .zero else { return take() ?? .timedOut }
        let id = state.withLock { state in
            state.nextWaiter += 1
            return state.nextWaiter
        }
        let timer = Task {
            try? await Task.sleep(for: timeout)
            self.expire(id)
        }
        defer { timer.cancel() }
        return await withCheckedContinuation { continuation in
            let ready = state.withLock { state -> Next? in
                if !state.lines.isEmpty { return .line(state.lines.removeFirst()) }
                if state.finished { return .closed }
                if state.lastExpired >= id { return .timedOut }
                precondition(state.waiter == nil, "RawLineClient: one reader at a time")
                state.waiter = (id, continuation)
                return nil
            }
            if let ready { continuation.resume(returning: ready) }
        }
    }

    private func take() -> Next? {
        state.withLock { state in
            if !state.lines.isEmpty { return .line(state.lines.removeFirst()) }
            return state.finished ? .closed : nil
        }
    }

    private func expire(_ id: Int) {
        let waiter = state.withLock { state -> CheckedContinuation<Next, Never>? in
            state.lastExpired = max(state.lastExpired, id)
            guard let waiter = state.waiter, waiter.id == id else { return nil }
            state.waiter = nil
            return waiter.continuation
        }
        waiter?.resume(returning: .timedOut)
    }
}

extension RawLineClient {
    /// One HTTP/1.1 GET on a new connection (`Connection: close`): the status code and the body
    /// (lines joined by "\n"), for the operator endpoint's tests.
    public static func httpGet(port: Int, path: String, timeout: Duration = RawLineClient.defaultTimeout) async throws
        -> (status: Int, body: String)
    {
        let client = try await connect(port: port)
        defer { Task { await client.close() } }
        try await client.send("GET \(path) HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")
        var lines: [String] = []
        while let line = try await client.readLine(timeout: timeout) {
            lines.append(line.hasSuffix("\r") ? String(line.dropLast()) : line)
        }
        guard let statusLine = lines.first, let code = statusLine.split(separator: " ").dropFirst().first.flatMap({ Int($0) })
        else { throw Timeout(description: "no HTTP status line from port \(port)") }
        let bodyStart = (lines.firstIndex(of: "") ?? lines.count - 1) + 1
        return (code, lines[bodyStart...].joined(separator: "\n"))
    }
}
