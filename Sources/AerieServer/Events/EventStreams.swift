import AerieCore
import AerieStore
import Foundation
import Logging
import ServiceLifecycle
import Synchronization

/// This process's part of the durable event log (schema/0017): it numbers committed events (the
/// sequencer, woken by each event's NOTIFY while someone here reads positions as they come: a
/// stream of this process, or webhooks; else every `tick`; one process at a time wins), prunes
/// the log every `pruneInterval`, and runs the backend sessions' streams (`events.subscribe`).
///
/// A stream never pushes what it has not read from the log: it reads the events after the last
/// position it sent, in position order, at most as many as the session's queue has room for,
/// and reads again when positions advance (a `positions` NOTIFY, or the tick). A slow consumer's
/// queue therefore never overflows: the stream waits for room and goes on from its place in the
/// log, losing nothing and sending nothing twice, live or catching up alike.
final class EventStreams: Service, Sendable {
    static let eventMethod = "events.event"
    static let revokedMethod = EventHub.revokedMethod

    let log: EventLog
    let retention: Duration
    let pruneInterval: Duration
    let tick: Duration
    /// The shortest time between two sequencer runs of this process.
    let sequencerInterval: Duration
    /// Told whenever positions advance (webhook delivery), besides this process's streams.
    let onPositionsAdvanced: @Sendable () -> Void
    /// Whether something outside this type waits for positions as events come (webhooks).
    let positionsAwaited: @Sendable () -> Bool
    let logger: Logger

    private let sequencerWake: AsyncStream<Void>.Continuation
    private let sequencerWakes: AsyncStream<Void>
    private let started: AsyncStream<Stream>.Continuation
    private let startedStreams: AsyncStream<Stream>
    /// Streams by session id.
    private let streams = Mutex<[UInt64: Stream]>([:])
    /// Whether an event was committed (its NOTIFY heard, or the listener connected again) since
    /// the sequencer last ran: the tick wakes the sequencer only then, so an idle server sends
    /// the database nothing.
    private let unsequenced = Atomic<Bool>(true)

    /// How each kind is shown, as the plugins that own the kinds present it.
    let presenters: EventPresenters

    init(
        log: EventLog, retention: Duration, pruneInterval: Duration, tick: Duration = .seconds(1),
        sequencerInterval: Duration = .milliseconds(10), onPositionsAdvanced: @escaping @Sendable () -> Void = {},
        positionsAwaited: @escaping @Sendable () -> Bool = { true }, logger: Logger, presenters: EventPresenters
    ) {
        self.presenters = presenters
        self.positionsAwaited = positionsAwaited
        self.log = log
        self.onPositionsAdvanced = onPositionsAdvanced
        self.sequencerInterval = sequencerInterval
        self.retention = retention
        self.pruneInterval = pruneInterval
        self.tick = tick
        self.logger = logger
        (sequencerWakes, sequencerWake) = AsyncStream.makeStream(of: Void.self, bufferingPolicy: .bufferingNewest(1))
        (startedStreams, started) = AsyncStream.makeStream(of: Stream.self)
    }

    /// An event was committed somewhere (its NOTIFY arrived): number it soon if a stream of this
    /// process or a webhook waits for it. Otherwise the tick numbers it (within `tick`): a flow
    /// commits several events tens of milliseconds apart, and numbering each burst cost a round
    /// trip and most of the database's work per event (issue 16). A stream that starts numbers
    /// first, so it never waits for the tick; other processes' streams are woken by their own
    /// sequencer, since every process hears every NOTIFY.
    func eventsCommitted() {
        unsequenced.store(true, ordering: .releasing)
        if positionsAwaited() || !streams.withLock({ $0.isEmpty }) { sequencerWake.yield() }
    }

    /// Positions were assigned (here or by another process): every stream reads on.
    func positionsAdvanced() {
        onPositionsAdvanced()
        for stream in streams.withLock({ Array($0.values) }) { stream.wake() }
    }

