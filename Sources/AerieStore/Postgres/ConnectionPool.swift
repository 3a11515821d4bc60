import AerieCore
import Metrics
import Logging
import NIOPosix
import Synchronization

/// A bounded pool of libpq connections driven by its own `NIOThreadPool`.
///
/// A caller first leases a slot (an idle connection, or the right to open one), waiting at most
/// `acquireTimeout`; the blocking work then runs on one of the pool's threads, never on the Swift
/// concurrency pool. There are as many threads as connections, so a leased slot never waits for
/// a thread.
package final class ConnectionPool: Sendable {
    package let configuration: DatabaseConfiguration
    package let logger: Logger
    private let threads: NIOThreadPool
    private let state = Mutex(State())
    /// `aerie_db_pool_wait_seconds`: how long each lease waited for a connection (0 when one was free).
    private let waitTimer = Metrics.Timer(label: "aerie_db_pool_wait_seconds")

    private struct State {
        var idle: [PostgresConnection] = []
        /// Connections open or being opened, leased or idle.
        var open = 0
        /// Connections leased per tenant (tenant-scoped work only).
        var tenantLeases: [TenantID: Int] = [:]
        var waiters: [Waiter] = []
        var nextWaiterID: UInt64 = 0
        var isClosed = false
        /// Whether the task that fails waiters past their deadline is running (one per pool,
        /// while anyone waits: a timer per waiter cost a task and a timer wake-up per lease).
        var expiryRunning = false

        mutating func lease(for tenant: TenantID?) {
            if let tenant { tenantLeases[tenant, default: 0] += 1 }
        }

        mutating func unlease(for tenant: TenantID?) {
            guard let tenant else { return }
            let left = tenantLeases[tenant, default: 1] - 1
            tenantLeases[tenant] = left > 0 ? left : nil
        }
    }

    private struct Waiter {
        var id: UInt64
        var tenant: TenantID?
        var deadline: ContinuousClock.Instant
        var continuation: CheckedContinuation<PostgresConnection?, any Error>
    }

    package init(configuration: DatabaseConfiguration, logger: Logger) {
        self.configuration = configuration
        self.logger = logger
        self.threads = NIOThreadPool(numberOfThreads: configuration.maxConnections)
        threads.start()
    }

    /// Runs `body` on a pool thread with a live connection, leased for `tenant`'s work when
    /// given (see `DatabaseConfiguration.tenantShare`: when connections are scarce, a freed one
    /// goes first to a waiter whose tenant holds fewer than its share, so one tenant's burst
    /// cannot starve the others).
    ///
    /// If `body` throws `RetryOnFreshConnection` (the connection died before anything could have
    /// been committed), the dead connection and every idle one are discarded, since after a
    /// server restart they are all stale, and `body` runs once more on a new connection.
    package func withConnection<T: Sendable>(
        tenant: TenantID? = nil, _ body: @escaping @Sendable (PostgresConnection) throws -> T
    ) async throws -> T {
        let lease = Lease(try await acquire(tenant: tenant))
        do {
            return try await onThread { [self] in
                var connection = lease.take()
                defer { release(connection, tenant: tenant) }
                for attempt in 0..<2 {
                    let live = try connection ?? connect()
                    connection = live
                    do {
                        return try body(live)
                    } catch let retry as RetryOnFreshConnection {
                        live.close()
                        connection = nil
                        evictIdle()
                        guard attempt == 0 else { throw retry.underlying }
                        logger.notice(
                            "database connection lost; retrying once on a new connection",
                            metadata: ["error": "\(String(reflecting: retry.underlying))"])
                    }
                }
                preconditionFailure("unreachable: the retry loop returns or throws")
            }
        } catch {
            // The body ran and released its connection: its error is the answer.
            guard !lease.wasTaken else { throw error }
            // The thread pool refused the work (cancelled or shut down): give the slot back.
            release(lease.take(), tenant: tenant)
            if error is CancellationError { throw error }
            throw AerieError(.unavailable, "database unavailable", details: "thread pool: \(error)")
        }
    }

    /// Runs `body` on one of the pool's threads and returns what it returns, as
    /// `threads.runIfActive(body)` did, without its per-call generic work: NIO's `runIfActive<T>`
    /// is not specialized across modules (and `T` comes through `TenantDatabase`'s existential
    /// anyway), so each call looked up the metadata of a `CheckedContinuation<T, Error>`, a
    /// `Result<T, Error>` and its cancellation handler's types (about 1.2 % of the server's
    /// samples per connection flow, docs/BENCHMARKS.md `srvfive`). Here the result goes through a
    /// slot of `T` the caller allocates (`T`'s own metadata, which the call already has) and the
    /// thread hands back only `Void` or the error. Unlike `runIfActive` a task cancelled while its
    /// item waits for a thread does not drop the item: there are as many threads as leases, so
    /// a leased caller's item never waits.
    private func onThread<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
        nonisolated(unsafe) let slot = UnsafeMutablePointer<T>.allocate(capacity: 1)
        defer { slot.deallocate() }
        try await onThread { slot.initialize(to: try body()) }
        return slot.move()
    }

    private func onThread(_ work: @escaping @Sendable () throws -> Void) async throws {
        try await withUnsafeThrowingContinuation { (done: UnsafeContinuation<Void, any Error>) in
            threads.submit { state in
                guard case .active = state else { return done.resume(throwing: ThreadsStopped()) }
                do {
                    try work()
                    done.resume()
                } catch {
                    done.resume(throwing: error)
                }
            }
        }
    }

    /// The pool's threads are stopped (shut down): the work did not run. Answered as
    /// `unavailable`, as NIO's inactive-pool error was before the pool's own hand-off.
    private struct ThreadsStopped: Error, CustomStringConvertible {
        var description: String { "the pool's threads are stopped" }
    }

    /// Connections leased now, idle ones, and callers waiting for one (the operator's metrics).
    package struct Usage: Sendable, Equatable {
        package var inUse: Int
        package var idle: Int
        package var waiting: Int
        package var capacity: Int
    }

    package var usage: Usage {
        state.withLock { state in
            Usage(
                inUse: state.open - state.idle.count, idle: state.idle.count, waiting: state.waiters.count,
                capacity: configuration.maxConnections)
        }
    }

    /// Closes idle connections, fails waiters and stops the threads. In-flight work finishes
    /// and its connections are closed when released.
    package func shutdown() async {
        let (idle, waiters) = state.withLock { state in
            state.isClosed = true
            defer {
                state.open -= state.idle.count
                state.idle = []
                state.waiters = []
            }
            return (state.idle, state.waiters)
        }
        for waiter in waiters { waiter.continuation.resume(throwing: Self.closedError) }
        try? await threads.runIfActive { idle.forEach { $0.close() } }
        try? await threads.shutdownGracefully()
    }

    // MARK: - Leasing

    private static let closedError = AerieError(.unavailable, "database unavailable", details: "pool is shut down")

    /// Returns an idle connection, or nil meaning "a slot is yours: open a connection".
    private func acquire(tenant: TenantID?) async throws -> PostgresConnection? {
        enum Decision {
            case ready(PostgresConnection?)
            case fail(any Error)
            case wait(UInt64)
        }
        let decision: Decision = state.withLock { state in
            if state.isClosed { return .fail(Self.closedError) }
            // Free connections go to whoever asks (work-conserving); shares matter only when
            // callers wait (`release`).
            if let connection = state.idle.popLast() {
                state.lease(for: tenant)
                return .ready(connection)
            }
            if state.open < configuration.maxConnections {
                state.open += 1
                state.lease(for: tenant)
                return .ready(nil)
            }
            if state.waiters.count >= configuration.maxWaiters {
                return .fail(AerieError(.busy, "database busy, try again", details: "connection wait queue full"))
            }
            state.nextWaiterID += 1
            return .wait(state.nextWaiterID)
        }
        switch decision {
        case .ready(let connection):
            waitTimer.recordNanoseconds(0)
            return connection
        case .fail(let error): throw error
        case .wait(let id):
            let started = ContinuousClock.now
            defer { waitTimer.record(duration: ContinuousClock.now - started) }
            return try await wait(id: id, tenant: tenant)
        }
    }

    private func wait(id: UInt64, tenant: TenantID?) async throws -> PostgresConnection? {
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { continuation in
                let deadline = ContinuousClock.now + configuration.acquireTimeout
                let (queued, startExpiry) = state.withLock { state in
                    // Checked under the lock so a cancellation that already ran is not missed.
                    if Task.isCancelled || state.isClosed { return (false, false) }
                    state.waiters.append(Waiter(id: id, tenant: tenant, deadline: deadline, continuation: continuation))
                    defer { state.expiryRunning = true }
                    return (true, !state.expiryRunning)
                }
                guard queued else {
                    continuation.resume(throwing: Task.isCancelled ? CancellationError() : Self.closedError)
                    return
                }
                if startExpiry { Task { [self] in await expireWaiters() } }
            }
        } onCancel: {
            failWaiter(id, with: CancellationError())
        }
    }

    /// Fails each waiter still queued at its deadline with `busy`, sleeping until the earliest
    /// one; ends when nobody waits. Waiters queue in arrival order with the same timeout, and
    /// leave only by being removed, so the first one's deadline is the earliest.
    private func expireWaiters() async {
        while true {
            let now = ContinuousClock.now
            let (expired, next) = state.withLock { state -> ([Waiter], ContinuousClock.Instant?) in
                var expired: [Waiter] = []
                while let first = state.waiters.first, first.deadline <= now { expired.append(state.waiters.removeFirst()) }
                guard let next = state.waiters.first?.deadline else {
                    state.expiryRunning = false
                    return (expired, nil)
                }
                return (expired, next)
            }
            for waiter in expired {
                waiter.continuation.resume(
                    throwing: AerieError(
                        .busy, "database busy, try again", details: "no connection free within \(configuration.acquireTimeout)"))
            }
            guard let next else { return }
            try? await Task.sleep(until: next, clock: .continuous)
        }
    }

    private func failWaiter(_ id: UInt64, with error: any Error) {
        let waiter = state.withLock { state -> Waiter? in
            guard let index = state.waiters.firstIndex(where: { $0.id == id }) else { return nil }
            return state.waiters.remove(at: index)
        }
        waiter?.continuation.resume(throwing: error)
    }

    /// Returns a connection (or, when nil or dead, its slot) to the pool; a waiter gets it
    /// first: the longest-waiting one whose tenant holds fewer than its share
    /// (`configuration.tenantShare`) or that is not tenant work, else the longest-waiting one.
    private func release(_ connection: PostgresConnection?, tenant: TenantID?) {
        enum Outcome {
            case kept
            case close
            case handOff(Waiter, PostgresConnection?)
        }
        let reusable = connection?.isReusable ?? false
        let share = configuration.tenantShare
        let outcome: Outcome = state.withLock { state in
            state.unlease(for: tenant)
            if state.isClosed {
                state.open -= 1
                return .close
            }
            if !state.waiters.isEmpty {
                // A tenant found at its share is not looked up again for the waiters behind it
                // (a burst queues many waiters of one tenant: one lookup, then comparisons).
                var atShare: TenantID?
                let index =
                    state.waiters.firstIndex { waiter in
                        guard let tenant = waiter.tenant else { return true }
                        if tenant == atShare { return false }
                        if state.tenantLeases[tenant, default: 0] < share { return true }
                        atShare = tenant
                        return false
                    } ?? 0
                let waiter = state.waiters.remove(at: index)
                state.lease(for: waiter.tenant)
                return .handOff(waiter, reusable ? connection : nil)
            }
            if reusable, let connection {
                state.idle.append(connection)
                return .kept
            }
            state.open -= 1
            return .close
        }
        switch outcome {
        case .kept:
            break
        case .close:
            connection?.close()
        case .handOff(let waiter, let handed):
            if handed == nil { connection?.close() }
            waiter.continuation.resume(returning: handed)
        }
    }

    /// Drops every idle connection: called after one connection died, when the others are
    /// most likely stale too (server restart, failover).
    private func evictIdle() {
        let stale = state.withLock { state in
            defer {
                state.open -= state.idle.count
                state.idle = []
            }
            return state.idle
        }
        stale.forEach { $0.close() }
    }

    private func connect() throws -> PostgresConnection {
        do {
            let connection = try PostgresConnection(conninfo: configuration.conninfo, settings: configuration.quotas.sessionSettings)
            logger.debug("opened database connection")
            return connection
        } catch let error as PostgresError {
            throw error.aerieError
        }
    }
}

/// Thrown by a pool body when its connection died before anything was committed, asking the
/// pool to run it again on a fresh connection.
package struct RetryOnFreshConnection: Error {
    package var underlying: any Error
    package init(_ underlying: any Error) { self.underlying = underlying }
}

/// Hands a leased connection into the thread-pool closure exactly once, so the slot can still be
/// returned when the thread pool refuses the work without running it.
private final class Lease: Sendable {
    private let value: Mutex<(connection: PostgresConnection?, taken: Bool)>

    init(_ connection: PostgresConnection?) { value = Mutex((connection, false)) }

    func take() -> PostgresConnection? {
        value.withLock { value in
            defer { value = (nil, true) }
            return value.connection
        }
    }

    var wasTaken: Bool { value.withLock { $0.taken } }
}

extension Duration {
    /// Whole nanoseconds (the pool's deadlines, `PostgresConnection`'s answer wait).
    var nanoseconds: Int64 {
        let (seconds, attoseconds) = components
        return seconds * 1_000_000_000 + attoseconds / 1_000_000_000
    }
}
