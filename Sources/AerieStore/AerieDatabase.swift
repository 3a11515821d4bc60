import AerieCore
import Foundation
import Logging

/// The server's runtime access to PostgreSQL, as the runtime login role: the tenant directory,
/// tenant-scoped databases, and the start-up safety check. Cheap to copy; all copies share one
/// connection pool, which `shutdown()` closes.
public struct AerieDatabase: Sendable {
    package let pool: ConnectionPool
    /// Plugins' repositories and upkeep hooks, for every tenant transaction.
    public let stores: PluginStores
    /// Every table holding sealed values, the core's and the plugins': what a tenant import seals anew.
    public var sealedTables: [SealedTable] { SealedTable.core + stores.sealedTables }
    /// `connections.get` answers of this process's tenant databases. Serves nothing until a
    /// listener says it is in place (`listenerChanged`): the server's `EventHub` drives it.
    package let connectionViews: ConnectionViewCache
    /// The connections this process sends over, as last read (`ConnectionSendService`); sized
    /// and driven like `connectionViews`.
    package let sendingConnections: ConnectionSendCache
    /// Keys this process made with their connections, for the inbound lookup
    /// (`TenantDirectory.inboundRecipient`). Driven by the server's `EventHub` like
    /// `connectionViews`.
    package let recentRecipients: RecentRecipients

    /// Global tenant table and admin credential.
    public var tenants: TenantDirectory { TenantDirectory(pool: pool, recentRecipients: recentRecipients) }
    /// Whole tenants read out and written in (tenant archives).
    public var archives: TenantArchiveStore { TenantArchiveStore(pool: pool) }

    /// Backends: service credentials acting for the tenants they own.
    public var backends: BackendDirectory { BackendDirectory(pool: pool) }

    /// The durable event log: sequencing, backend streams, acknowledgements, pruning.
    public var events: EventLog { EventLog(pool: pool) }

    /// Backends' webhooks: settings, cursors and delivery leases.
    public var webhooks: BackendWebhooks { BackendWebhooks(pool: pool) }

    /// Starts the pool's threads; connections open lazily, on first use. `stores`: the plugins'
    /// storage (none for a database the core alone uses).
    public init(configuration: DatabaseConfiguration, logger: Logger, stores: PluginStores = PluginStores()) {
        self.pool = ConnectionPool(configuration: configuration, logger: logger)
        self.stores = stores
        self.connectionViews = ConnectionViewCache(
            capacity: configuration.connectionViewCacheSize, maxAge: configuration.connectionViewCacheMaxAge)
        self.sendingConnections = ConnectionSendCache(
            capacity: configuration.connectionViewCacheSize, maxAge: configuration.connectionViewCacheMaxAge)
        self.recentRecipients = RecentRecipients(
            capacity: configuration.recentRecipientsSize, maxAge: configuration.recentRecipientsMaxAge)
    }

    /// A database whose every transaction is confined to `id` by row-level security. It has no
    /// data key: `TenantContext` gives it the tenant's keyring (`sealing(with:)`), without which it
    /// reads only rows of the previous clear form and cannot write sealed columns. `outbox` hears
    /// of the outbox rows each of its transactions enqueued, once committed. `wrappedDataKey`: the
    /// active tenant's, as the caller just read it; then the keys its transactions make with
    /// their connections are kept for the inbound lookup (`RecentRecipients`).
    public func tenant(_ id: TenantID, outbox: (any OutboxSignal)? = nil, wrappedDataKey: [UInt8]? = nil) -> any TenantDatabase {
        PostgresTenantDatabase(
            tenantID: id, pool: pool, stores: stores, outbox: outbox, connectionViews: connectionViews,
            recentRecipients: recentRecipients, wrappedDataKey: wrappedDataKey)
    }

    /// Leases the outbox row `id` of `tenant` for `leaseSeconds` if it is pending and due, like
    /// `OutboxRepository.claim`, as one transaction in one round trip.
    /// `instance` names this server in the lease (see `releaseOutboxLeases`). `sealer` unwraps
    /// the tenant's data key, which the claim reads with the row, to open its endpoint.
    public func claimOutbox(
        _ id: UUID, tenant: TenantID, leaseSeconds: Int, instance: String,
        sealer: @escaping @Sendable (TenantID, [UInt8]) throws -> any ValueSealer
    ) async throws -> OutboxItem? {
        try await pool.transactionStatement(
            tenant: tenant, PostgresOutboxRepository.claimSQL,
            PostgresOutboxRepository.claimParameters(tenant, id, leaseSeconds: leaseSeconds, instance: instance),
            read: { try PostgresOutboxRepository.claimed($0, tenant: tenant, sealer: sealer) })
    }

