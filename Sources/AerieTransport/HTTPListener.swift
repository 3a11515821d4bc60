import AerieListener
import Logging
import NIOCore
import NIOHTTP1
import NIOPosix
import ServiceLifecycle
import Synchronization

/// A small HTTP/1.1 server: each request (head and body, the body capped) is handed to async
/// code whose answer is sent back. It serves the inbound DIDComm endpoint (`init(configuration:
/// logger:onBound:didcomm:)`: POSTs of packed messages) and the operator endpoint (metrics and
/// health), each with its own `Limits`.
///
/// Everything a client controls is bounded by `Limits`: open connections (more are closed at
/// once), the time to send a head and a body (`HTTPDeadlineHandler`), the time to an answer, and
/// the requests and idle time of a kept-alive connection. On graceful shutdown it stops
/// accepting, lets requests being handled finish (answered `Connection: close`) and ends idle
/// connections.
public final class HTTPListener: Service, Sendable {
    public struct Request: Sendable {
        public var method: HTTPMethod
        /// The request target as sent (path and query).
        public var uri: String
        public var body: [UInt8]

        /// The path without its query.
        public var path: Substring { uri.prefix(while: { $0 != "?" }) }
    }

    public struct Answer: Sendable {
        public var status: Int
        public var contentType: String?
        public var body: [UInt8]
        /// Sent as `Retry-After` (seconds) when set.
        public var retryAfterSeconds: Int?

        public init(status: Int, contentType: String? = nil, body: [UInt8] = [], retryAfterSeconds: Int? = nil) {
            self.status = status
            self.contentType = contentType
            self.body = body
            self.retryAfterSeconds = retryAfterSeconds
        }
    }

    public typealias Handler = @Sendable (Request) async -> Answer

    /// For the DIDComm endpoint: takes a packed message, answers the HTTP status (202, or 4xx)
    /// and an optional body (a return-routed reply).
    public typealias DIDCommHandler = @Sendable ([UInt8]) async -> (status: Int, body: [UInt8]?)

    private let configuration: Configuration
    private let name: String
    private let handler: Handler
    private let logger: Logger
    private let listener: TCPListener<HTTPServerRequestPart, HTTPServerResponsePart>
    private let onBound: @Sendable (Int) -> Void
    /// Open connections, closed on shutdown; nil once draining.
    private let open = Mutex<[ObjectIdentifier: any Channel]?>([:])

    /// `name` appears in the log lines ("DIDComm HTTP listening").
    public init(
        configuration: Configuration, name: String, logger: Logger,
        eventLoopGroup: any EventLoopGroup = MultiThreadedEventLoopGroup.singleton,
        onBound: @escaping @Sendable (Int) -> Void = { _ in }, handler: @escaping Handler
    ) {
        self.onBound = onBound
        self.configuration = configuration
        self.name = name
        self.handler = handler
        self.logger = logger
        let limits = configuration.limits
        self.listener = TCPListener(
            name: name, options: .init(host: configuration.host, port: configuration.port), group: eventLoopGroup, logger: logger
        ) { channel in
            try channel.pipeline.syncOperations.configureHTTPServerPipeline()
            try channel.pipeline.syncOperations.addHandler(HTTPDeadlineHandler(limits: limits))
        }
    }

    /// The inbound DIDComm endpoint: POSTs only (others answer 405); a reply body is sent as
    /// `application/didcomm-envelope-enc`.
    public convenience init(
        configuration: Configuration, logger: Logger, eventLoopGroup: any EventLoopGroup = MultiThreadedEventLoopGroup.singleton,
        onBound: @escaping @Sendable (Int) -> Void = { _ in }, didcomm: @escaping DIDCommHandler
    ) {
        self.init(configuration: configuration, logger: logger, eventLoopGroup: eventLoopGroup, onBound: onBound) { body in
            let (status, reply) = await didcomm(body)
            guard let reply, !reply.isEmpty else { return Answer(status: status) }
            return Answer(status: status, contentType: "application/didcomm-envelope-enc", body: reply)
        }
    }

