import AerieCore

/// A connection as seen by one unit of work on a pool thread: a transaction (optionally scoped
/// to a tenant) or a run of autocommit reads.
///
/// A transaction starts lazily: `BEGIN` and `set_config('aerie.tenant_id', ...)` travel in one
/// pipeline with the first statement, so a tenant transaction of N statements costs N + 1 round
/// trips (the extra one is `COMMIT`), and one that runs no statement costs none. Writes queued
/// with `executeLater` cost none of their own: they ride with the next statement or `COMMIT`.
///
/// Statements throw `AerieError`; a failed statement aborts the whole transaction, as in
/// PostgreSQL itself. The session is valid only inside the body that received it.
package final class DatabaseSession {
    package enum Mode: Sendable {
        /// Every statement commits on its own. Used for reads, which may be retried freely.
        case autocommit
        /// One transaction; with a tenant, row-level security admits only that tenant's rows.
        case transaction(tenant: TenantID?)
        /// Every statement is a read-only transaction of its own, scoped to the tenant: the
        /// tenant and read-only settings and the statement in one pipeline, one implicit
        /// transaction (`readOnlyTenantSetting`).
        case tenantReads(tenant: TenantID)
    }

    private let connection: PostgresConnection
    package let mode: Mode
    /// A transaction whose body only queued writes sends them without `BEGIN` and `COMMIT`:
    /// one implicit transaction, committed at the pipeline's Sync (`ConnectionPool.transaction`'s
    /// `rerunnable`).
    private let commitsQueuedWritesAtSync: Bool
    private var hasBegun = false
    private var isOpen = true
    /// Set by `announceEventsAfterCommit`: the commit's pipeline ends with the announcement.
    private var announcesAfterCommit = false

    private init(connection: PostgresConnection, mode: Mode, commitsQueuedWritesAtSync: Bool = false) {
        self.connection = connection
        self.mode = mode
        self.commitsQueuedWritesAtSync = commitsQueuedWritesAtSync
    }

    /// Runs one parameterised statement and returns its rows. In a transaction, writes queued by
    /// `executeLater` travel in the same pipeline, in front of it.
    ///
    /// `genericPlan`: in `tenantReads` mode, the statement runs under `plan_cache_mode =
    /// force_generic_plan` (set with the tenant, for its implicit transaction only), so its cached
    /// plan is used instead of one planned afresh for each call's parameters. For a statement
    /// PostgreSQL keeps re-planning although one plan suits every call (`messages.download`).
    ///
    /// `binaryResults`: the rows come in binary format, for a listing
    /// whose `bytea`, `uuid` and timestamp columns would otherwise be written as text by the
    /// server and parsed back here, row by row (`PostgresResult` reads either).
    @discardableResult
    package func query(
        _ sql: String, _ parameters: [SQLValue] = [], genericPlan: Bool = false, binaryResults: Bool = false
    ) throws -> PostgresResult {
        guard isOpen else {
            throw AerieError.internalError(details: "a database session was used after its transaction ended")
        }
        do {
            if case .tenantReads(let tenant) = mode {
                let setting = genericPlan ? Self.genericPlanReadOnlyTenantSetting(tenant) : Self.readOnlyTenantSetting(tenant)
                return try connection.pipeline([setting, (sql, parameters)], binaryResult: binaryResults)
            }
            guard case .transaction = mode, !hasBegun || !deferred.isEmpty else {
                return try connection.query(sql, parameters, binaryResults: binaryResults)
            }
            return try flush(then: (sql, parameters), binaryResult: binaryResults)
        } catch let mapped as MappedError {
            throw mapped.error
        } catch let error as PostgresError {
            throw error.aerieError
        }
    }

    /// Queues a write whose outcome the body does not read (an insert, an update whose row count
    /// it ignores): it travels in the pipeline of the transaction's next statement, or of its
    /// `COMMIT`, instead of costing a round trip of its own. It runs in order with the others
    /// and its failure aborts the transaction like any failure; the error is thrown by that next
    /// statement or by the commit (`mapError` rewrites it, e.g. a conflict's message). Outside a
    /// transaction it runs at once.
    package func executeLater(
        _ sql: String, _ parameters: [SQLValue] = [], mapError: (@Sendable (AerieError) -> AerieError)? = nil
    ) throws {
        guard isOpen else {
            throw AerieError.internalError(details: "a database session was used after its transaction ended")
        }
        guard case .transaction = mode else {
            do {
                _ = try connection.query(sql, parameters)
                return
            } catch let error as PostgresError {
                throw mapError?(error.aerieError) ?? error.aerieError
            }
        }
        deferred.append(Deferred(sql: sql, parameters: parameters, mapError: mapError))
    }

    private struct Deferred {
        var sql: String
        var parameters: [SQLValue]
        var mapError: (@Sendable (AerieError) -> AerieError)?
    }

    private var deferred: [Deferred] = []

    /// The events this transaction's triggers announce through `aerie.notify_event` (schema/0076:
    /// a received message's) are NOTIFYed after its commit instead of by it, in a transaction of
    /// their own that travels in the commit's round trip, after its Sync
    /// (`aerie.notify_pending_events`, committed without waiting for the disk: it holds nothing
    /// durable). PostgreSQL holds one lock across the cluster from a notifying transaction's
    /// commit until its WAL is flushed, so transactions that NOTIFY commit one flush after
    /// another; these share their flushes with every other commit. A listener hears the event
    /// after the row is durable, as before; a crash of PostgreSQL between the two loses the
    /// announcement with the listener's connection (the push is lossy while `LISTEN` is down).
    /// Call it before the statement whose triggers announce: it is set with the tenant when the
    /// transaction has not begun (no statement of its own), else queued like `executeLater`.
    package func announceEventsAfterCommit() throws {
        guard isOpen else {
            throw AerieError.internalError(details: "a database session was used after its transaction ended")
        }
        guard case .transaction(let tenant) = mode, !announcesAfterCommit else { return }
        announcesAfterCommit = true
        if hasBegun || tenant == nil { try executeLater(Self.announceAfterCommitSQL) }
    }

    /// Marks the transaction's announcements as wanted after its commit (`aerie.notify_event`).
    static let announceAfterCommitSQL = "SELECT set_config('aerie.notify_after_commit', 'on', true)"
    /// The announcements, after the commit (see `announceEventsAfterCommit`).
    static let announcePendingSQL = "SELECT aerie.notify_pending_events()"

    /// What the pipeline that commits sends after its Sync.
    private var afterCommit: [(sql: String, parameters: [SQLValue])] {
        announcesAfterCommit ? [(Self.announcePendingSQL, [])] : []
    }

    /// Sends `BEGIN` and the tenant setting (first time), the queued writes and `last` in one
    /// pipeline; answers `last`'s result. A failed queued write's error goes through its
    /// `mapError`. `implicitCommit` (nothing sent yet): no `BEGIN`, so the pipeline is the whole
    /// transaction, committed at its Sync.
    private func flush(
        then last: (sql: String, parameters: [SQLValue])?, binaryResult: Bool = false, implicitCommit: Bool = false,
        commits: Bool = false
    ) throws -> PostgresResult {
        guard case .transaction(let tenant) = mode else { preconditionFailure("flush outside a transaction") }
        precondition(!implicitCommit || !hasBegun, "an implicit commit after BEGIN")
        var statements: [(sql: String, parameters: [SQLValue])] = []
        if !hasBegun {
            if !implicitCommit { statements.append(("BEGIN", [])) }
            if let tenant { statements.append(Self.tenantSetting(tenant, announcingAfterCommit: announcesAfterCommit)) }
        }
        let queued = deferred
        let firstQueued = statements.count
        statements += queued.map { ($0.sql, $0.parameters) }
        if let last { statements.append(last) }
        deferred = []
        hasBegun = !implicitCommit
        do {
            return try connection.pipeline(
                statements, binaryResult: binaryResult && last != nil, afterSync: implicitCommit || commits ? afterCommit : [])
        } catch let error as PostgresError {
            if let failed = error.statementIndex, failed >= firstQueued, failed - firstQueued < queued.count,
                let map = queued[failed - firstQueued].mapError
            {
                throw MappedError(error: map(error.aerieError))
            }
            throw error
        }
    }

    /// A transaction that only queued writes sends them (with `BEGIN`) before its `COMMIT`, as a
    /// body would: a connection found dead then is retried on a fresh one, where a failure
    /// during the `COMMIT` pipeline would leave the outcome unknown. With
    /// `commitsQueuedWritesAtSync`, without `BEGIN` and `COMMIT`: one round trip, committed at
    /// the Sync (a connection found dead then is retried too, outcome unknown: the body is
    /// one that may run twice).
    private func sendQueuedWrites() throws {
        do {
            _ = try flush(then: nil, implicitCommit: commitsQueuedWritesAtSync)
        } catch let mapped as MappedError {
            throw mapped.error
        } catch let error as PostgresError {
            throw error.aerieError
        }
    }

    /// A queued write's failure, already mapped.
    struct MappedError: Error {
        var error: AerieError
    }

    /// The first statement of a tenant write transaction, after `BEGIN` or as the first of a
    /// one-round-trip transaction without `BEGIN` or `COMMIT` (`rerunnableTransaction`,
    /// `transactionStatement`): statements pipelined before one Sync run in one implicit
    /// transaction, which commits at the Sync (or rolls back at the first failure), and
    /// `set_config(..., true)` lasts only until then, so the next user of the connection finds no
    /// tenant set. Two statements instead of four (`BEGIN`, setting, statement, `COMMIT`): each
    /// is a Bind/Execute the server pays for.
    ///
    /// Every tenant write transaction (this for `transaction`, `oneStatementTenantSettingSQL` and
    /// `asynchronousTenantSettingSQL` for `transactionStatement`) also runs under
    /// `plan_cache_mode = force_generic_plan`, for itself alone: its statements and the
    /// triggers' statements inside them are key lookups and writes
    /// by `tenant_id` and a key, whose one cached plan suits every call, and with the default
    /// (`auto`) each pooled connection planned each of them afresh for its first five calls
    /// (custom plans) before settling on that plan: in `aerie-bench connections` a fifth of the
    /// statements were planned, 14-17 % of the database's CPU per connection (BENCHMARKS,
    /// `pgfour`). A statement added to a tenant transaction must therefore suit one plan (no
    /// `$n IS NULL OR` condition that an index bound depends on: `SQLConditions`); the
    /// sequencer, the delivery scan and the other tenantless work keep `auto`.
    static let tenantSettingSQL =
        "SELECT set_config('aerie.tenant_id', $1, true), set_config('plan_cache_mode', 'force_generic_plan', true), "
        + tenantLogsSetting
    static let readOnlyTenantSettingSQL =
        "SELECT set_config('aerie.tenant_id', $1, true), set_config('transaction_read_only', 'on', true)"

    /// `tenantSettingSQL` that also asks for the transaction's announcements after its commit
    /// (`announceEventsAfterCommit`).
    static let announcingTenantSettingSQL = tenantSettingSQL + ", set_config('aerie.notify_after_commit', 'on', true)"

    static func tenantSetting(_ tenant: TenantID, announcingAfterCommit: Bool = false) -> (sql: String, parameters: [SQLValue]) {
        (announcingAfterCommit ? announcingTenantSettingSQL : tenantSettingSQL, [.text(tenant.rawValue)])
    }

    /// Part of the setting of every tenant transaction (`transaction`, whose writes may fire the
    /// triggers that log): `aerie.tenant_logs` is 'off' for a tenant without a backend, whose
    /// events no log row is written for (schema/0033), so those triggers skip their insert
    /// instead of joining the tenant's row to find no backend, three times per connection
    /// accepted (schema/0035). A tenant's backend never changes; a missing tenant reads 'on'
    /// (the triggers' own join decides, as before).
    static let tenantLogsSetting =
        "set_config('aerie.tenant_logs', CASE WHEN EXISTS (SELECT FROM aerie.tenants t "
        + "WHERE t.id = $1::uuid AND t.backend_id IS NULL) THEN 'off' ELSE 'on' END, true)"

    /// The setting of a one-statement transaction (`transactionStatement`: the outbox's lease and
    /// its mark after delivery, whose statements fire no trigger that logs): without
    /// `aerie.tenant_logs`, which would only cost its lookup there (a statement that did log
    /// would decide by the tenant's row, as before).
    static let oneStatementTenantSettingSQL =
        "SELECT set_config('aerie.tenant_id', $1, true), set_config('plan_cache_mode', 'force_generic_plan', true)"

    /// `oneStatementTenantSettingSQL` for a transaction whose loss in a crash only repeats work
    /// that is allowed to happen twice (see `ConnectionPool.transactionStatement(durable:)`): its
    /// `COMMIT` does not wait for the WAL to reach the disk (`synchronous_commit = off` for it
    /// alone).
    static let asynchronousTenantSettingSQL =
        "SELECT set_config('aerie.tenant_id', $1, true), set_config('synchronous_commit', 'off', true), "
        + "set_config('plan_cache_mode', 'force_generic_plan', true)"

    static func oneStatementTenantSetting(_ tenant: TenantID, durable: Bool) -> (sql: String, parameters: [SQLValue]) {
        (durable ? oneStatementTenantSettingSQL : asynchronousTenantSettingSQL, [.text(tenant.rawValue)])
    }

    static func readOnlyTenantSetting(_ tenant: TenantID) -> (sql: String, parameters: [SQLValue]) {
        (readOnlyTenantSettingSQL, [.text(tenant.rawValue)])
    }

    static let genericPlanReadOnlyTenantSettingSQL =
        "SELECT set_config('aerie.tenant_id', $1, true), set_config('transaction_read_only', 'on', true), "
        + "set_config('plan_cache_mode', 'force_generic_plan', true)"

    static func genericPlanReadOnlyTenantSetting(_ tenant: TenantID) -> (sql: String, parameters: [SQLValue]) {
        (genericPlanReadOnlyTenantSettingSQL, [.text(tenant.rawValue)])
    }

    /// Runs one statement and returns how many rows it inserted, updated or deleted.
    @discardableResult
    package func execute(_ sql: String, _ parameters: [SQLValue] = []) throws -> Int {
        try query(sql, parameters).affectedRows
    }

    /// Runs `body` under `mode` on `connection`: commits when it returns, rolls back when it
    /// throws. A body that failed because the connection died is reported to the pool as
    /// retryable, since nothing was committed; a connection lost during `COMMIT` is not (the
    /// outcome is unknown), and surfaces as `.unavailable`.
    static func run<T>(
        on connection: PostgresConnection, mode: Mode, commitsQueuedWritesAtSync: Bool = false,
        _ body: (DatabaseSession) throws -> T
    ) throws -> T {
        let session = DatabaseSession(connection: connection, mode: mode, commitsQueuedWritesAtSync: commitsQueuedWritesAtSync)
        defer { session.isOpen = false }
        let value: T
        do {
            value = try body(session)
            if !session.hasBegun, !session.deferred.isEmpty { try session.sendQueuedWrites() }
        } catch {
            if connection.isBroken { throw RetryOnFreshConnection(error) }
            if session.hasBegun { _ = try? connection.query("ROLLBACK") }
            throw error
        }
        if session.hasBegun { try session.commit() }
        return value
    }

    private func commit() throws {
        let result: PostgresResult
        do {
            if deferred.isEmpty, !announcesAfterCommit {
                result = try connection.query("COMMIT")
            } else {
                do {
                    result = try flush(then: ("COMMIT", []), commits: true)
                } catch {
                    // A queued write failed: the transaction is aborted, nothing was committed.
                    if !connection.isBroken { _ = try? connection.query("ROLLBACK") }
                    throw error
                }
            }
        } catch let mapped as MappedError {
            throw mapped.error
        } catch let error as PostgresError {
            var mapped = error.aerieError
            if error.isConnectionFailure {
                mapped.details = "connection lost during COMMIT; outcome unknown: \(error)"
            }
            throw mapped
        }
        // The server answers ROLLBACK when an earlier statement failed and the body went on.
        guard result.commandStatus == "COMMIT" else {
            throw AerieError.internalError(details: "transaction was rolled back after a failed statement")
        }
    }
}

