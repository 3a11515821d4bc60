import AerieClient
import AerieCore
import AerieCrypto
import AerieServer
import AerieTesting
import Foundation
import NIOCore
import NIOExtras
import NIOPosix
import Synchronization

/// `aerie-bench rpc`: closed-loop load over N sessions (each sends a request, waits for the
/// answer, sends the next) against three targets in one run:
///   - a bare SwiftNIO line-echo server (the ceiling: framing and sockets only),
///   - `system.ping` on a live Aerie server,
///   - `settings.get` on an authenticated tenant session (a real row-level-secured store read),
///   - `connections.get` on an authenticated tenant session (issue 16's ratio: >= 0.60 of ping).
/// Client and servers share this machine's cores, as they would on a 2-core box.
struct RPCBench {
    var sessions: Int
    var seconds: Double
    var warmup: Double
    /// Requests per second each session sends in the paced (latency) runs.
    var pacedRatePerSession: Double
    /// Whether the servers record metrics (an operator endpoint on, as `aerie-server` has by
    /// default); off shows what recording costs, in a separate run (the backend is per process).
    var metrics = true

    struct Outcome {
        var name: String
        var requests: Int
        var seconds: Double
        var p50: Double  // microseconds
        var p99: Double
        /// Every answer's latency in nanoseconds, sorted: for pooling several runs of a target.
        var latencies: [UInt64] = []
        /// CPU seconds this process (server and clients, when both run in it) spent in the window.
        var cpuSeconds: Double = 0
        /// CPU seconds of the database's processes in the window, when the caller measured them.
        var databaseCPUSeconds: Double?
        /// Requests each session sent, warm-up included.
        var sent: [Int] = []
        var rate: Double { Double(requests) / seconds }
        /// This process's CPU per answered request, in microseconds.
        var cpuPerRequest: Double { requests > 0 ? cpuSeconds / Double(requests) * 1e6 : .nan }
        /// The database's CPU per answered request, in microseconds (nan when not measured).
        var databaseCPUPerRequest: Double { requests > 0 ? (databaseCPUSeconds ?? .nan) / Double(requests) * 1e6 : .nan }

        /// Percentile `p` (0...1) of sorted nanosecond `latencies`, in microseconds.
        static func percentile(_ p: Double, of latencies: [UInt64]) -> Double {
            guard !latencies.isEmpty else { return .nan }
            return Double(latencies[min(latencies.count - 1, Int(Double(latencies.count) * p))]) / 1000
        }
    }