    /// The inbound DIDComm endpoint answering with `answer`'s whole `Answer` (a `Retry-After`).
    public convenience init(
        configuration: Configuration, logger: Logger, eventLoopGroup: any EventLoopGroup = MultiThreadedEventLoopGroup.singleton,
        onBound: @escaping @Sendable (Int) -> Void = { _ in }, answer: @escaping @Sendable ([UInt8]) async -> Answer
    ) {
        self.init(configuration: configuration, name: "DIDComm HTTP", logger: logger, eventLoopGroup: eventLoopGroup, onBound: onBound) {
            request in
            guard request.method == .POST else { return Answer(status: 405) }
            return await answer(request.body)
        }
    }

    /// The port actually bound (useful with port 0).
    public func listeningPort() async throws -> Int {
        try await listener.listeningPort()
    }

    public func run() async throws {
        let limits = configuration.limits
        try await listener.run(onBound: onBound) { connection in
            let channel = connection.channel
            let key = ObjectIdentifier(channel)
            let admitted = self.open.withLock { registry in
                guard registry != nil, registry!.count < limits.maxConnections else { return false }
                registry![key] = channel
                return true
            }
            guard admitted else {
                // Draining or full: end it through its async wrapper, which must be finished.
                try? await connection.executeThenClose { _, _ in }
                return
            }
            await self.serve(connection)
            _ = self.open.withLock { $0?.removeValue(forKey: key) }
        } drain: {
            let channels = self.open.withLock { registry in
                let channels = registry.map { Array($0.values) } ?? []
                registry = nil
                return channels
            }
            // A connection still open is idle or mid-request: requests being handled finish and
            // are answered `Connection: close`, idle ones end.
            for channel in channels { channel.close(mode: .input, promise: nil) }
        }
    }

    private func serve(_ connection: NIOAsyncChannel<HTTPServerRequestPart, HTTPServerResponsePart>) async {
        let limits = configuration.limits
        try? await connection.executeThenClose { inbound, outbound in
            var head: HTTPRequestHead?
            var body: [UInt8] = []
            var tooLarge = false
            var served = 0
            for try await part in inbound {
                switch part {
                case .head(let h):
                    head = h
                    body = []
                    tooLarge = false
                    if let length = h.headers.first(name: "content-length").flatMap(Int.init), length > limits.maxBodyBytes {
                        tooLarge = true
                    }
                case .body(var buffer):
                    if !tooLarge {
                        if body.count + buffer.readableBytes > limits.maxBodyBytes {
                            tooLarge = true
                            body = []
                        } else if let bytes = buffer.readBytes(length: buffer.readableBytes) {
                            body.append(contentsOf: bytes)
                        }
                    }
                case .end:
                    guard let request = head else { return }
                    head = nil
                    served += 1
                    let answer: Answer
                    if tooLarge {
                        answer = Answer(status: 413)
                    } else {
                        answer = await handler(Request(method: request.method, uri: request.uri, body: body))
                    }
                    body = []
                    let draining = open.withLock { $0 == nil }
                    let keepAlive = request.isKeepAlive && !tooLarge && !draining && served < limits.maxRequestsPerConnection
                    var headers = HTTPHeaders()
                    let reply = answer.body
                    headers.add(name: "Content-Length", value: String(reply.count))
                    if !reply.isEmpty, let type = answer.contentType { headers.add(name: "Content-Type", value: type) }
                    if let seconds = answer.retryAfterSeconds { headers.add(name: "Retry-After", value: String(seconds)) }
                    headers.add(name: "Connection", value: keepAlive ? "keep-alive" : "close")
                    // One write for the whole answer: each write is a hop to the event loop.
                    var parts: [HTTPServerResponsePart] = [
                        .head(HTTPResponseHead(version: request.version, status: HTTPResponseStatus(statusCode: answer.status), headers: headers))
                    ]
                    if !reply.isEmpty { parts.append(.body(.byteBuffer(ByteBuffer(bytes: reply)))) }
                    parts.append(.end(nil))
                    try await outbound.write(contentsOf: parts)
                    if !keepAlive { return }
                }
            }
        }
    }
}