extension ConnectionPool {
    /// Runs `body` in one transaction, scoped to `tenant` when given. If the connection turns
    /// out dead before `COMMIT` (typically after a database restart), the body runs again once on
    /// a new connection, so it must be pure database work: no side effects outside the session.
    ///
    /// `rerunnable`: `body` may run twice even after it committed, because its writes check
    /// first that they were not done (`connections.accept`: no connection matches the
    /// invitation, under the invitation's lock; a Response: its mailbox row, and the connection
    /// still as read). A body that then only queued writes
    /// (`executeLater`) is sent as one implicit transaction without `BEGIN` and `COMMIT`, one
    /// round trip instead of two; a connection lost on the way runs it again on a fresh one,
    /// whose checks find what the first run committed, if it did.
    package func transaction<T: Sendable>(
        tenant: TenantID?, rerunnable: Bool = false, _ body: @escaping @Sendable (DatabaseSession) throws -> T
    ) async throws -> T {
        try await withConnection(tenant: tenant) { connection in
            try DatabaseSession.run(on: connection, mode: .transaction(tenant: tenant), commitsQueuedWritesAtSync: rerunnable, body)
        }
    }

    /// Runs `body` with every statement a read-only tenant transaction of its own (one round
    /// trip each). Retried once on a fresh connection like any read.
    package func tenantReads<T: Sendable>(
        tenant: TenantID, _ body: @escaping @Sendable (DatabaseSession) throws -> T
    ) async throws -> T {
        try await withConnection(tenant: tenant) { connection in
            try DatabaseSession.run(on: connection, mode: .tenantReads(tenant: tenant), body)
        }
    }