    func run() async throws -> String {
        let echo = try await EchoServer.start()
        let echoOutcome = try await measure(name: "echo (bare NIO)", port: echo.port, setup: nil, line: Self.pingLine)
        try await echo.channel.close()

        // The production defaults (LiveServer's test default is a smaller pool).
        // system.ping runs on unauthenticated sessions: give them longer than the runs last.
        let metrics = self.metrics
        let server = try await LiveServer.start(
            rpc: { $0.authTimeoutSeconds = 3600 },
            server: {
                $0.database.poolSize = AerieConfiguration().database.poolSize
                if metrics { $0.operations.metricsListen = AerieConfiguration.ListenAddress(host: "127.0.0.1", port: 0) }
            })
        let (token, connectionId) = try await benchTenant(server)
        let pingOutcome = try await measure(name: "system.ping", port: server.port, setup: nil, line: Self.pingLine)
        let authLine = #"{"jsonrpc":"2.0","id":0,"method":"session.authenticate","params":{"token":"\#(token)"}}"#
        let readLine = #"{"jsonrpc":"2.0","id":1,"method":"settings.get","params":{"key":"bench"}}"#
        let readOutcome = try await measure(name: "settings.get (auth, RLS read)", port: server.port, setup: authLine, line: readLine)
        let getLine = #"{"jsonrpc":"2.0","id":1,"method":"connections.get","params":{"connectionId":"\#(connectionId)"}}"#
        let getOutcome = try await measure(name: "connections.get (auth)", port: server.port, setup: authLine, line: getLine)
        let listLine = #"{"jsonrpc":"2.0","id":1,"method":"connections.list","params":{"limit":\#(Self.listedConnections)}}"#
        let listOutcome = try await measure(
            name: "connections.list (\(Self.listedConnections))", port: server.port, setup: authLine, line: listLine)
        let interval = TimeAmount.nanoseconds(Int64(1e9 / pacedRatePerSession))
        let pacedPing = try await measure(name: "system.ping", port: server.port, setup: nil, line: Self.pingLine, interval: interval)
        let pacedRead = try await measure(name: "settings.get", port: server.port, setup: authLine, line: readLine, interval: interval)
        let pacedGet = try await measure(name: "connections.get", port: server.port, setup: authLine, line: getLine, interval: interval)
        let pacedEcho = try await EchoServer.start()
        let pacedEchoOutcome = try await measure(name: "echo (bare NIO)", port: pacedEcho.port, setup: nil, line: Self.pingLine, interval: interval)
        try await pacedEcho.channel.close()
        try await server.stop()
        // The same read with the database read of before the connection view cache, then also
        // with the per-call database check of before the credential cache.
        let (noViewOutcome, pacedNoView) = try await getWithout(
            "connections.get (no view cache)", interval: interval, { $0.caches.connectionsSize = 0 })
        let (uncachedOutcome, pacedUncached) = try await getWithout(
            "connections.get (no caches)", interval: interval,
            {
                $0.caches.connectionsSize = 0
                $0.caches.credentialsSize = 0
            })

        var lines = ["rpc: \(sessions) sessions, closed loop, \(String(format: "%.0f", seconds)) s each after \(String(format: "%.0f", warmup)) s warm-up"]
        lines.append("  target                            req/s      p50 µs   p99 µs")
        for outcome in [echoOutcome, pingOutcome, readOutcome, getOutcome, listOutcome, noViewOutcome, uncachedOutcome] {
            lines.append(
                "  " + outcome.name.padding(toLength: 32, withPad: " ", startingAt: 0)
                    + String(format: "%9.0f  %8.0f %8.0f", outcome.rate, outcome.p50, outcome.p99))
        }
        let ratio = pingOutcome.rate / echoOutcome.rate
        lines.append(String(format: "  ping / echo ratio: %.2f (target >= 0.50)", ratio))
        lines.append(
            String(format: "  connections.get / ping ratio: %.2f (target >= 0.60); without the view cache: %.2f; without either cache: %.2f",
                   getOutcome.rate / pingOutcome.rate, noViewOutcome.rate / pingOutcome.rate, uncachedOutcome.rate / pingOutcome.rate))
        lines.append(
            String(format: "paced latency: %d sessions x %.0f req/s (%.0f req/s offered)", sessions, pacedRatePerSession, Double(sessions) * pacedRatePerSession))
        lines.append("  target                            req/s      p50 µs   p99 µs")
        for outcome in [pacedEchoOutcome, pacedPing, pacedRead, pacedGet, pacedNoView, pacedUncached] {
            lines.append(
                "  " + outcome.name.padding(toLength: 32, withPad: " ", startingAt: 0)
                    + String(format: "%9.0f  %8.0f %8.0f", outcome.rate, outcome.p50, outcome.p99))
        }
        lines.append(String(format: "  ping p99 at %d sessions: %.2f ms (target < 2 ms)", sessions, pacedPing.p99 / 1000))
        lines.append(String(format: "  connections.get p99 at %d sessions: %.2f ms (target < 5 ms)", sessions, pacedGet.p99 / 1000))
        return lines.joined(separator: "\n")
    }

    /// `connections.get` closed loop, then paced, on a server of its own configured by `change`.
    func getWithout(
        _ name: String, interval: TimeAmount, _ change: (inout AerieConfiguration) -> Void
    ) async throws -> (Outcome, Outcome) {
        // Configured as the first server (metrics too), but for `change`.
        let metrics = self.metrics
        let server = try await LiveServer.start(server: {
            $0.database.poolSize = AerieConfiguration().database.poolSize
            if metrics { $0.operations.metricsListen = AerieConfiguration.ListenAddress(host: "127.0.0.1", port: 0) }
            change(&$0)
        })
        let (token, connectionId) = try await benchTenant(server)
        let auth = #"{"jsonrpc":"2.0","id":0,"method":"session.authenticate","params":{"token":"\#(token)"}}"#
        let get = #"{"jsonrpc":"2.0","id":1,"method":"connections.get","params":{"connectionId":"\#(connectionId)"}}"#
        let closed = try await measure(name: name, port: server.port, setup: auth, line: get)
        let paced = try await measure(name: name, port: server.port, setup: auth, line: get, interval: interval)
        try await server.stop()
        return (closed, paced)
    }

    /// Connections of the bench tenant, all listed by one `connections.list`.
    static let listedConnections = 20

