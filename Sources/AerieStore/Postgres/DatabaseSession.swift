import AerieCore

/// A connection as seen by one unit of work on a pool thread: a transaction (optionally scoped
/// to a tenant) or a run of autocommit reads.
///
/// A transaction starts lazily: `BEGIN` and `set_config('aerie.tenant_id', ...)` travel in one
/// pipeline with the first statement, so a tenant transaction of N statements costs N + 1 round
/// trips (the extra one is `COMMIT`), and one that runs no statement costs none.
///
/// Statements throw `AerieError`; a failed statement aborts the whole transaction, as in
/// PostgreSQL itself. The session is valid only inside the body that received it.
package final class DatabaseSession {
    package enum Mode: Sendable {
        /// Every statement commits on its own. Used for reads, which may be retried freely.
        case autocommit
        /// One transaction; with a tenant, row-level security admits only that tenant's rows.
        case transaction(tenant: TenantID?)
        /// Every statement is a read-only transaction of its own, scoped to the tenant: `BEGIN
        /// READ ONLY`, the tenant setting, the statement and `COMMIT` in one pipeline.
        case tenantReads(tenant: TenantID)
    }

    private let connection: PostgresConnection
    package let mode: Mode
    private var hasBegun = false
    private var isOpen = true

    private init(connection: PostgresConnection, mode: Mode) {
        self.connection = connection
        self.mode = mode
    }

    /// Runs one parameterised statement and returns its rows.
    @discardableResult
    package func query(_ sql: String, _ parameters: [SQLValue] = []) throws -> PostgresResult {
        guard isOpen else {
            throw AerieError.internalError(details: "a database session was used after its transaction ended")
        }
        do {
            if case .tenantReads(let tenant) = mode {
                do {
                    return try connection.pipeline(
                        [
                            ("BEGIN READ ONLY", []), ("SELECT set_config('aerie.tenant_id', $1, true)", [.text(tenant.rawValue)]),
                            (sql, parameters), ("COMMIT", []),
                        ], resultIndex: 2)
                } catch {
                    if !connection.isBroken { _ = try? connection.query("ROLLBACK") }
                    throw error
                }
            }
            guard case .transaction(let tenant) = mode, !hasBegun else {
                return try connection.query(sql, parameters)
            }
            var statements: [(sql: String, parameters: [SQLValue])] = [("BEGIN", [])]
            if let tenant {
                statements.append(("SELECT set_config('aerie.tenant_id', $1, true)", [.text(tenant.rawValue)]))
            }
            statements.append((sql, parameters))
            hasBegun = true
            return try connection.pipeline(statements)
        } catch let error as PostgresError {
            throw error.aerieError
        }
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
        on connection: PostgresConnection, mode: Mode, _ body: (DatabaseSession) throws -> T
    ) throws -> T {
        let session = DatabaseSession(connection: connection, mode: mode)
        defer { session.isOpen = false }
        let value: T
        do {
            value = try body(session)
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
            result = try connection.query("COMMIT")
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
    package func transaction<T: Sendable>(
        tenant: TenantID?, _ body: @escaping @Sendable (DatabaseSession) throws -> T
    ) async throws -> T {
        try await withConnection(tenant: tenant) { connection in
            try DatabaseSession.run(on: connection, mode: .transaction(tenant: tenant), body)
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
    /// One statement as a whole tenant transaction in one round trip: `BEGIN`, the tenant
    /// setting, the statement and `COMMIT` travel in one pipeline, and `read` turns the
    /// statement's result into the answer. For single writes on hot paths (the outbox lease and
    /// its mark after delivery). Not retried: a connection lost on the way leaves the outcome
    /// unknown, as for any `COMMIT`.
    package func transactionStatement<T: Sendable>(
        tenant: TenantID, _ sql: String, _ parameters: [SQLValue], read: @escaping @Sendable (PostgresResult) throws -> T
    ) async throws -> T {
        try await withConnection(tenant: tenant) { connection in
            do {
                let result = try connection.pipeline(
                    [
                        ("BEGIN", []), ("SELECT set_config('aerie.tenant_id', $1, true)", [.text(tenant.rawValue)]),
                        (sql, parameters), ("COMMIT", []),
                    ], resultIndex: 2)
                // Every step succeeded, COMMIT included, so the transaction committed.
                return try read(result)
            } catch let error as PostgresError {
                if !connection.isBroken { _ = try? connection.query("ROLLBACK") }
                var mapped = error.aerieError
                if error.isConnectionFailure {
                    mapped.details = "connection lost during a one-statement transaction; outcome unknown: \(error)"
                }
                throw mapped
            }
        }
    }
}
