import Foundation

/// A tenant's view of the database. Every transaction it opens is scoped to that tenant by
/// PostgreSQL row-level security (`SET LOCAL aerie.tenant_id`), so a plugin cannot reach another
/// tenant's rows even by a wrong query.
///
/// The body runs on a dedicated blocking-I/O thread, never on the Swift concurrency pool, so
/// repositories are synchronous.
public protocol TenantDatabase: Sendable {
    var tenantID: TenantID { get }
    func transaction<T: Sendable>(_ body: @escaping @Sendable (any TenantTransaction) throws -> T) async throws -> T
    /// A transaction whose `body` may run twice even after it committed, because its writes
    /// check first that they were not done (`connections.accept`: `requireNoMatch` under the
    /// invitation's lock; a Response: its mailbox row and `lockAsRead`). When `body` only queues
    /// writes, they go as one round trip without `BEGIN` and `COMMIT`; a connection lost on the
    /// way runs `body` again on a fresh one.
    func rerunnableTransaction<T: Sendable>(_ body: @escaping @Sendable (any TenantTransaction) throws -> T) async throws -> T
    /// Reads only: each statement of `body` is a read-only transaction of its own, scoped to the
    /// tenant, in one round trip (a transaction costs one more, for `COMMIT`). For reads that need
    /// no consistency across statements, e.g. loading one row.
    func read<T: Sendable>(_ body: @escaping @Sendable (any TenantTransaction) throws -> T) async throws -> T
    /// This database with its stored values sealed under `keyring`'s data key (`ValueSealer`):
    /// every transaction unwraps the key once and derives the sealer. `TenantContext` applies it,
    /// so every handler's store seals. Without it, writing a sealed column is an error and only
    /// rows of the previous (clear) form can be read.
    func sealing(with keyring: any TenantKeyring) -> any TenantDatabase
    /// `connections.get`'s answer: the connection's view as JSON text (`ConnectionView.text`), nil
    /// when the tenant has no such connection. The server answers it from its
    /// `ConnectionViewCache` when it can (this server's own writes are seen at once, other
    /// servers' within their NOTIFY's latency).
    func connectionView(_ id: UUID) async throws -> JSONText?
}

extension TenantDatabase {
    public func rerunnableTransaction<T: Sendable>(
        _ body: @escaping @Sendable (any TenantTransaction) throws -> T
    ) async throws -> T {
        try await transaction(body)
    }

    public func read<T: Sendable>(_ body: @escaping @Sendable (any TenantTransaction) throws -> T) async throws -> T {
        try await transaction(body)
    }

    public func connectionView(_ id: UUID) async throws -> JSONText? {
        try await read { try $0.connections.get(id) }.map { ConnectionView($0).text }
    }
}

/// The repositories available inside one tenant transaction: the core's tables by name (they are
/// shared by several plugins and the server), any plugin's by type (`repository(_:)`), and the SQL
/// seam plugins write those against.
public protocol TenantTransaction {
    var tenantID: TenantID { get }
    var settings: any TenantSettingsRepository { get }
    /// Sealed private keys; use the key wallet (`tenant.keys`, AerieCrypto) instead.
    var keys: any TenantKeyRepository { get }
    var connections: any ConnectionRepository { get }
    var mailbox: any MailboxRepository { get }
    var outbox: any OutboxRepository { get }
    /// Statements on this transaction's connection, for plugins' repositories.
    var sql: any TenantSQL { get }
    /// What this transaction seals with (nil: a database built without the tenant's keyring).
    var sealer: (any ValueSealer)? { get }
    /// The plugins' repositories and upkeep hooks.
    var stores: PluginStores { get }
    /// The events this transaction's writes announce (a received message's) go out after its
    /// commit, in the commit's round trip, instead of with it: its commit then shares its flush
    /// to disk with other transactions'. Only while other work is in flight (alone, the events
    /// go with the commit, as the announcement would cost more than it saves). Call it before
    /// those writes; for a transaction whose events' order against other events of its own does
    /// not matter (one that stores a message and nothing else).
    func announceEventsAfterCommit() throws
    /// Rewrites up to `limit` rows per table still in the previous release's clear form sealed
    /// (the upgrade's background re-encryption), plugins' tables included; answers how many rows
    /// it rewrote (0: done).
    func sealClearRows(limit: Int) throws -> Int
}

extension TenantTransaction {
    /// The repository of type `R` a plugin provides (`PluginStorage.repositories`), over this
    /// transaction. Throws `unavailable` when that plugin is not enabled.
    public func repository<R>(_ type: R.Type) throws -> R {
        try stores.repository(type, in: self)
    }

    /// How rows of `aerie.<table>` are sealed in this transaction.
    public func rowSealing(_ table: String) -> RowSealing {
        RowSealing(tenantID: tenantID, sealer: sealer, table: table)
    }

    /// Every kind of data that goes with a deleted connection: the core's and every plugin's.
    public var connectionData: [ConnectionData] {
        ConnectionData.all(plugins: stores.connectionData)
    }
}

/// Free-form per-tenant settings: the first tenant-owned table, and the one the isolation tests
/// and the store-read benchmark use.
public protocol TenantSettingsRepository {
    func get(_ key: String) throws -> JSONValue?
    func set(_ key: String, to value: JSONValue) throws
    /// Returns whether a row was removed.
    func remove(_ key: String) throws -> Bool
    /// Keys in ascending order after `afterKey`, at most `limit`.
    func list(after afterKey: String?, limit: Int) throws -> [TenantSetting]
}

public struct TenantSetting: Sendable, Hashable, Codable {
    public var key: String
    public var value: JSONValue
    public init(key: String, value: JSONValue) {
        self.key = key
        self.value = value
    }
}
