import AerieCore
import NIOCore

/// Sent down a session's pipeline once it authenticated: its authentication deadline is over.
struct SessionAuthenticatedEvent: Sendable {}

/// A session's two deadlines, kept on its event loop after the line decoder (so it counts
/// requests, not bytes): it must authenticate within `authTimeout` of connecting, or it gets one
/// `unauthenticated` error line and is closed; and it is closed after `idleTimeout` without a
/// request. Blank lines and bytes that never make a line are not requests, so trickling them does
/// not keep a session alive.
final class SessionTimeoutHandler: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = LineFrame
    typealias InboundOut = LineFrame
    typealias OutboundOut = ByteBuffer

    private let idleTimeout: TimeAmount
    private let authTimeout: TimeAmount
    private var lastRequest = NIODeadline.now()
    private var idleTimer: Scheduled<Void>?
    private var authTimer: Scheduled<Void>?
    private var started = false

    init(idleTimeout: TimeAmount, authTimeout: TimeAmount) {
        self.idleTimeout = idleTimeout
        self.authTimeout = authTimeout
    }

    func handlerAdded(context: ChannelHandlerContext) {
        if context.channel.isActive { start(context: context) }
    }

    func channelActive(context: ChannelHandlerContext) {
        start(context: context)
        context.fireChannelActive()
    }

    func handlerRemoved(context: ChannelHandlerContext) { stop() }

    func channelInactive(context: ChannelHandlerContext) {
        stop()
        context.fireChannelInactive()
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .line(let line):
            if !line.readableBytesView.allSatisfy({ $0 == 0x20 || $0 == 0x09 }) { lastRequest = .now() }
        case .oversize:
            break
        }
        context.fireChannelRead(data)
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if event is SessionAuthenticatedEvent {
            authTimer?.cancel()
            authTimer = nil
            return
        }
        context.fireUserInboundEventTriggered(event)
    }

    private func start(context: ChannelHandlerContext) {
        guard !started else { return }
        started = true
        lastRequest = .now()
        let loop = context.eventLoop.assumeIsolated()
        authTimer = loop.scheduleTask(in: authTimeout) { [self] in
            authTimer = nil
            let error = AerieError(
                .unauthenticated, "call session.authenticate within \(authTimeout.nanoseconds / 1_000_000_000) s of connecting")
            var bytes = RPCEnvelope.error(id: .null, error).serialized()
            bytes.append(UInt8(ascii: "\n"))
            context.writeAndFlush(wrapOutboundOut(context.channel.allocator.buffer(bytes: bytes)))
                .assumeIsolated().whenComplete { _ in context.close(promise: nil) }
        }
        scheduleIdleCheck(context: context, in: idleTimeout)
    }

    private func scheduleIdleCheck(context: ChannelHandlerContext, in delay: TimeAmount) {
        idleTimer = context.eventLoop.assumeIsolated().scheduleTask(in: delay) { [self] in
            let quiet = NIODeadline.now() - lastRequest
            if quiet >= idleTimeout {
                idleTimer = nil
                context.close(promise: nil)
            } else {
                scheduleIdleCheck(context: context, in: idleTimeout - quiet)
            }
        }
    }

    private func stop() {
        authTimer?.cancel()
        authTimer = nil
        idleTimer?.cancel()
        idleTimer = nil
    }
}
