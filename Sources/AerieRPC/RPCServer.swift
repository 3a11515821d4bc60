import AerieCore
import Logging
import NIOCore
import NIOPosix
import ServiceLifecycle
import Synchronization

/// The line-delimited JSON-RPC 2.0 server on TCP.
///
/// Framing lives in channel handlers (line splitting with a size cap, idle timeout); each session
/// is then served by async code: requests run concurrently up to the in-flight limit and are
/// answered as they finish. On graceful shutdown it stops accepting, stops reading, lets running
/// calls finish and write their responses, then closes.
public final class RPCServer: Service, Sendable {
    private let configuration: RPCServerConfiguration
    private let dispatcher: RPCDispatcher
    private let group: any EventLoopGroup
    private let logger: Logger
    private let bound: EventLoopPromise<Int>
    private let sessions = Mutex<SessionRegistry>(SessionRegistry())

    private struct SessionRegistry {
        var nextID: UInt64 = 1
        var open: [UInt64: any Channel] = [:]
        var draining = false
    }

    public init(
        configuration: RPCServerConfiguration,
        router: MethodRouter,
        authenticator: any SessionAuthenticator,
        serverVersion: String,
        logger: Logger,
        eventLoopGroup: any EventLoopGroup = MultiThreadedEventLoopGroup.singleton
    ) {
        self.configuration = configuration
        self.group = eventLoopGroup
        self.logger = logger
        self.dispatcher = RPCDispatcher(
            router: router, authenticator: authenticator, configuration: configuration, logger: logger,
            serverVersion: serverVersion)
        self.bound = eventLoopGroup.any().makePromise(of: Int.self)
    }

    /// The port actually bound (useful with port 0); fails if binding failed.
    public func listeningPort() async throws -> Int {
        try await bound.futureResult.get()
    }

    public func run() async throws {
        let configuration = self.configuration
        let serverChannel: NIOAsyncChannel<NIOAsyncChannel<LineFrame, ByteBuffer>, Never>
        do {
            serverChannel = try await ServerBootstrap(group: group)
                .serverChannelOption(.backlog, value: 256)
                .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
                .childChannelOption(.socketOption(.tcp_nodelay), value: 1)
                .childChannelOption(.allowRemoteHalfClosure, value: true)
                .bind(host: configuration.host, port: configuration.port) { channel in
                    channel.eventLoop.makeCompletedFuture {
                        let ops = channel.pipeline.syncOperations
                        try ops.addHandler(IdleStateHandler(readTimeout: .seconds(Int64(configuration.idleTimeoutSeconds))))
                        try ops.addHandler(IdleSessionCloser())
                        try ops.addHandler(ByteToMessageHandler(LineFrameDecoder(maxLength: configuration.maxLineBytes)))
                        return try NIOAsyncChannel<LineFrame, ByteBuffer>(wrappingChannelSynchronously: channel)
                    }
                }
        } catch {
            bound.fail(error)
            throw error
        }
        let port = serverChannel.channel.localAddress?.port ?? configuration.port
        bound.succeed(port)
        logger.info("JSON-RPC listening", metadata: ["address": "\(configuration.host):\(port)"])

        try await withGracefulShutdownHandler {
            try await withThrowingDiscardingTaskGroup { group in
                try await serverChannel.executeThenClose { inbound in
                    for try await connection in inbound {
                        group.addTask { await self.serve(connection) }
                    }
                }
            }
        } onGracefulShutdown: {
            self.logger.info("JSON-RPC draining: no new sessions, running calls finish")
            serverChannel.channel.close(promise: nil)
            let open = self.sessions.withLock { registry in
                registry.draining = true
                return Array(registry.open.values)
            }
            for channel in open { channel.close(mode: .input, promise: nil) }
        }
        logger.info("JSON-RPC stopped")
    }

    private func register(_ channel: any Channel) -> UInt64? {
        sessions.withLock { registry in
            guard !registry.draining, registry.open.count < configuration.maxSessions else { return nil }
            let id = registry.nextID
            registry.nextID += 1
            registry.open[id] = channel
            return id
        }
    }

    private func unregister(_ id: UInt64) {
        _ = sessions.withLock { $0.open.removeValue(forKey: id) }
    }

    private func serve(_ connection: NIOAsyncChannel<LineFrame, ByteBuffer>) async {
        let channel = connection.channel
        guard let sessionID = register(channel) else {
            logger.warning("session refused: server busy or draining")
            let refusal = RPCEnvelope.error(id: .null, AerieError(.busy, "too many sessions; try again later"))
            try? await connection.executeThenClose { _, outbound in
                try await outbound.write(Self.frame(refusal, allocator: channel.allocator))
            }
            return
        }
        defer { unregister(sessionID) }
        let session = RPCSession(id: sessionID, notificationQueueLimit: configuration.notificationQueueLimit)
        defer { session.finish() }
        let limiter = InFlightLimiter(limit: configuration.maxInFlightPerSession)
        let dispatcher = self.dispatcher
        do {
            try await connection.executeThenClose { inbound, outbound in
                await withDiscardingTaskGroup { sessionTasks in
                    sessionTasks.addTask {
                        for await notification in session.notifications {
                            try? await outbound.write(Self.frame(notification, allocator: channel.allocator))
                            session.didSend()
                        }
                    }
                    await withDiscardingTaskGroup { requests in
                        do {
                            for try await frame in inbound {
                                switch frame {
                                case .oversize:
                                    let error = AerieError(.invalidRequest, "line exceeds \(self.configuration.maxLineBytes) bytes; closing the session")
                                    try? await outbound.write(Self.frame(RPCEnvelope.error(id: .null, error), allocator: channel.allocator))
                                    return
                                case .line(let line):
                                    if line.readableBytesView.allSatisfy({ $0 == 0x20 || $0 == 0x09 }) { continue }
                                    let incoming = dispatcher.parse(line.readableBytesView)
                                    if RPCDispatcher.isBarrier(incoming) {
                                        // Authentication completes before the next line is read.
                                        if let response = await dispatcher.handle(incoming, session: session) {
                                            try? await outbound.write(Self.frame(response, allocator: channel.allocator))
                                        }
                                        continue
                                    }
                                    await limiter.acquire()
                                    requests.addTask {
                                        defer { limiter.release() }
                                        guard let response = await dispatcher.handle(incoming, session: session) else { return }
                                        try? await outbound.write(Self.frame(response, allocator: channel.allocator))
                                    }
                                }
                            }
                        } catch {
                            self.logger.debug("session read ended", metadata: ["session": "\(sessionID)", "error": "\(error)"])
                        }
                    }
                    session.finish()
                }
            }
        } catch {
            logger.debug("session closed with error", metadata: ["session": "\(sessionID)", "error": "\(error)"])
        }
    }

    static func frame(_ value: JSONValue, allocator: ByteBufferAllocator) -> ByteBuffer {
        var bytes = value.serialized()
        bytes.append(UInt8(ascii: "\n"))
        return allocator.buffer(bytes: bytes)
    }
}

/// Closes a session that sent nothing for the idle timeout.
final class IdleSessionCloser: ChannelInboundHandler, Sendable {
    typealias InboundIn = NIOAny

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if let idle = event as? IdleStateHandler.IdleStateEvent, idle == .read {
            context.close(promise: nil)
            return
        }
        context.fireUserInboundEventTriggered(event)
    }
}
