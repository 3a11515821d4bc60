import AerieCore

/// `TenantDatabase` on PostgreSQL: every transaction sets `aerie.tenant_id`, so row-level
/// security confines it to this tenant whatever its queries say.
struct PostgresTenantDatabase: TenantDatabase {
    let tenantID: TenantID
    let pool: ConnectionPool

    /// The body runs on a store thread and may be run a second time on a new connection if the
    /// first one died before `COMMIT`: keep it to database work.
    func transaction<T: Sendable>(_ body: @escaping @Sendable (any TenantTransaction) throws -> T) async throws -> T {
        let tenantID = tenantID
        return try await pool.transaction(tenant: tenantID) { session in
            try body(PostgresTenantTransaction(tenantID: tenantID, session: session))
        }
    }

    func read<T: Sendable>(_ body: @escaping @Sendable (any TenantTransaction) throws -> T) async throws -> T {
        let tenantID = tenantID
        return try await pool.tenantReads(tenant: tenantID) { session in
            try body(PostgresTenantTransaction(tenantID: tenantID, session: session))
        }
    }
}

/// The repositories of one tenant transaction, all sharing its session.
struct PostgresTenantTransaction: TenantTransaction {
    let tenantID: TenantID
    let session: DatabaseSession

    var settings: any TenantSettingsRepository {
        PostgresSettingsRepository(tenantID: tenantID, session: session)
    }

    var keys: any TenantKeyRepository {
        PostgresKeyRepository(tenantID: tenantID, session: session)
    }

    var connections: any ConnectionRepository {
        PostgresConnectionRepository(tenantID: tenantID, session: session)
    }

    var mailbox: any MailboxRepository {
        PostgresMailboxRepository(tenantID: tenantID, session: session)
    }

    var outbox: any OutboxRepository {
        PostgresOutboxRepository(tenantID: tenantID, session: session)
    }

    var outOfBand: any OutOfBandRepository {
        PostgresOutOfBandRepository(tenantID: tenantID, session: session)
    }
}
