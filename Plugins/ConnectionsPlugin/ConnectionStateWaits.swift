import AerieCore
import Foundation
import Synchronization

/// Wakes callers waiting for a connection to leave `requested` (`connections.accept {wait: true}`)
/// or to be reused (out-of-band), or for a message on it (`connections.ping`'s response), as soon
/// as this process commits its next state or stores that message, instead of letting them find
/// out by polling. A state another process committed wakes them through the server's LISTEN
/// (`heard`, when the plugin is given `EventSubscriptions`), to read it from the store; while
/// nothing is heard, waiters poll the store. Keyed by tenant and connection id, and any number of
/// waiters may watch one connection.
public final class ConnectionStateWaits: Sendable {
    /// Connection ids are unique, but a wait is only ever woken by its own tenant's commits.
    struct Key: Hashable {
        var tenant: TenantID
        var connection: UUID
    }
    private let watches = Mutex<[Key: [Watch]]>([:])
    /// The waiters' timeouts, all on one timer (`Timeouts`).
    let timeouts = Timeouts()

    public init() {}

    /// Starts recording changes of the tenant's connection `id`; register before the change can
    /// happen, `stop` when done. Any number of callers may watch one connection.
    func watch(_ id: UUID, tenant: TenantID) -> Watch {
        let watch = Watch(key: Key(tenant: tenant, connection: id), timeouts: timeouts)
        watches.withLock { $0[watch.key, default: []].append(watch) }
        return watch
    }

    func stop(_ watch: Watch) {
        watches.withLock { watches in
            watches[watch.key]?.removeAll { $0 === watch }
            if watches[watch.key]?.isEmpty == true { watches[watch.key] = nil }
        }
    }

    /// Called after a transaction of `tenant` that changed a connection's state has committed.
    func changed(_ record: ConnectionRecord, tenant: TenantID) {
        let waiting = watches.withLock { $0[Key(tenant: tenant, connection: record.id)] } ?? []
        for watch in waiting { watch.deliver(record) }
    }

    /// This process's own commit is often heard before its `changed` reaches the waiter: a heard
    /// state wakes a waiter only after this grace, if `changed` has not brought it meanwhile, so
    /// it costs no read of the store.
    static let heardGrace: Duration = .milliseconds(50)

    /// A committed state of the tenant's connection `id`, heard from any process (this one's own
    /// commits too): after `heardGrace`, wakes the waiters that have not got that state yet, to
    /// read the record from the store.
    func heard(_ id: UUID, state: String, tenant: TenantID) {
        let key = Key(tenant: tenant, connection: id)
        let waiting = watches.withLock { $0[key] } ?? []
        guard waiting.contains(where: { $0.seen != state }) else { return }
        Task { [self] in
            try? await Task.sleep(for: Self.heardGrace)
            let still = watches.withLock { $0[key] } ?? []
            for watch in still where watch.seen != state { watch.poke() }
        }
    }

    /// One waiter's view of one connection: the latest committed record not yet taken.
    final class Watch: Sendable {
        let key: Key
        var id: UUID { key.connection }
        private struct State {
            var latest: ConnectionRecord?
            /// The state the waiter last worked with (`saw`) or was brought (`deliver`): hearing it
            /// again wakes nobody.
            var seen: String?
            /// Heard while nobody waited: the next `next` returns at once, to read the store.
            var poked = false
            var waiter: (token: UInt64, continuation: CheckedContinuation<ConnectionRecord?, Never>)?
            var nextToken: UInt64 = 0
            /// The waiter's entry in `timeouts`.
            var timeout: UInt64?
        }
        private let state = Mutex(State())
        private let timeouts: Timeouts

        init(key: Key, timeouts: Timeouts) {
            self.key = key
            self.timeouts = timeouts
        }

        /// Records the state the waiter has (so hearing that state again wakes nobody).
        func saw(_ state: ConnectionRecord.State) {
            self.state.withLock { $0.seen = state.rawValue }
        }

        fileprivate var seen: String? { state.withLock { $0.seen } }

        /// Wakes the waiter with nil, as its timeout would: it reads the store. Kept for the next
        /// `next` when nobody waits (the waiter may be reading the store from before the commit).
        fileprivate func poke() {
            let (waiter, timeout) = state.withLock { state -> (CheckedContinuation<ConnectionRecord?, Never>?, UInt64?) in
                guard let waiter = state.waiter else {
                    state.poked = true
                    return (nil, nil)
                }
                state.waiter = nil
                defer { state.timeout = nil }
                return (waiter.continuation, state.timeout)
            }
            if let timeout { timeouts.cancel(timeout) }
            waiter?.resume(returning: nil)
        }

        fileprivate func deliver(_ record: ConnectionRecord) {
            let (waiter, timeout) = state.withLock { state -> (CheckedContinuation<ConnectionRecord?, Never>?, UInt64?) in
                defer { state.waiter = nil }
                state.seen = record.state.rawValue
                guard let waiter = state.waiter else {
                    state.latest = record
                    return (nil, nil)
                }
                defer { state.timeout = nil }
                return (waiter.continuation, state.timeout)
            }
            if let timeout { timeouts.cancel(timeout) }
            waiter?.resume(returning: record)
        }

