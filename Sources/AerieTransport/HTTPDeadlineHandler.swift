import NIOCore
import NIOHTTP1

/// Deadlines of one inbound HTTP connection, kept on its event loop (no task per connection):
/// the first request head within `headerTimeout` of connecting, a kept-alive connection's next
/// head within `keepAliveTimeout` of the previous answer, the body within `bodyTimeout` of its
/// head (slowloris and slow bodies are closed), and the answer within `requestTimeout` of the
/// head: past it the peer gets a 503 it may retry and the connection closes, while the work
/// already started finishes on its own.
final class HTTPDeadlineHandler: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias InboundOut = HTTPServerRequestPart
    typealias OutboundIn = HTTPServerResponsePart
    typealias OutboundOut = HTTPServerResponsePart

    private enum Phase {
        case awaitingHead
        case readingBody
        case handling
        case answering
        /// Answered 503 by this handler: the late answer of the request is dropped.
        case timedOut
    }

    private let limits: HTTPListener.Limits
    private var phase = Phase.awaitingHead
    private var readTimer: Scheduled<Void>?
    private var requestTimer: Scheduled<Void>?
    private var version = HTTPVersion.http1_1

    init(limits: HTTPListener.Limits) {
        self.limits = limits
    }

    func handlerAdded(context: ChannelHandlerContext) {
        if context.channel.isActive { armRead(context: context, after: limits.headerTimeout) }
    }

    func channelActive(context: ChannelHandlerContext) {
        if readTimer == nil { armRead(context: context, after: limits.headerTimeout) }
        context.fireChannelActive()
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        cancelTimers()
    }

    func channelInactive(context: ChannelHandlerContext) {
        cancelTimers()
        context.fireChannelInactive()
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        if phase == .timedOut { return }
        switch unwrapInboundIn(data) {
        case .head(let head):
            version = head.version
            phase = .readingBody
            armRead(context: context, after: limits.bodyTimeout)
            requestTimer?.cancel()
            requestTimer = schedule(context, after: limits.requestTimeout) { handler, context in
                handler.requestTimedOut(context: context)
            }
        case .body:
            break
        case .end:
            phase = .handling
            readTimer?.cancel()
            readTimer = nil
        }
        context.fireChannelRead(data)
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        if phase == .timedOut {
            promise?.fail(ChannelError.ioOnClosedChannel)
            return
        }
        switch unwrapOutboundIn(data) {
        case .head:
            phase = .answering
        case .body:
            break
        case .end:
            phase = .awaitingHead
            requestTimer?.cancel()
            requestTimer = nil
            armRead(context: context, after: limits.keepAliveTimeout)
        }
        context.write(data, promise: promise)
    }

    private func requestTimedOut(context: ChannelHandlerContext) {
        requestTimer = nil
        if phase == .handling || phase == .readingBody {
            var headers = HTTPHeaders()
            headers.add(name: "Content-Length", value: "0")
            headers.add(name: "Connection", value: "close")
            phase = .timedOut
            context.write(
                wrapOutboundOut(.head(HTTPResponseHead(version: version, status: .serviceUnavailable, headers: headers))),
                promise: nil)
            context.writeAndFlush(wrapOutboundOut(.end(nil)), promise: nil)
        }
        context.close(promise: nil)
    }

    private func armRead(context: ChannelHandlerContext, after delay: Duration) {
        readTimer?.cancel()
        readTimer = schedule(context, after: delay) { handler, context in
            handler.readTimer = nil
            context.close(promise: nil)
        }
    }

    private func schedule(
        _ context: ChannelHandlerContext, after delay: Duration,
        _ action: @escaping (HTTPDeadlineHandler, ChannelHandlerContext) -> Void
    ) -> Scheduled<Void> {
        let nanoseconds = delay.components.seconds * 1_000_000_000 + delay.components.attoseconds / 1_000_000_000
        return context.eventLoop.assumeIsolated().scheduleTask(in: .nanoseconds(nanoseconds)) { [self] in
            action(self, context)
        }
    }

    private func cancelTimers() {
        readTimer?.cancel()
        readTimer = nil
        requestTimer?.cancel()
        requestTimer = nil
    }
}