    /// Marks the outbox row `id` of `tenant` sent, like `OutboxRepository.markSent`, as one
    /// transaction in one round trip, committed asynchronously (not waiting for its WAL flush):
    /// a crash that loses the mark leaves the row pending under this server's lease, so it is
    /// sent again (delivery is at least once), and loses with it everything the same statement
    /// wrote (the sent message's status, the usage count, the delivery event and its NOTIFY,
    /// which the repeated mark writes again). Nothing durable can build on a lost mark: a
    /// synchronous commit flushes the WAL up to itself, so every earlier commit with it (the
    /// sequencer numbering the delivery event, for one); only a read, or a NOTIFY heard in
    /// that window, may see a mark the crash then takes back.
    /// A row that carries no sent message (a connection's Request, Response or trust ping) goes
    /// through `markOutboxSent(_:)`.
    public func markOutboxSent(_ id: UUID, tenant: TenantID) async throws {
        try await markOutboxMessagesSent([tenant: [id]])
    }

    /// `markOutboxSent(_:tenant:)` for rows of any number of tenants, as one transaction in one
    /// round trip, committed asynchronously: per tenant its setting and one statement for all
    /// its rows, their messages and their events. Rows already gone are skipped.
    public func markOutboxMessagesSent(_ rows: [TenantID: [UUID]]) async throws {
        var statements: [(sql: String, parameters: [SQLValue])] = []
        for (tenant, ids) in rows.sorted(by: { $0.key.rawValue < $1.key.rawValue }) where !ids.isEmpty {
            statements.append(DatabaseSession.oneStatementTenantSetting(tenant, durable: false))
            statements.append((PostgresOutboxRepository.markSentSQL, [.text(tenant.rawValue), .textArray(ids.map(\.lowercasedString))]))
        }
        guard !statements.isEmpty else { return }
        try await pool.implicitTransaction(tenant: rows.count == 1 ? rows.keys.first : nil, statements, read: { _ in })
    }

    /// Marks delivered rows that carry no sent message sent, of any number of tenants, as one
    /// transaction in one round trip, committed asynchronously like `markOutboxSent(_:tenant:)`:
    /// per tenant its setting and one statement for all its rows (`id = ANY`), in one pipeline.
    /// Rows already gone (deleted with their connection, or marked before) are skipped.
    public func markOutboxSent(_ rows: [TenantID: [UUID]]) async throws {
        var statements: [(sql: String, parameters: [SQLValue])] = []
        for (tenant, ids) in rows.sorted(by: { $0.key.rawValue < $1.key.rawValue }) where !ids.isEmpty {
            statements.append(DatabaseSession.oneStatementTenantSetting(tenant, durable: false))
            statements.append(
                (PostgresOutboxRepository.markSentWithoutMessageSQL, [.text(tenant.rawValue), .textArray(ids.map(\.lowercasedString))]))
        }
        guard !statements.isEmpty else { return }
        try await pool.implicitTransaction(statements, read: { _ in })
    }

    /// Mailbox rows across all tenants whose handling failed and is due for another try
    /// (through `aerie.unhandled_mailbox`): only (tenant, uid) pairs.
    public func unhandledMailbox(limit: Int) async throws -> [(tenant: TenantID, uid: UUID)] {
        try await tenantRows("aerie.unhandled_mailbox", column: "uid", limit: limit).map { (tenant: $0.tenant, uid: $0.id) }
    }

    /// Makes the pending rows leased by `instance` (this server's previous run, which died
    /// mid-send) due at once; answers how many. Autocommit: repeating it after a lost connection
    /// is harmless.
    public func releaseOutboxLeases(instance: String) async throws -> Int {
        try await pool.read { session in
            try session.query("SELECT aerie.release_outbox_leases($1)", [.text(instance)]).int(0, 0) ?? 0
        }
    }

    /// Outbox rows due for delivery across all tenants, as (tenant, row id) only: the delivery
    /// service then reads and updates each row under its tenant. Goes through `aerie.due_outbox`.
    /// Rows whose destination (`scheme://host:port`, lower-cased) is in `busyDestinations` are
    /// skipped, so a destination with its fill of deliveries running hides nobody else's rows.
    public func dueOutbox(limit: Int, busyDestinations: Set<String> = []) async throws
        -> [(tenant: TenantID, id: UUID, destination: String)]
    {
        let sql = """
            SELECT tenant_id::text, id::text, destination
            FROM aerie.due_outbox($1::int4, ARRAY(SELECT jsonb_array_elements_text($2::jsonb)))
            """
        let busy = String(decoding: JSONValue.array(busyDestinations.sorted().map { .string($0) }).serialized(), as: UTF8.self)
        return try await pool.read { session in
            let result = try session.query(sql, [.int(max(1, min(limit, 1000))), .text(busy)])
            return (0..<result.rowCount).compactMap { row in
                guard let tenant = result.string(row, 0).flatMap(TenantID.init),
                    let id = result.uuid(row, 1)
                else { return nil }
                return (tenant, id, result.string(row, 2) ?? "")
            }
        }
    }

    /// Tenants after `after` (in id order) that still have rows in the previous release's clear
    /// form (through `aerie.tenants_with_clear_rows`): ids only. The sealing migration converts them.
    public func tenantsWithClearRows(after: TenantID? = nil, limit: Int) async throws -> [TenantID] {
        try await pool.read { session in
            let result = try session.query(
                "SELECT tenant_id::text FROM aerie.tenants_with_clear_rows($1::uuid, $2::int4)",
                [.optionalText(after?.rawValue), .int(max(1, min(limit, 1000)))])
            return (0..<result.rowCount).compactMap { result.string($0, 0).flatMap(TenantID.init) }
        }
    }