        /// The next committed record, or nil after `timeout` or when the task is cancelled.
        func next(timeout: Duration) async -> ConnectionRecord? {
            await withTaskCancellationHandler {
                await withCheckedContinuation { (continuation: CheckedContinuation<ConnectionRecord?, Never>) in
                    let outcome: (immediate: ConnectionRecord??, token: UInt64) = state.withLock { state in
                        if let latest = state.latest {
                            state.latest = nil
                            return (.some(latest), 0)
                        }
                        if state.poked {
                            state.poked = false
                            return (.some(nil), 0)
                        }
                        if Task.isCancelled { return (.some(nil), 0) }
                        state.nextToken += 1
                        state.waiter = (state.nextToken, continuation)
                        return (nil, state.nextToken)
                    }
                    if let immediate = outcome.immediate {
                        continuation.resume(returning: immediate)
                        return
                    }
                    // On the shared timer; taken off it when a record or a poke comes first (the
                    // timer still finds no waiter with its token if it fires meanwhile).
                    let token = outcome.token
                    let entry = timeouts.add(after: timeout) { [self] in resumeWaiter(token: token) }
                    let waiting = state.withLock { state in
                        guard state.waiter?.token == token else { return false }
                        state.timeout = entry
                        return true
                    }
                    if !waiting { timeouts.cancel(entry) }
                }
            } onCancel: {
                resumeWaiter(token: nil)
            }
        }

        /// Resumes the waiter with nil: the one holding `token`, or any when `token` is nil.
        private func resumeWaiter(token: UInt64?) {
            let (waiter, timeout) = state.withLock { state -> (CheckedContinuation<ConnectionRecord?, Never>?, UInt64?) in
                guard let waiter = state.waiter, token == nil || waiter.token == token else { return (nil, nil) }
                state.waiter = nil
                defer { state.timeout = nil }
                return (waiter.continuation, state.timeout)
            }
            if let timeout { timeouts.cancel(timeout) }
            waiter?.resume(returning: nil)
        }
    }

    /// The waiters' timeouts on one timer task instead of a task and a timer per `next`: each
    /// of those woke the runtime's timer thread twice and a pool thread twice, also when the
    /// record came first (the usual case), which was most of the wait's cost. The task sleeps
    /// until the earliest entry's deadline plus a quarter of its timeout, so entries due close
    /// together share one wake-up (a timeout is a fallback poll: a little late is fine); it
    /// ends when no entry is left, and an entry due before the sleeping task wakes starts a
    /// task of its own (the sleeping one then finds itself superseded and ends).
    final class Timeouts: Sendable {
        private struct Entry {
            let deadline: ContinuousClock.Instant
            /// The latest the entry may fire: when the timer wakes.
            let latest: ContinuousClock.Instant
            let fire: @Sendable () -> Void
        }
        private struct State {
            var entries: [UInt64: Entry] = [:]
            var nextID: UInt64 = 0
            /// The running timer task's generation, and when it wakes (nil: none runs).
            var generation: UInt64 = 0
            var wakes: ContinuousClock.Instant?
        }
        private let state = Mutex(State())

        /// Runs `fire` about `timeout` from now (no earlier, at most a quarter of `timeout`
        /// later) unless `cancel`led first. Returns the entry to cancel.
        func add(after timeout: Duration, fire: @escaping @Sendable () -> Void) -> UInt64 {
            let deadline = ContinuousClock.now + timeout
            let entry = Entry(deadline: deadline, latest: deadline + timeout / 4, fire: fire)
            let (id, start) = state.withLock { state -> (UInt64, UInt64?) in
                state.nextID += 1
                state.entries[state.nextID] = entry
                if let wakes = state.wakes, wakes <= entry.latest { return (state.nextID, nil) }
                state.generation += 1
                state.wakes = entry.latest
                return (state.nextID, state.generation)
            }
            if let generation = start {
                Task { [self] in await run(generation: generation, until: entry.latest) }
            }
            return id
        }

        func cancel(_ id: UInt64) {
            _ = state.withLock { $0.entries.removeValue(forKey: id) }
        }

        /// Entries waiting (tests).
        var count: Int { state.withLock { $0.entries.count } }

        private func run(generation: UInt64, until first: ContinuousClock.Instant) async {
            var wake = first
            while true {
                try? await Task.sleep(until: wake, clock: .continuous)
                let now = ContinuousClock.now
                let (due, next) = state.withLock { state -> ([Entry], ContinuousClock.Instant?) in
                    guard state.generation == generation else { return ([], nil) }
                    var due: [Entry] = []
                    var next: ContinuousClock.Instant?
                    for (id, entry) in state.entries {
                        if entry.deadline <= now {
                            due.append(entry)
                            state.entries[id] = nil
                        } else if next.map({ entry.latest < $0 }) ?? true {
                            next = entry.latest
                        }
                    }
                    state.wakes = next
                    return (due, next)
                }
                for entry in due { entry.fire() }
                guard let next else { return }
                wake = next
            }
        }
    }
}
