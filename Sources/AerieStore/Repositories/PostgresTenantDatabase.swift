import AerieCore
import Foundation
import Synchronization

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
    /// The server's `connections.get` answers; the connections each transaction wrote leave it
    /// when the transaction ends (committed, failed or unknown: dropping an entry is always safe).
    var connectionViews: ConnectionViewCache = .off
    /// Keys made with their connections; given the tenant's wrapped data key as its caller read
    /// it (the tenant active), each committed transaction adds what it made, and its writes of
    /// connections and deletes of keys remove theirs when it ends.
    var recentRecipients: RecentRecipients = .off
    var wrappedDataKey: [UInt8]? = nil

    func sealing(with keyring: any TenantKeyring) -> any TenantDatabase {
        precondition(keyring.tenantID == tenantID, "a tenant database seals with its own tenant's keyring")
        var sealing = self
        sealing.keyring = keyring
        return sealing
    }

    /// From the cache when it holds the view; else one read, which fills the cache unless a
    /// change (or a listener outage) happened while it read. Only a sealing database (one with
    /// the tenant's keyring, as every handler's is) uses the cache.
    func connectionView(_ id: UUID) async throws -> JSONText? {
        var generation: UInt64? = nil
        if keyring != nil {
            switch connectionViews.lookup(tenant: tenantID, key: id) {
            case .hit(let text): return text
            case .miss(let current): generation = current
            }
        }
        guard let record = try await read({ try $0.connections.get(id) }) else { return nil }
        let text = ConnectionView(record).text
        if let generation, text.bytes.count <= Self.largestCachedView {
            connectionViews.store(tenant: tenantID, key: id, value: text, generation: generation)
        }
        return text
    }

    /// The cache bounds entries by count; this bounds each one (bytes of text), so a tenant
    /// filling it with views of 64 KiB invitations cannot make it hold hundreds of megabytes (a
    /// usual view has under 1 KiB of text; bigger ones are read every time).
    static let largestCachedView = 4096

    /// The body runs on a store thread and may be run a second time on a new connection if the
    /// first one died before `COMMIT`: keep it to database work. The outbox rows it enqueued go
    /// to the `OutboxSignal` once the `COMMIT` succeeded (never when it failed or its outcome is
    /// unknown: rows that did commit then wait for their lease to end, or a scan).
    func transaction<T: Sendable>(_ body: @escaping @Sendable (any TenantTransaction) throws -> T) async throws -> T {
        try await transaction(rerunnable: false, body)
    }

    func rerunnableTransaction<T: Sendable>(_ body: @escaping @Sendable (any TenantTransaction) throws -> T) async throws -> T {
        try await transaction(rerunnable: true, body)
    }

    private func transaction<T: Sendable>(
        rerunnable: Bool, _ body: @escaping @Sendable (any TenantTransaction) throws -> T
    ) async throws -> T {
        let (tenantID, stores) = (tenantID, stores)
        let sealer = try await self.sealer()
        let outbox = self.outbox
        let written = WrittenConnections()
        let made = recentRecipients.isEnabled ? MadeRecipients() : nil
        var kept: Set<UUID> = []
        defer {
            if let ids = written.take() {
                connectionViews.invalidate(tenant: tenantID, keys: ids)
                recentRecipients.forget(tenant: tenantID, connections: ids.subtracting(kept))
            }
            if let deleted = made?.deletedKeys, !deleted.isEmpty { recentRecipients.forget(tenant: tenantID, verkeys: deleted) }
        }
        let pool = self.pool
        let (value, enqueued) = try await pool.transaction(tenant: tenantID, rerunnable: rerunnable) { session in
            let enqueued = EnqueuedRows()
            let value = try body(
                PostgresTenantTransaction(
                    tenantID: tenantID, session: session, sealer: sealer, stores: stores, outboxLease: outbox?.enqueueLease,
                    enqueued: enqueued, writtenConnections: written, madeRecipients: made,
                    overlapsOtherWork: pool.usage.inUse > 1))
            return (value, enqueued.items)
        }
        // Kept before the rows go out: the answer to the Request they carry may come back at once.
        if let made, let wrappedDataKey, sealer != nil {
            let recipients = made.recipients(tenant: tenantID, wrappedDataKey: wrappedDataKey)
            recentRecipients.remember(recipients)
            kept = Set(recipients.compactMap { $0.recipient.connection?.id })
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
    /// Where the connections this transaction writes are recorded (nil in read-only ones).
    var writtenConnections: WrittenConnections? = nil
    /// Where the keys it stores and the connections it inserts are recorded (`RecentRecipients`).
    var madeRecipients: MadeRecipients? = nil
    /// Whether other work held the pool's connections when this transaction began: only then
    /// is its commit likely to meet others', and announcing after it worth its own transaction.
    var overlapsOtherWork = false

    func announceEventsAfterCommit() throws {
        // Alone, the announcement's transaction would cost more than the flush it could share.
        guard overlapsOtherWork else { return }
        try session.announceEventsAfterCommit()
    }

    var settings: any TenantSettingsRepository {
        PostgresSettingsRepository(tenantID: tenantID, session: session, sealing: rowSealing("tenant_settings"))
    }

    var keys: any TenantKeyRepository {
        PostgresKeyRepository(tenantID: tenantID, session: session, made: madeRecipients)
    }

    var connections: any ConnectionRepository { postgresConnections }

    private var postgresConnections: PostgresConnectionRepository {
        PostgresConnectionRepository(
            tenantID: tenantID, session: session, sealing: rowSealing("connections"), written: writtenConnections,
            made: madeRecipients)
    }

    var mailbox: any MailboxRepository {
        PostgresMailboxRepository(tenantID: tenantID, session: session, sealing: rowSealing("mailbox"))
    }

    var outbox: any OutboxRepository {
        PostgresOutboxRepository(
            tenantID: tenantID, session: session, sealing: rowSealing("outbox"), lease: outboxLease, enqueued: enqueued)
    }

    var sql: any TenantSQL { SessionSQL(session: session) }

    /// Every sealed table: the core's here, plugins' through their `PluginStorage.sealClearRows`.
    func sealClearRows(limit: Int) throws -> Int {
        try PostgresSettingsRepository(tenantID: tenantID, session: session, sealing: rowSealing("tenant_settings"))
            .sealClearRows(limit: limit)
            + postgresConnections.sealClearRows(limit: limit)
            + PostgresMailboxRepository(tenantID: tenantID, session: session, sealing: rowSealing("mailbox"))
            .sealClearRows(limit: limit)
            + PostgresOutboxRepository(tenantID: tenantID, session: session, sealing: rowSealing("outbox"))
            .sealClearRows(limit: limit)
            + stores.sealClearRows(in: self, limit: limit)
            + sealClearLabel()
    }

    /// Seals the tenant's label if a previous release stored it in clear (schema/0044); answers
    /// 1 if it did.
    private func sealClearLabel() throws -> Int {
        let result = try session.query(
            "SELECT label FROM aerie.tenants WHERE id = $1::uuid AND label IS NOT NULL FOR UPDATE SKIP LOCKED", [.text(tenantID.rawValue)])
        guard let label = result.string(0, 0) else { return 0 }
        guard let sealer else {
            throw AerieError.internalError(details: "sealing tenant \(tenantID)'s label needs its data key")
        }
        try session.execute(
            "UPDATE aerie.tenants SET label = NULL, label_sealed = $2 WHERE id = $1::uuid",
            [.text(tenantID.rawValue), .bytes(StoredTenantLabel.seal(label, tenant: tenantID, sealer: sealer))])
        return 1
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

/// The connections one transaction wrote (every run of its body: a body run again on a fresh
/// connection only adds ids), for `ConnectionViewCache` invalidation when the transaction ends.
final class WrittenConnections: Sendable {
    private let ids = Mutex<Set<UUID>>([])

    func insert(_ id: UUID) {
        _ = ids.withLock { $0.insert(id) }
    }

    /// The ids written, nil when none.
    func take() -> Set<UUID>? {
        ids.withLock { ids in
            defer { ids = [] }
            return ids.isEmpty ? nil : ids
        }
    }
}