    /// (tenant, row id) pairs from one of the SECURITY DEFINER scans across tenants.
    private func tenantRows(_ function: String, column: String, limit: Int) async throws -> [(tenant: TenantID, id: UUID)] {
        let sql = "SELECT tenant_id::text, \(column)::text FROM \(function)($1::int4)"
        return try await pool.read { session in
            let result = try session.query(sql, [.int(max(1, min(limit, 1000)))])
            return (0..<result.rowCount).compactMap { row in
                guard let tenant = result.string(row, 0).flatMap(TenantID.init),
                    let id = result.uuid(row, 1)
                else { return nil }
                return (tenant, id)
            }
        }
    }

    /// Refuses to run with a login that would defeat row-level security: a superuser, a role
    /// with BYPASSRLS, or one that owns (directly or through membership) schema `aerie` or any
    /// relation in it, since owners can alter or disable policies. Call at start-up; doubles as
    /// a connectivity check.
    /// The durability settings (`EmbeddedPostgres.durabilitySettings`) this database runs with
    /// turned off, e.g. `["fsync"]`: then an acknowledged commit can be lost in a crash.
    public func durabilitySettingsOff() async throws -> [String] {
        try await pool.read { session in
            let result = try session.query(
                "SELECT name FROM pg_settings WHERE name IN ('fsync', 'synchronous_commit', 'full_page_writes') AND setting = 'off' ORDER BY name")
            return (0..<result.rowCount).compactMap { result.string($0, 0) }
        }
    }

    public func verifyRuntimeRole() async throws {
        let problems = try await pool.read { session in
            let result = try session.query(
                """
                SELECT current_user, r.rolsuper, r.rolbypassrls,
                    (SELECT string_agg(c.relname, ', ' ORDER BY c.relname) FROM pg_class c
                        JOIN pg_namespace n ON n.oid = c.relnamespace
                        WHERE n.nspname = 'aerie' AND pg_has_role(r.oid, c.relowner, 'MEMBER')),
                    (SELECT count(*) FROM pg_namespace n
                        WHERE n.nspname = 'aerie' AND pg_has_role(r.oid, n.nspowner, 'MEMBER'))
                FROM pg_roles r WHERE r.rolname = current_user
                """)
            guard result.rowCount == 1 else { return ["its role was not found in pg_roles"] }
            let role = result.string(0, 0) ?? "?"
            var problems: [String] = []
            if result.bool(0, 1) == true { problems.append("\(role) is a superuser") }
            if result.bool(0, 2) == true { problems.append("\(role) has BYPASSRLS") }
            if let owned = result.string(0, 3) { problems.append("\(role) owns relations in schema aerie: \(owned)") }
            if result.int(0, 4) ?? 0 > 0 { problems.append("\(role) owns schema aerie") }
            return problems
        }
        guard problems.isEmpty else {
            throw DatabaseSetupError(
                "the runtime database login must not be able to bypass row-level security: "
                    + problems.joined(separator: "; ")
                    + ". Connect as a plain login role that is a member of aerie_runtime (AERIE_DATABASE_URL).")
        }
    }

    /// What the operator's metrics report about the whole database, read in one round trip:
    /// tenants by status and the outbox backlog (through `aerie.outbox_stats`, aggregates only).
    public struct OperatorStats: Sendable, Equatable {
        public var tenantsByStatus: [String: Int]
        public var outboxPending: Int
        public var outboxOldestPendingSeconds: Double
    }

    public func operatorStats() async throws -> OperatorStats {
        try await pool.read { session in
            let result = try session.query(
                """
                SELECT (SELECT coalesce(json_object_agg(status, n), '{}')::text
                            FROM (SELECT status, count(*) AS n FROM aerie.tenants GROUP BY status) t),
                       s.pending, s.oldest_pending_seconds
                FROM aerie.outbox_stats() s
                """)
            var tenants: [String: Int] = [:]
            if let text = result.string(0, 0), case .object(let members)? = try? JSONValue(parsing: Array(text.utf8)) {
                for (status, count) in members { tenants[status] = Int(count.intValue ?? 0) }
            }
            return OperatorStats(
                tenantsByStatus: tenants, outboxPending: result.int(0, 1) ?? 0,
                outboxOldestPendingSeconds: result.string(0, 2).flatMap(Double.init) ?? 0)
        }
    }

    /// One trivial query through the pool: whether the database answers now (readiness).
    public func ping() async throws {
        _ = try await pool.read { session in try session.query("SELECT 1").rowCount }
    }

    /// Closes every connection and stops the pool's threads.
    public func shutdown() async {
        await pool.shutdown()
    }

    /// Runs `body` in one transaction as the runtime role, optionally scoped to a tenant. For
    /// tests and tooling inside this package; the server goes through `tenant(_:)`.
    package func withSession<T: Sendable>(
        tenant: TenantID? = nil, _ body: @escaping @Sendable (DatabaseSession) throws -> T
    ) async throws -> T {
        try await pool.transaction(tenant: tenant, body)
    }
}