    static let pingLine = #"{"jsonrpc":"2.0","id":1,"method":"system.ping"}"#

    /// Creates the tenant whose sessions read, with one setting and one connection to read.
    func benchTenant(_ server: LiveServer) async throws -> (token: String, connectionId: String) {
        let admin = try await server.adminClient()
        defer { Task { await admin.close() } }
        let created = try await admin.call("admin.tenants.create", params: ["label": "bench"])
        let token = created["token"]?.stringValue ?? ""
        let client = try await server.client()
        try await client.authenticate(token: token)
        _ = try await client.call("settings.set", params: ["key": "bench", "value": ["theme": "dark", "n": 42]])
        let key = try Ed25519KeyPair(seed: Random.bytes(32))
        let invitation: JSONValue = [
            "@type": "https://didcomm.org/connections/1.0/invitation", "@id": .string(UUID().uuidString), "label": "Peer",
            "recipientKeys": .array([.string(key.verkeyBase58)]), "serviceEndpoint": "http://127.0.0.1:9/",
        ]
        let connection = try await client.call("connections.createWithInvite", params: ["invitation": invitation])
        // More for connections.list to page through (each its own invitation and label).
        for index in 1..<Self.listedConnections {
            let other: JSONValue = [
                "@type": "https://didcomm.org/connections/1.0/invitation", "@id": .string(UUID().uuidString),
                "label": .string("Peer \(index)"), "recipientKeys": .array([.string(Ed25519KeyPair.generate().verkeyBase58)]),
                "serviceEndpoint": "http://127.0.0.1:9/",
            ]
            _ = try await client.call("connections.createWithInvite", params: ["invitation": other])
        }
        await client.close()
        return (token, connection["connectionId"]?.stringValue ?? "")
    }

    /// `databaseCPU`: the database's CPU seconds so far, read at the window's ends (the outcome's
    /// `databaseCPUSeconds`).
    ///
    /// `sessionLines`, when given, replaces `line`: session `n` sends `sessionLines(n)` in turn
    /// (requests that must differ, as accepts of distinct invitations), starting over at their end;
    /// the outcome's `sent` says how many each session sent, warm-up included.
    func measure(
        name: String, port: Int, setup: String?, line: String, interval: TimeAmount? = nil,
        databaseCPU: (() -> Double)? = nil, sessionLines: ((Int) -> [String])? = nil
    ) async throws -> Outcome {
        let phase = LoadPhase()
        var channels: [any Channel] = []
        for session in 0..<sessions {
            let requests = sessionLines?(session) ?? [line]
            let channel = try await ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton)
                .channelOption(.socketOption(.tcp_nodelay), value: 1)
                .channelInitializer { channel in
                    channel.eventLoop.makeCompletedFuture {
                        try channel.pipeline.syncOperations.addHandler(
                            ClosedLoopHandler(setup: setup, requests: requests, phase: phase, interval: interval))
                    }
                }
                .connect(host: "127.0.0.1", port: port).get()
            channels.append(channel)
        }
        try await Task.sleep(for: .seconds(warmup))
        let cpuAtStart = MessagesBench.processCPUSeconds()
        let databaseAtStart = databaseCPU?()
        phase.value.store(1, ordering: .relaxed)
        let started = ContinuousClock.now
        try await Task.sleep(for: .seconds(seconds))
        phase.value.store(2, ordering: .relaxed)
        let elapsed = ContinuousClock.now - started
        let cpu = MessagesBench.processCPUSeconds() - cpuAtStart
        let databaseSeconds = databaseAtStart.flatMap { start in databaseCPU.map { $0() - start } }
        var latencies: [UInt64] = []
        var sent: [Int] = []
        for channel in channels {
            let (collected, count) = try await channel.eventLoop.submit {
                let handler = try channel.pipeline.syncOperations.handler(type: ClosedLoopHandler.self)
                return (handler.latencies, handler.sent)
            }.get()
            latencies += collected
            sent.append(count)
            try? await channel.close()
        }
        latencies.sort()
        let secondsElapsed = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
        return Outcome(
            name: name, requests: latencies.count, seconds: secondsElapsed, p50: Outcome.percentile(0.50, of: latencies),
            p99: Outcome.percentile(0.99, of: latencies), latencies: latencies, cpuSeconds: cpu, databaseCPUSeconds: databaseSeconds,
            sent: sent)
    }
}

