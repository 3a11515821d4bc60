import AerieCore

/// `TenantDatabase` on PostgreSQL: every transaction sets `aerie.tenant_id`, so row-level
/// security confines it to this tenant whatever its queries say. With a keyring
/// (`sealing(with:)`), each transaction first unwraps the data key once and hands its
/// repositories the `ValueSealer` they seal and open rows with.
struct PostgresTenantDatabase: TenantDatabase {
    let tenantID: TenantID
    let pool: ConnectionPool
    let stores: PluginStores
    var keyring: (any TenantKeyring)? = nil
    /// Told of the outbox rows each transaction enqueued, once it committed.
    var outbox: (any OutboxSignal)? = nil

    func sealing(with keyring: any TenantKeyring) -> any TenantDatabase {
        precondition(keyring.tenantID == tenantID, "a tenant database seals with its own tenant's keyring")
        return PostgresTenantDatabase(tenantID: tenantID, pool: pool, stores: stores, keyring: keyring, outbox: outbox)
    }

    /// The body runs on a store thread and may be run a second time on a new connection if the
    /// first one died before `COMMIT`: keep it to database work. The outbox rows it enqueued go
    /// to the `OutboxSignal` once the `COMMIT` succeeded (never when it failed or its outcome is
    /// unknown: rows that did commit then wait for their lease to end, or a scan).
    func transaction<T: Sendable>(_ body: @escaping @Sendable (any TenantTransaction) throws -> T) async throws -> T {
        let (tenantID, stores) = (tenantID, stores)
        let sealer = try await self.sealer()
        let outbox = self.outbox
        let (value, enqueued) = try await pool.transaction(tenant: tenantID) { session in
            let enqueued = EnqueuedRows()
            let value = try body(
                PostgresTenantTransaction(
                    tenantID: tenantID, session: session, sealer: sealer, stores: stores, outboxLease: outbox?.enqueueLease, enqueued: enqueued))
            return (value, enqueued.items)
        }
        if let outbox, !enqueued.isEmpty { outbox.committed(enqueued, tenant: tenantID) }
        return value
    }

    func read<T: Sendable>(_ body: @escaping @Sendable (any TenantTransaction) throws -> T) async throws -> T {
        let (tenantID, stores) = (tenantID, stores)
        let sealer = try await self.sealer()
        return try await pool.tenantReads(tenant: tenantID) { session in
            try body(PostgresTenantTransaction(tenantID: tenantID, session: session, sealer: sealer, stores: stores))
        }
    }

    private func sealer() async throws -> (any ValueSealer)? {
        guard let keyring else { return nil }
        return try await keyring.dataKey().sealer(for: tenantID)
    }
}

/// The repositories of one tenant transaction, all sharing its session and sealer; plugins'
/// repositories reach the same session through `sql`.
struct PostgresTenantTransaction: TenantTransaction {
    let tenantID: TenantID
    let session: DatabaseSession
    let sealer: (any ValueSealer)?
    let stores: PluginStores
    var outboxLease: OutboxLease? = nil
    var enqueued: EnqueuedRows? = nil

    var settings: any TenantSettingsRepository {
        PostgresSettingsRepository(tenantID: tenantID, session: session, sealing: rowSealing("tenant_settings"))
    }

    var keys: any TenantKeyRepository {
        PostgresKeyRepository(tenantID: tenantID, session: session)
    }

    var connections: any ConnectionRepository {
        PostgresConnectionRepository(tenantID: tenantID, session: session, sealing: rowSealing("connections"))
    }

    var mailbox: any MailboxRepository {
        PostgresMailboxRepository(tenantID: tenantID, session: session, sealing: rowSealing("mailbox"))
    }

    var outbox: any OutboxRepository {
        PostgresOutboxRepository(tenantID: tenantID, session: session, lease: outboxLease, enqueued: enqueued)
    }

    var sql: any TenantSQL { SessionSQL(session: session) }

    /// Every sealed table: the core's here, plugins' through their `PluginStorage.sealClearRows`.
    func sealClearRows(limit: Int) throws -> Int {
        try PostgresSettingsRepository(tenantID: tenantID, session: session, sealing: rowSealing("tenant_settings"))
            .sealClearRows(limit: limit)
            + PostgresConnectionRepository(tenantID: tenantID, session: session, sealing: rowSealing("connections"))
            .sealClearRows(limit: limit)
            + PostgresMailboxRepository(tenantID: tenantID, session: session, sealing: rowSealing("mailbox"))
            .sealClearRows(limit: limit)
            + stores.sealClearRows(in: self, limit: limit)
    }
}

/// `TenantSQL` over the transaction's session.
struct SessionSQL: TenantSQL {
    let session: DatabaseSession

    func query(_ sql: String, _ parameters: [SQLValue]) throws -> any SQLRows {
        try session.query(sql, parameters)
    }

    func execute(_ sql: String, _ parameters: [SQLValue]) throws -> Int {
        try session.execute(sql, parameters)
    }
}

extension PostgresResult: SQLRows {}