    /// Runs `body` in autocommit mode: one round trip per statement. For reads (which are safe
    /// to repeat after a lost connection), e.g. the per-call session check.
    package func read<T: Sendable>(_ body: @escaping @Sendable (DatabaseSession) throws -> T) async throws -> T {
        try await withConnection { connection in
            try DatabaseSession.run(on: connection, mode: .autocommit, body)
        }
    }
}

extension ConnectionPool {
    /// One statement as a whole tenant transaction in one round trip: the tenant setting and the
    /// statement travel in one pipeline, an implicit transaction that commits at its Sync (see
    /// `DatabaseSession.oneStatementTenantSetting`), and `read` turns the
    /// statement's result into the answer. For single writes on hot paths (the outbox lease and
    /// its mark after delivery). Not retried: a connection lost on the way leaves the outcome
    /// unknown, as for any `COMMIT`.
    ///
    /// `durable: false` commits asynchronously (`synchronous_commit = off` for this transaction
    /// only): the answer comes before the commit's WAL is flushed, so a crash of PostgreSQL or
    /// of the machine up to three `wal_writer_delay`s (600 ms by default) after it can lose it,
    /// never tear it or reorder it (WAL order is commit order: any later synchronous commit
    /// flushes it first).
    /// Only for writes whose loss is a repetition the design allows (a delivery marked sent is
    /// sent again, at least once); saves the commit's `fdatasync` on the database's side.
    package func transactionStatement<T: Sendable>(
        tenant: TenantID, durable: Bool = true, _ sql: String, _ parameters: [SQLValue],
        read: @escaping @Sendable (PostgresResult) throws -> T
    ) async throws -> T {
        try await implicitTransaction(
            tenant: tenant, [DatabaseSession.oneStatementTenantSetting(tenant, durable: durable), (sql, parameters)], read: read)
    }

    /// `statements` (their tenant settings among them) as one implicit transaction in one round
    /// trip, committed at the pipeline's Sync; `read` turns the last statement's result into the
    /// answer. Not retried: a connection lost on the way leaves the outcome unknown.
    package func implicitTransaction<T: Sendable>(
        tenant: TenantID? = nil, _ statements: [(sql: String, parameters: [SQLValue])],
        read: @escaping @Sendable (PostgresResult) throws -> T
    ) async throws -> T {
        try await withConnection(tenant: tenant) { connection in
            do {
                let result = try connection.pipeline(statements)
                // Every step succeeded and the Sync answered: the implicit transaction committed.
                return try read(result)
            } catch let error as PostgresError {
                var mapped = error.aerieError
                if error.isConnectionFailure {
                    mapped.details = "connection lost during a one-round-trip transaction; outcome unknown: \(error)"
                }
                throw mapped
            }
        }
    }
}
