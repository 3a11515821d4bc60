import AerieCore

/// `TenantDatabase` on PostgreSQL: every transaction sets `aerie.tenant_id`, so row-level
/// security confines it to this tenant whatever its queries say. With a keyring
/// (`sealing(with:)`), each transaction first unwraps the data key once and hands its
/// repositories the `ValueSealer` they seal and open rows with.
struct PostgresTenantDatabase: TenantDatabase {
    let tenantID: TenantID
    let pool: ConnectionPool
    var keyring: (any TenantKeyring)? = nil
    /// Told of the outbox rows each transaction enqueued, once it committed.
    var outbox: (any OutboxSignal)? = nil

    func sealing(with keyring: any TenantKeyring) -> any TenantDatabase {
        precondition(keyring.tenantID == tenantID, "a tenant database seals with its own tenant's keyring")
        return PostgresTenantDatabase(tenantID: tenantID, pool: pool, keyring: keyring, outbox: outbox)
    }

    /// The body runs on a store thread and may be run a second time on a new connection if the
    /// first one died before `COMMIT`: keep it to database work. The outbox rows it enqueued go
    /// to the `OutboxSignal` once the `COMMIT` succeeded (never when it failed or its outcome is
    /// unknown: rows that did commit then wait for their lease to end, or a scan).
    func transaction<T: Sendable>(_ body: @escaping @Sendable (any TenantTransaction) throws -> T) async throws -> T {
        let tenantID = tenantID
        let sealer = try await self.sealer()
        let outbox = self.outbox
        let (value, enqueued) = try await pool.transaction(tenant: tenantID) { session in
            let enqueued = EnqueuedRows()
            let value = try body(
                PostgresTenantTransaction(
                    tenantID: tenantID, session: session, sealer: sealer, outboxLease: outbox?.enqueueLease, enqueued: enqueued))
            return (value, enqueued.items)
        }
        if let outbox, !enqueued.isEmpty { outbox.committed(enqueued, tenant: tenantID) }
        return value
    }

    func read<T: Sendable>(_ body: @escaping @Sendable (any TenantTransaction) throws -> T) async throws -> T {
        let tenantID = tenantID
        let sealer = try await self.sealer()
        return try await pool.tenantReads(tenant: tenantID) { session in
            try body(PostgresTenantTransaction(tenantID: tenantID, session: session, sealer: sealer))
        }
    }

    private func sealer() async throws -> (any ValueSealer)? {
        guard let keyring else { return nil }
        return try await keyring.dataKey().sealer(for: tenantID)
    }
}

/// The repositories of one tenant transaction, all sharing its session and sealer.
struct PostgresTenantTransaction: TenantTransaction {
    let tenantID: TenantID
    let session: DatabaseSession
    let sealer: (any ValueSealer)?
    var outboxLease: OutboxLease? = nil
    var enqueued: EnqueuedRows? = nil

    private func sealing(_ table: String) -> RowSealing {
        RowSealing(tenantID: tenantID, sealer: sealer, table: table)
    }

    var settings: any TenantSettingsRepository {
        PostgresSettingsRepository(tenantID: tenantID, session: session, sealing: sealing("tenant_settings"))
    }

    var keys: any TenantKeyRepository {
        PostgresKeyRepository(tenantID: tenantID, session: session)
    }

    var connections: any ConnectionRepository {
        PostgresConnectionRepository(tenantID: tenantID, session: session, sealing: sealing("connections"))
    }

    var mailbox: any MailboxRepository {
        PostgresMailboxRepository(tenantID: tenantID, session: session, sealing: sealing("mailbox"))
    }

    var outbox: any OutboxRepository {
        PostgresOutboxRepository(tenantID: tenantID, session: session, lease: outboxLease, enqueued: enqueued)
    }

    var outOfBand: any OutOfBandRepository {
        PostgresOutOfBandRepository(tenantID: tenantID, session: session, sealing: sealing("oob_invitations"))
    }

    /// Every sealed table: a table given a `sealed` column adds its repository here.
    func sealClearRows(limit: Int) throws -> Int {
        try PostgresSettingsRepository(tenantID: tenantID, session: session, sealing: sealing("tenant_settings"))
            .sealClearRows(limit: limit)
            + PostgresConnectionRepository(tenantID: tenantID, session: session, sealing: sealing("connections"))
            .sealClearRows(limit: limit)
            + PostgresMailboxRepository(tenantID: tenantID, session: session, sealing: sealing("mailbox"))
            .sealClearRows(limit: limit)
            + PostgresOutOfBandRepository(tenantID: tenantID, session: session, sealing: sealing("oob_invitations"))
            .sealClearRows(limit: limit)
    }
}
