import Logging
import NIOCore
import NIOPosix
import ServiceLifecycle

/// The part the JSON-RPC server and the HTTP listener share: binding a TCP port, answering the
/// port actually bound, handing each accepted connection to the server's `serve`, and on graceful
/// shutdown closing the listening socket (no new connections) before the server drains what is
/// open its own way (a JSON-RPC session stops reading and finishes its calls; an HTTP connection
/// finishes its request and answers `Connection: close`).
///
/// What a connection's pipeline holds (framing, deadlines, idle close) is the server's:
/// `initialize` builds it on the connection's event loop; the listener then wraps the channel.
package final class TCPListener<Inbound: Sendable, Outbound: Sendable>: Sendable {
    package struct Options: Sendable {
        package var host: String
        package var port: Int
        package var backlog: Int32 = 256
        /// Small answers go out at once (request/answer protocols).
        package var noDelay = false
        /// The peer may close its sending side and still read the answers (JSON-RPC over `nc`).
        package var allowRemoteHalfClosure = false

        package init(host: String, port: Int) {
            self.host = host
            self.port = port
        }
    }

    package typealias Connection = NIOAsyncChannel<Inbound, Outbound>

    private let name: String
    private let options: Options
    private let group: any EventLoopGroup
    private let logger: Logger
    private let bound: EventLoopPromise<Int>
    private let initialize: @Sendable (any Channel) throws -> Void

    /// `name` appears in the log lines ("JSON-RPC listening").
    package init(
        name: String, options: Options, group: any EventLoopGroup, logger: Logger,
        initialize: @escaping @Sendable (any Channel) throws -> Void
    ) {
        self.name = name
        self.options = options
        self.group = group
        self.logger = logger
        self.initialize = initialize
        self.bound = group.any().makePromise(of: Int.self)
    }

    /// An accepted channel as the accept loop hands it to `serve`. A connection accepted while
    /// the listening socket closes never reaches `serve` (the loop has ended) and is dropped: it
    /// must then close itself, so this uses NIO's initializer that closes on deinit. The other
    /// one stops the whole process on such a drop ("Deinited NIOAsyncWriter without calling
    /// finish()", seen once in a test of the drain). Served connections close through
    /// `executeThenClose` as before.
    private static func wrap(_ channel: any Channel) throws -> Connection {
        try NIOAsyncChannel(synchronouslyWrapping: channel)
    }

    /// The port actually bound (useful with port 0); fails if binding failed.
    package func listeningPort() async throws -> Int {
        try await bound.futureResult.get()
    }

    /// Binds, then runs `serve` for every accepted connection, each in its own child task, until
    /// graceful shutdown; then closes the listening socket, calls `drain`, and returns once every
    /// `serve` has returned. `onBound` runs once the port is bound, before the first connection.
    package func run(
        onBound: @Sendable (Int) -> Void = { _ in },
        serve: @escaping @Sendable (Connection) async -> Void,
        drain: @escaping @Sendable () -> Void
    ) async throws {
        let serverChannel: NIOAsyncChannel<Connection, Never>
        do {
            let initialize = self.initialize
            serverChannel = try await ServerBootstrap(group: group)
                .serverChannelOption(.backlog, value: options.backlog)
                .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
                .childChannelOption(.socketOption(.tcp_nodelay), value: options.noDelay ? 1 : 0)
                .childChannelOption(.allowRemoteHalfClosure, value: options.allowRemoteHalfClosure)
                .bind(host: options.host, port: options.port) { channel in
                    channel.eventLoop.makeCompletedFuture {
                        try initialize(channel)
                        return try Self.wrap(channel)
                    }
                }
        } catch {
            bound.fail(error)
            throw error
        }
        let port = serverChannel.channel.localAddress?.port ?? options.port
        onBound(port)
        bound.succeed(port)
        logger.info("\(name) listening", metadata: ["address": "\(options.host):\(port)"])

        try await withGracefulShutdownHandler {
            try await withThrowingDiscardingTaskGroup { group in
                try await serverChannel.executeThenClose { inbound in
                    for try await connection in inbound {
                        group.addTask { await serve(connection) }
                    }
                }
            }
        } onGracefulShutdown: {
            self.logger.info("\(self.name) draining: no new connections")
            serverChannel.channel.close(promise: nil)
            drain()
        }
        logger.info("\(name) stopped")
    }
}
