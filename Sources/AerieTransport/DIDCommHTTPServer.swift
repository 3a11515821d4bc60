import Logging
import NIOCore
import NIOHTTP1
import NIOPosix
import ServiceLifecycle
import Synchronization

/// The inbound DIDComm endpoint: HTTP/1.1 POSTs of packed messages, bodies capped, each handed
/// to `handler` (async code), whose status is answered with an empty body.
public final class DIDCommHTTPServer: Service, Sendable {
    public struct Configuration: Sendable {
        public var host: String
        public var port: Int
        public var maxBodyBytes: Int

        public init(host: String = "127.0.0.1", port: Int = 7401, maxBodyBytes: Int = 1 << 20) {
            self.host = host
            self.port = port
            self.maxBodyBytes = maxBodyBytes
        }
    }

    /// Takes a packed message, answers the HTTP status (202, or 4xx) and an optional body
    /// (a return-routed reply).
    public typealias Handler = @Sendable ([UInt8]) async -> (status: Int, body: [UInt8]?)

    private let configuration: Configuration
    private let handler: Handler
    private let logger: Logger
    private let group: any EventLoopGroup
    private let bound: EventLoopPromise<Int>
    private let onBound: @Sendable (Int) -> Void
    /// Open connections, closed on shutdown; nil once draining.
    private let open = Mutex<[ObjectIdentifier: any Channel]?>([:])

    public init(
        configuration: Configuration, logger: Logger, eventLoopGroup: any EventLoopGroup = MultiThreadedEventLoopGroup.singleton,
        onBound: @escaping @Sendable (Int) -> Void = { _ in }, handler: @escaping Handler
    ) {
        self.onBound = onBound
        self.configuration = configuration
        self.handler = handler
        self.logger = logger
        self.group = eventLoopGroup
        self.bound = eventLoopGroup.any().makePromise(of: Int.self)
    }

    /// The port actually bound (useful with port 0).
    public func listeningPort() async throws -> Int {
        try await bound.futureResult.get()
    }

    public func run() async throws {
        let serverChannel: NIOAsyncChannel<NIOAsyncChannel<HTTPServerRequestPart, HTTPServerResponsePart>, Never>
        do {
            serverChannel = try await ServerBootstrap(group: group)
                .serverChannelOption(.backlog, value: 256)
                .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
                .bind(host: configuration.host, port: configuration.port) { channel in
                    channel.eventLoop.makeCompletedFuture {
                        try channel.pipeline.syncOperations.addHandler(IdleStateHandler(readTimeout: .seconds(30)))
                        try channel.pipeline.syncOperations.addHandler(IdleCloser())
                        try channel.pipeline.syncOperations.configureHTTPServerPipeline()
                        return try NIOAsyncChannel<HTTPServerRequestPart, HTTPServerResponsePart>(
                            wrappingChannelSynchronously: channel)
                    }
                }
        } catch {
            bound.fail(error)
            throw error
        }
        let port = serverChannel.channel.localAddress?.port ?? configuration.port
        onBound(port)
        bound.succeed(port)
        logger.info("DIDComm HTTP listening", metadata: ["address": "\(configuration.host):\(port)"])
        try await withGracefulShutdownHandler {
            try await withThrowingDiscardingTaskGroup { group in
                try await serverChannel.executeThenClose { inbound in
                    for try await connection in inbound {
                        let channel = connection.channel
                        let key = ObjectIdentifier(channel)
                        let admitted = open.withLock { registry in
                            guard registry != nil else { return false }
                            registry![key] = channel
                            return true
                        }
                        guard admitted else {
                            // Draining: end it through its async wrapper, which must be finished.
                            group.addTask { try? await connection.executeThenClose { _, _ in } }
                            continue
                        }
                        group.addTask {
                            await self.serve(connection)
                            _ = self.open.withLock { $0?.removeValue(forKey: key) }
                        }
                    }
                }
            }
        } onGracefulShutdown: {
            serverChannel.channel.close(promise: nil)
            let channels = self.open.withLock { registry in
                let channels = registry.map { Array($0.values) } ?? []
                registry = nil
                return channels
            }
            // One request per connection, so a connection still open is idle or mid-request;
            // requests being handled finish, idle ones end.
            for channel in channels { channel.close(mode: .input, promise: nil) }
        }
    }

    private func serve(_ connection: NIOAsyncChannel<HTTPServerRequestPart, HTTPServerResponsePart>) async {
        let maxBody = configuration.maxBodyBytes
        try? await connection.executeThenClose { inbound, outbound in
            var head: HTTPRequestHead?
            var body: [UInt8] = []
            var tooLarge = false
            for try await part in inbound {
                switch part {
                case .head(let h):
                    head = h
                    body = []
                    tooLarge = false
                    if let length = h.headers.first(name: "content-length").flatMap(Int.init), length > maxBody {
                        tooLarge = true
                    }
                case .body(var buffer):
                    if !tooLarge {
                        if body.count + buffer.readableBytes > maxBody {
                            tooLarge = true
                            body = []
                        } else if let bytes = buffer.readBytes(length: buffer.readableBytes) {
                            body.append(contentsOf: bytes)
                        }
                    }
                case .end:
                    guard let request = head else { return }
                    let answer: (status: Int, body: [UInt8]?)
                    if tooLarge {
                        answer = (413, nil)
                    } else if request.method != .POST {
                        answer = (405, nil)
                    } else {
                        answer = await handler(body)
                    }
                    var headers = HTTPHeaders()
                    let reply = answer.body ?? []
                    headers.add(name: "Content-Length", value: String(reply.count))
                    if !reply.isEmpty { headers.add(name: "Content-Type", value: "application/didcomm-envelope-enc") }
                    // One request per connection keeps shutdown and limits simple.
                    headers.add(name: "Connection", value: "close")
                    try await outbound.write(
                        .head(HTTPResponseHead(version: request.version, status: HTTPResponseStatus(statusCode: answer.status), headers: headers)))
                    if !reply.isEmpty { try await outbound.write(.body(.byteBuffer(ByteBuffer(bytes: reply)))) }
                    try await outbound.write(.end(nil))
                    return
                }
            }
        }
    }
}

/// Closes a connection that sent nothing for the idle period.
final class IdleCloser: ChannelInboundHandler, Sendable {
    typealias InboundIn = NIOAny

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if event is IdleStateHandler.IdleStateEvent {
            context.close(promise: nil)
        } else {
            context.fireUserInboundEventTriggered(event)
        }
    }
}