    func run() async throws {
        await cancelWhenGracefulShutdown {
            await withDiscardingTaskGroup { group in
                group.addTask { await self.runSequencer() }
                group.addTask { await self.runPruning() }
                group.addTask {
                    while (try? await Task.sleep(for: self.tick)) != nil {
                        if self.unsequenced.load(ordering: .acquiring) { self.sequencerWake.yield() }
                        self.positionsAdvanced()
                    }
                }
                for await stream in self.startedStreams {
                    group.addTask { await self.run(stream) }
                }
                group.cancelAll()
            }
        }
        for stream in streams.withLock({ map in defer { map = [:] }; return Array(map.values) }) { stream.stop() }
    }

    // MARK: Sequencer and pruning

    /// At most one sequencer run per `sequencerInterval` in this process: the first event after a
    /// quiet spell is numbered at once; a burst of NOTIFYs (each committed event sends one) is
    /// numbered by one run per interval, one statement and one `positions` NOTIFY for all its
    /// rows, instead of one run per event. Wakes that arrive during a run or the wait coalesce
    /// into one more run, so nothing committed before a wake waits longer than an interval.
    private func runSequencer() async {
        let clock = ContinuousClock()
        var lastRun: ContinuousClock.Instant? = nil
        for await _ in sequencerWakes {
            if let lastRun, clock.now < lastRun.advanced(by: sequencerInterval) {
                guard (try? await Task.sleep(until: lastRun.advanced(by: sequencerInterval), clock: clock)) != nil else { return }
            }
            lastRun = clock.now
            // Cleared before the run: an event committed during it sets it again.
            unsequenced.store(false, ordering: .releasing)
            await sequenceAll()
        }
    }

    /// Numbers everything committed so far. When another process holds the sequencer, that run
    /// (or the next one its own wakes cause: every process hears every NOTIFY) numbers what this
    /// one would have; one retry an interval later covers a holder that does not listen.
    func sequenceAll() async {
        var busy = 0
        while !Task.isCancelled {
            do {
                guard let numbered = try await log.sequence() else {
                    busy += 1
                    if busy > 2 { return }
                    try await Task.sleep(for: sequencerInterval)
                    continue
                }
                if numbered > 0 { positionsAdvanced() }
                if numbered < EventLog.sequenceBatch { return }
            } catch is CancellationError {
                return
            } catch {
                logger.warning("event sequencing failed", metadata: ["error": "\(String(reflecting: error))"])
                return
            }
        }
    }

    private func runPruning() async {
        while !Task.isCancelled {
            do {
                let cutoff = Date().addingTimeInterval(-MailboxRetentionService.seconds(retention))
                let pruned = try await log.prune(createdBefore: cutoff)
                if pruned > 0 { logger.info("pruned the event log", metadata: ["count": "\(pruned)"]) }
            } catch is CancellationError {
                return
            } catch {
                logger.warning("event log pruning failed", metadata: ["error": "\(String(reflecting: error))"])
            }
            guard (try? await Task.sleep(for: pruneInterval)) != nil else { return }
        }
    }

    // MARK: Streams

    /// One backend session's stream: where it is in the log, and how it is woken and stopped.
    final class Stream: Sendable {
        let session: any SessionHandle
        let backend: BackendID
        let tokenHash: [UInt8]
        let start: Int64
        private let wakeups: AsyncStream<Void>.Continuation
        let wakes: AsyncStream<Void>
        private let stopped = Atomic<Bool>(false)

        init(session: any SessionHandle, backend: BackendID, tokenHash: [UInt8], start: Int64) {
            self.session = session
            self.backend = backend
            self.tokenHash = tokenHash
            self.start = start
            (wakes, wakeups) = AsyncStream.makeStream(of: Void.self, bufferingPolicy: .bufferingNewest(1))
            wakeups.yield()
        }