/// 0 warm-up (not recorded), 1 measuring, 2 stop.
final class LoadPhase: Sendable {
    let value = Atomic<Int>(0)
}

/// Sends a request, records the latency of its answer, sends the next: one in flight per session.
final class ClosedLoopHandler: ChannelInboundHandler {
    typealias InboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer

    private let setup: String?
    private let requests: [String]
    private let phase: LoadPhase
    private var awaitingSetup: Bool
    private let interval: TimeAmount?
    private var sentAt: UInt64 = 0
    private var nextSendAt = NIODeadline.now()
    var latencies: [UInt64] = []
    /// Requests sent so far (the next is `requests[sent % requests.count]`).
    private(set) var sent = 0

    /// `requests` are sent in turn, starting over at their end.
    init(setup: String?, requests: [String], phase: LoadPhase, interval: TimeAmount?) {
        self.setup = setup
        self.requests = requests.map { $0 + "\n" }
        self.phase = phase
        self.interval = interval
        self.awaitingSetup = setup != nil
        latencies.reserveCapacity(200_000)
    }

    func channelActive(context: ChannelHandlerContext) {
        if let setup {
            context.writeAndFlush(wrapOutboundOut(context.channel.allocator.buffer(string: setup + "\n")), promise: nil)
        } else {
            send(context)
        }
        context.fireChannelActive()
    }

    /// Reads the socket's bytes as they come, without framing them into lines: an answer ends
    /// at its newline (found with `memchr`), and nothing in it is looked at or kept. A framing
    /// decoder would gather every 50 KB answer of `messages.download` into one buffer first,
    /// work of the load's client that the host's two cores would take from the server.
    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let chunk = unwrapInboundIn(data)
        let newlines = chunk.withUnsafeReadableBytes { bytes -> Int in
            guard var at = bytes.baseAddress else { return 0 }
            let end = at + bytes.count
            var count = 0
            while at < end, let found = memchr(at, 0x0A, end - at) {
                count += 1
                at = UnsafeRawPointer(found) + 1
            }
            return count
        }
        for _ in 0..<newlines { answered(context) }
    }

    private func answered(_ context: ChannelHandlerContext) {
        let now = DispatchTime.now().uptimeNanoseconds
        if awaitingSetup {
            awaitingSetup = false
            send(context)
            return
        }
        switch phase.value.load(ordering: .relaxed) {
        case 0: send(context)
        case 1:
            latencies.append(now - sentAt)
            send(context)
        default: break
        }
    }

    /// Closed loop: send at once. Paced: send at the session's next slot (latency excludes the wait).
    private func send(_ context: ChannelHandlerContext) {
        guard let interval else { return sendNow(context) }
        nextSendAt = max(nextSendAt + interval, .now())
        let loopBound = NIOLoopBound((self, context), eventLoop: context.eventLoop)
        context.eventLoop.scheduleTask(deadline: nextSendAt) {
            let (handler, context) = loopBound.value
            handler.sendNow(context)
        }
    }

    private func sendNow(_ context: ChannelHandlerContext) {
        guard context.channel.isActive else { return }
        sentAt = DispatchTime.now().uptimeNanoseconds
        let request = requests[sent % requests.count]
        sent += 1
        context.writeAndFlush(wrapOutboundOut(context.channel.allocator.buffer(string: request)), promise: nil)
    }
}

/// The ceiling: reads lines and writes each straight back.
enum EchoServer {
    final class EchoHandler: ChannelInboundHandler {
        typealias InboundIn = ByteBuffer
        typealias OutboundOut = ByteBuffer

        func channelRead(context: ChannelHandlerContext, data: NIOAny) {
            var line = unwrapInboundIn(data)
            var out = context.channel.allocator.buffer(capacity: line.readableBytes + 1)
            out.writeBuffer(&line)
            out.writeInteger(UInt8(ascii: "\n"))
            context.writeAndFlush(wrapOutboundOut(out), promise: nil)
        }
    }

    static func start() async throws -> (channel: any Channel, port: Int) {
        let channel = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .serverChannelOption(.backlog, value: 256)
            .childChannelOption(.socketOption(.tcp_nodelay), value: 1)
            .childChannelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHandler(ByteToMessageHandler(LineBasedFrameDecoder()))
                    try channel.pipeline.syncOperations.addHandler(EchoHandler())
                }
            }
            .bind(host: "127.0.0.1", port: 0).get()
        return (channel, channel.localAddress?.port ?? 0)
    }
}
