import AerieCore
import AerieListener
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
    private let logger: Logger
    private let listener: TCPListener<LineFrame, ByteBuffer>
    private let sessions: Mutex<SessionRegistry>

    private struct SessionRegistry {
        var nextID: UInt64 = 1
        var open: [UInt64: any Channel] = [:]
        /// Sessions not yet authenticated (a subset of `open`), capped on their own.
        var unauthenticated: Set<UInt64> = []
        /// The authenticated sessions' places, by credential.
        var admission: SessionAdmission
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
        self.logger = logger
        self.sessions = Mutex(SessionRegistry(admission: SessionAdmission(
            maxSessions: configuration.maxSessions, maxPerCredential: configuration.maxSessionsPerCredential,
            maxAdmin: configuration.maxAdminSessions)))
        self.dispatcher = RPCDispatcher(
            router: router, authenticator: authenticator, configuration: configuration, logger: logger,
            serverVersion: serverVersion)
        var options = TCPListener<LineFrame, ByteBuffer>.Options(host: configuration.host, port: configuration.port)
        options.noDelay = true
        options.allowRemoteHalfClosure = true
        self.listener = TCPListener(name: "JSON-RPC", options: options, group: eventLoopGroup, logger: logger) { channel in
            let ops = channel.pipeline.syncOperations
            try ops.addHandler(ByteToMessageHandler(LineFrameDecoder(maxLength: configuration.maxLineBytes)))
            try ops.addHandler(
                SessionTimeoutHandler(
                    idleTimeout: .seconds(Int64(configuration.idleTimeoutSeconds)),
                    authTimeout: .seconds(Int64(configuration.authTimeoutSeconds))))
        }
    }

    /// The port actually bound (useful with port 0); fails if binding failed.
    public func listeningPort() async throws -> Int {
        try await listener.listeningPort()
    }

    public func run() async throws {
        try await listener.run(serve: { await self.serve($0) }) {
            let open = self.sessions.withLock { registry in
                registry.draining = true
                return Array(registry.open.values)
            }
            // Running calls finish and write their answers; the sessions read nothing more.
            for channel in open { channel.close(mode: .input, promise: nil) }
        }
    }

    /// Open sessions now, authenticated and not (the operator's metrics read it at each scrape).
    public var sessionCounts: (authenticated: Int, unauthenticated: Int) {
        sessions.withLock { ($0.admission.held.count, $0.unauthenticated.count) }
    }

    /// Admits a new session as unauthenticated, within that cap.
    private func register(_ channel: any Channel) -> UInt64? {
        sessions.withLock { registry in
            guard !registry.draining, registry.unauthenticated.count < configuration.maxUnauthenticatedSessions else {
                return nil
            }
            let id = registry.nextID
            registry.nextID += 1
            registry.open[id] = channel
            registry.unauthenticated.insert(id)
            return id
        }
    }

    /// Gives a session that authenticated its place as `kind`: nil and whether it is the
    /// session's first, or the refusal.
    private func admit(_ id: UInt64, as kind: SessionCredential.Kind) -> (first: Bool, refusal: SessionAdmission.Refusal?) {
        sessions.withLock { registry in
            if let refusal = registry.admission.admit(id, as: kind) { return (false, refusal) }
            return (registry.unauthenticated.remove(id) != nil, nil)
        }
    }

    private func unregister(_ id: UInt64) {
        sessions.withLock { registry in
            registry.open.removeValue(forKey: id)
            registry.unauthenticated.remove(id)
            registry.admission.release(id)
        }
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
        // Notifications go straight onto the channel from the thread that notifies.
        let write: RPCSession.Writer = { notification, written in
            channel.writeAndFlush(Self.frame(notification, allocator: channel.allocator)).whenComplete { _ in written() }
        }
        let session = RPCSession(id: sessionID, notificationQueueLimit: configuration.notificationQueueLimit, write: write) { [self] kind in
            let (first, refusal) = admit(sessionID, as: kind)
            if let refusal {
                logger.warning("authenticated session refused", metadata: ["session": "\(sessionID)", "reason": "\(refusal)"])
                return refusal.error
            }
            if first { channel.pipeline.fireUserInboundEventTriggered(SessionAuthenticatedEvent()) }
            return nil
        }
        defer { session.finish() }
        let limiter = InFlightLimiter(limit: configuration.maxInFlightPerSession)
        let dispatcher = self.dispatcher
        do {
            try await connection.executeThenClose { inbound, outbound in
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
                                    // Authentication completes before the next line is read;
                                    // it takes in-flight slots like any other request.
                                    if case .batch(let entries) = incoming {
                                        await withDiscardingTaskGroup { barrier in
                                            await Self.startBatch(entries, in: &barrier, limiter: limiter, session: session, dispatcher: dispatcher) { line in
                                                try? await outbound.write(Self.frame(line, allocator: channel.allocator))
                                            }
                                        }
                                    } else {
                                        await limiter.acquire()
                                        let response = await dispatcher.handle(incoming, session: session)
                                        limiter.release()
                                        if let response {
                                            try? await outbound.write(Self.frame(response, allocator: channel.allocator))
                                        }
                                    }
                                    // Refused for want of a place: answered, then closed.
                                    if session.isClosing { return }
                                    continue
                                }
                                if case .batch(let entries) = incoming {
                                    // Each entry takes its own slot, so a 100-entry batch
                                    // line counts as 100 requests; the reader waits for
                                    // slots entry by entry, and the last entry to finish
                                    // writes the batch's answer.
                                    await Self.startBatch(entries, in: &requests, limiter: limiter, session: session, dispatcher: dispatcher) { line in
                                        try? await outbound.write(Self.frame(line, allocator: channel.allocator))
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
        } catch {
            logger.debug("session closed with error", metadata: ["session": "\(sessionID)", "error": "\(error)"])
        }
    }

    /// Starts one task per batch entry in `group`, each after taking an in-flight slot (so the
    /// caller waits for slots entry by entry); the entry that finishes last hands the batch's
    /// answer to `write`.
    private static func startBatch(
        _ entries: [Result<RPCRequest, RPCInvalidRequest>], in group: inout DiscardingTaskGroup, limiter: InFlightLimiter,
        session: RPCSession, dispatcher: RPCDispatcher, write: @escaping @Sendable (RPCResponseText) async -> Void
    ) async {
        let batch = BatchResponses(expected: entries.count)
        for entry in entries {
            await limiter.acquire()
            group.addTask {
                let response = await dispatcher.respond(to: entry, session: session)
                limiter.release()
                guard let responses = batch.add(response), let line = RPCDispatcher.batch(responses) else { return }
                await write(line)
            }
        }
    }

    static func frame(_ value: JSONValue, allocator: ByteBufferAllocator) -> ByteBuffer {
        frame(RPCResponseText(value.serialized()), allocator: allocator)
    }

    /// One line: `text` and its newline.
    static func frame(_ text: RPCResponseText, allocator: ByteBufferAllocator) -> ByteBuffer {
        var buffer = allocator.buffer(capacity: text.byteCount + 1)
        text.withPieces { buffer.writeBytes($0) }
        buffer.writeInteger(UInt8(ascii: "\n"))
        return buffer
    }
}