        func wake() { wakeups.yield() }

        var isStopped: Bool { stopped.load(ordering: .acquiring) }

        func stop() {
            stopped.store(true, ordering: .releasing)
            wakeups.finish()
        }
    }

    /// Starts streaming `backend`'s events after position `after` to `session`. A session has at
    /// most one stream (`invalidRequest` for a second; `events.unsubscribe` ends it).
    func subscribe(session: any SessionHandle, backend: BackendID, tokenHash: [UInt8], after: Int64) throws {
        let stream = Stream(session: session, backend: backend, tokenHash: tokenHash, start: after)
        try streams.withLock { map in
            guard map[session.id] == nil else {
                throw AerieError(.invalidRequest, "this session already streams events; call events.unsubscribe first")
            }
            map[session.id] = stream
        }
        let id = session.id
        session.onClose { [weak self] in self?.unsubscribe(sessionID: id) }
        started.yield(stream)
        // Events committed while nobody here streamed may still wait for the tick.
        sequencerWake.yield()
    }

    /// Ends the session's stream; returns whether it had one.
    @discardableResult
    func unsubscribe(sessionID: UInt64) -> Bool {
        guard let stream = streams.withLock({ $0.removeValue(forKey: sessionID) }) else { return false }
        stream.stop()
        return true
    }

    /// How many notifications a stream reads from the log at once at most.
    static let pageSize = 500

    private func run(_ stream: Stream) async {
        var last = stream.start
        let session = stream.session
        for await _ in stream.wakes {
            do {
                reading: while !stream.isStopped {
                    var room = session.notificationRoom
                    while room == 0 {
                        // The consumer is behind: wait for its writer to drain, then go on from `last`.
                        try await Task.sleep(for: .milliseconds(10))
                        if stream.isStopped { return }
                        room = session.notificationRoom
                    }
                    let limit = min(room, Self.pageSize)
                    let page = try await log.read(backend: stream.backend, tokenHash: stream.tokenHash, after: last, limit: limit)
                    guard case .events(let events) = page else {
                        unsubscribe(sessionID: session.id)
                        session.revokeCredential(
                            ifStill: stream.tokenHash, method: Self.revokedMethod,
                            params: [
                                "code": "unauthenticated",
                                "reason": "the backend was suspended or deleted, or its token was rotated",
                            ])
                        return
                    }
                    for event in events {
                        if stream.isStopped { return }
                        guard session.notify(method: Self.eventMethod, params: presenters.logged(event)) else {
                            // Refused: the session is closing (its close action stops this stream)
                            // or its queue is full (room 0 either way). Go on from `last` once
                            // there is room, rather than end this task and leave a registered
                            // stream that sends nothing; any other refusal ends it as before.
                            if session.notificationRoom == 0 { continue reading }
                            return
                        }
                        last = event.position
                    }
                    if events.count < limit { break }
                }
            } catch is CancellationError {
                return
            } catch {
                // Read again at the next wake (at the latest the next tick), from the same place.
                logger.warning("event stream read failed", metadata: ["error": "\(String(reflecting: error))"])
            }
        }
    }
}

extension EventPresenters {
    /// A logged event as backends receive it (the `events.event` params, and each event of a
    /// webhook batch): `{tenantId, position, kind, ...}` with the kind's fields as its plugin
    /// presents them (only the ids for a kind no running plugin presents).
    func logged(_ event: LoggedEvent) -> JSONValue {
        var members: [String: JSONValue] = [:]
        if case .object(let fields)? = present(kind: event.kind, data: event.data)?.fields { members = fields }
        if members["pairwiseDID"] == nil, let pairwise = event.data["pairwiseDID"] { members["pairwiseDID"] = pairwise }
        members["tenantId"] = .string(event.tenant.rawValue)
        members["position"] = .int(event.position)
        members["kind"] = .string(event.kind)
        return .object(members)
    }
}
