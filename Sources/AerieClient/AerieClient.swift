import AerieCore
import Foundation
import NIOCore
import NIOPosix
import Synchronization

/// A client for Aerie's line-delimited JSON-RPC 2.0 API, for wallet backends and tools.
///
/// One instance is one TCP session: authenticate once, then call methods concurrently (requests are
/// pipelined and matched by id). Server notifications arrive on `notifications`.
public final class AerieClient: Sendable {
    private let channel: any Channel
    private let handler: NIOLoopBound<ResponseRouter>
    private let nextID = Atomic<Int64>(1)
    /// Notifications pushed by the server (`messages.received`, `connections.stateChanged`, ...).
    public let notifications: AsyncStream<ServerNotification>

    public struct ServerNotification: Sendable {
        public let method: String
        public let params: JSONValue
    }

    private init(channel: any Channel, handler: NIOLoopBound<ResponseRouter>, notifications: AsyncStream<ServerNotification>) {
        self.channel = channel
        self.handler = handler
        self.notifications = notifications
    }

    /// Connects to `host:port`; fails with a connection error if nothing listens.
    ///
    /// `notificationBuffer` bounds the notifications held for a consumer that does not read
    /// `notifications`. None is ever dropped silently: when one more arrives with the buffer
    /// full, the client closes the session, so `notifications` ends after the ones it holds (in
    /// order) and calls fail with a connection error. A consumer of `events.subscribe` then
    /// resumes after the last position it read (`AerieEventStream` does this by itself).
    public static func connect(
        host: String, port: Int, connectTimeout: Duration = .seconds(5), notificationBuffer: Int = 10_000,
        eventLoopGroup: any EventLoopGroup = MultiThreadedEventLoopGroup.singleton
    ) async throws -> AerieClient {
        let (stream, continuation) = AsyncStream.makeStream(
            of: ServerNotification.self, bufferingPolicy: .bufferingOldest(max(1, notificationBuffer)))
        do {
            let channel = try await ClientBootstrap(group: eventLoopGroup)
                .connectTimeout(.nanoseconds(Int64(connectTimeout.components.seconds) * 1_000_000_000))
                .channelOption(.socketOption(.tcp_nodelay), value: 1)
                .channelInitializer { channel in
                    channel.eventLoop.makeCompletedFuture {
                        try channel.pipeline.syncOperations.addHandler(ByteToMessageHandler(ClientLineDecoder()))
                        try channel.pipeline.syncOperations.addHandler(ResponseRouter(notifications: continuation))
                    }
                }
                .connect(host: host, port: port).get()
            let router = try await channel.eventLoop.submit {
                NIOLoopBound(try channel.pipeline.syncOperations.handler(type: ResponseRouter.self), eventLoop: channel.eventLoop)
            }.get()
            return AerieClient(channel: channel, handler: router, notifications: stream)
        } catch {
            continuation.finish()
            throw AerieClientError.connection("cannot connect to \(host):\(port): \(error)")
        }
    }

    /// `session.authenticate`; throws `unauthenticated` for a wrong, suspended or deleted token.
    @discardableResult
    public func authenticate(token: String) async throws -> JSONValue {
        try await call("session.authenticate", params: ["token": .string(token)])
    }

    /// On a backend session: calls a tenant method for `tenant` (sent as `params._meta.tenantId`);
    /// calls for many tenants may run concurrently on one session.
    public func call(_ method: String, params: JSONValue? = nil, tenant: TenantID) async throws -> JSONValue {
        var members: [String: JSONValue] = [:]
        if case .object(let given)? = params { members = given }
        members["_meta"] = ["tenantId": .string(tenant.rawValue)]
        return try await call(method, params: .object(members))
    }

    /// Calls a method with raw JSON params and returns the raw result.
    public func call(_ method: String, params: JSONValue? = nil) async throws -> JSONValue {
        let id = nextID.wrappingAdd(1, ordering: .relaxed).oldValue
        var request: [String: JSONValue] = ["jsonrpc": "2.0", "id": .int(id), "method": .string(method)]
        if let params { request["params"] = params }
        let response = try await send(line: JSONValue.object(request).serialized(), ids: [id])
        return try Self.unwrap(response[0])
    }

    /// Calls a method with Codable params and decodes the result.
    public func call<Params: Encodable, Result: Decodable>(
        _ method: String, params: Params, as type: Result.Type = Result.self
    ) async throws -> Result {
        let raw = try await call(method, params: try JSONValue(encoding: params))
        return try raw.decode(as: Result.self)
    }

    /// Sends a notification (no id, no response).
    public func notify(_ method: String, params: JSONValue? = nil) async throws {
        var request: [String: JSONValue] = ["jsonrpc": "2.0", "method": .string(method)]
        if let params { request["params"] = params }
        try await write(JSONValue.object(request).serialized())
    }

    /// Sends several calls as one batch line; results come back in the order of `calls`.
    public func batch(_ calls: [(method: String, params: JSONValue?)]) async throws -> [Swift.Result<JSONValue, AerieClientError>] {
        guard !calls.isEmpty else { return [] }
        var ids: [Int64] = []
        var entries: [JSONValue] = []
        for call in calls {
            let id = nextID.wrappingAdd(1, ordering: .relaxed).oldValue
            ids.append(id)
            var request: [String: JSONValue] = ["jsonrpc": "2.0", "id": .int(id), "method": .string(call.method)]
            if let params = call.params { request["params"] = params }
            entries.append(.object(request))
        }
        let responses = try await send(line: JSONValue.array(entries).serialized(), ids: ids)
        return responses.map { response in
            Swift.Result { try Self.unwrap(response) }.mapError { $0 as? AerieClientError ?? .connection("\($0)") }
        }
    }

    public func close() async {
        try? await channel.close()
    }

    private func write(_ line: [UInt8]) async throws {
        var buffer = channel.allocator.buffer(capacity: line.count + 1)
        buffer.writeBytes(line)
        buffer.writeInteger(UInt8(ascii: "\n"))
        do {
            try await channel.writeAndFlush(buffer)
        } catch {
            throw AerieClientError.connection("connection lost: \(error)")
        }
    }

    private func send(line: [UInt8], ids: [Int64]) async throws -> [JSONValue] {
        // A call cancelled before it is sent is not sent: the cancellation handler below would
        // race the server's answer to it (a fast one won, and the cancelled call succeeded).
        try Task.checkCancellation()
        let promises = ids.map { _ in channel.eventLoop.makePromise(of: JSONValue.self) }
        let handler = self.handler
        try await channel.eventLoop.submit {
            for (id, promise) in zip(ids, promises) { handler.value.expect(id: id, promise: promise) }
        }.get()
        do {
            try await write(line)
        } catch {
            channel.eventLoop.execute { for id in ids { handler.value.fail(id: id, error) } }
            throw error
        }
        // Cancelling the calling task ends the wait (the call's answer, if it comes later, is
        // dropped): a server that never answers cannot hold the caller forever.
        let eventLoop = channel.eventLoop
        return try await withTaskCancellationHandler {
            var responses: [JSONValue] = []
            for promise in promises { responses.append(try await promise.futureResult.get()) }
            return responses
        } onCancel: {
            eventLoop.execute { for id in ids { handler.value.fail(id: id, CancellationError()) } }
        }
    }

    private static func unwrap(_ response: JSONValue) throws -> JSONValue {
        if let error = response["error"] {
            let code = Int(error["code"]?.intValue ?? -32603)
            throw AerieClientError(code: code, message: error["message"]?.stringValue ?? "error", data: error["data"])
        }
        return response["result"] ?? .null
    }
}
