import AerieCore
import NIOCore

/// Splits server output into lines (no size limit beyond the server's own).
struct ClientLineDecoder: ByteToMessageDecoder {
    typealias InboundOut = ByteBuffer

    mutating func decode(context: ChannelHandlerContext, buffer: inout ByteBuffer) throws -> DecodingState {
        guard let newline = buffer.readableBytesView.firstIndex(of: UInt8(ascii: "\n")) else { return .needMoreData }
        let line = buffer.readSlice(length: newline - buffer.readerIndex)!
        buffer.moveReaderIndex(forwardBy: 1)
        context.fireChannelRead(wrapInboundOut(line))
        return .continue
    }
}

/// Matches response lines to waiting calls by id; passes notifications on. Runs on the event loop.
final class ResponseRouter: ChannelInboundHandler {
    typealias InboundIn = ByteBuffer

    private var pending: [Int64: EventLoopPromise<JSONValue>] = [:]
    private let notifications: AsyncStream<AerieClient.ServerNotification>.Continuation
    private var closedError: (any Error)?

    init(notifications: AsyncStream<AerieClient.ServerNotification>.Continuation) {
        self.notifications = notifications
    }

    func expect(id: Int64, promise: EventLoopPromise<JSONValue>) {
        if let closedError {
            promise.fail(closedError)
        } else {
            pending[id] = promise
        }
    }

    func fail(id: Int64, _ error: any Error) {
        pending.removeValue(forKey: id)?.fail(error)
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let line = unwrapInboundIn(data)
        guard let value = try? JSONValue(parsing: line.readableBytesView) else { return }
        route(value, context: context)
    }

    private func route(_ value: JSONValue, context: ChannelHandlerContext) {
        switch value {
        case .array(let responses):
            for response in responses { route(response, context: context) }
        case .object(let fields):
            if fields["id"] == nil, case .string(let method)? = fields["method"] {
                if case .dropped = notifications.yield(.init(method: method, params: fields["params"] ?? .null)) {
                    // The consumer is a whole buffer behind: end the stream after what it holds
                    // and the session, rather than lose a notification without a trace (and
                    // yield none after a gap: a finished stream takes no more).
                    // `AerieClient.connect`, `notificationBuffer`.
                    notifications.finish()
                    context.close(promise: nil)
                }
                return
            }
            if case .int(let id)? = fields["id"], let promise = pending.removeValue(forKey: id) {
                promise.succeed(value)
            } else if fields["id"] == .null, let error = fields["error"] {
                // A session-level error (parse error, oversize line, busy): fail everything waiting.
                let failure = AerieClientError(
                    code: Int(error["code"]?.intValue ?? -32603),
                    message: error["message"]?.stringValue ?? "error", data: error["data"])
                failAll(failure)
            }
        default:
            break
        }
    }

    private func failAll(_ error: any Error) {
        let waiting = pending
        pending.removeAll()
        for promise in waiting.values { promise.fail(error) }
    }

    func channelInactive(context: ChannelHandlerContext) {
        let error = AerieClientError.connection("the server closed the session")
        closedError = error
        failAll(error)
        notifications.finish()
        context.fireChannelInactive()
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        context.close(promise: nil)
    }
}
