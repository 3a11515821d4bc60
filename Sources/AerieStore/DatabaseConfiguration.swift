/// How the runtime connects to PostgreSQL. Filled from the environment (or `EmbeddedPostgres`)
/// by the server and passed down explicitly.
public struct DatabaseConfiguration: Sendable {
    /// libpq connection string of the runtime login role (`aerie_app`), `key=value` or URI.
    public var conninfo: String
    /// Upper bound on open connections; also the number of blocking I/O threads, since every
    /// leased connection is driven by exactly one thread.
    public var maxConnections: Int
    /// How long a caller waits for a free connection before getting `AerieError(.busy)`.
    public var acquireTimeout: Duration
    /// Callers allowed to queue for a connection; beyond that they get `.busy` at once rather
    /// than piling up behind a stalled database.
    public var maxWaiters: Int
    /// A tenant's share of the connections (`AERIE_DB_POOL_TENANT_SHARE`, default half the pool,
    /// at least 1): when callers wait, a freed connection goes first to the longest-waiting
    /// caller whose tenant holds fewer than this many, so one tenant's burst delays the others
    /// by at most one of its transactions. Free connections are never held back.
    public var tenantShare: Int

    public init(
        conninfo: String, maxConnections: Int = 10, acquireTimeout: Duration = .seconds(10),
        maxWaiters: Int = 10_000, tenantShare: Int? = nil
    ) {
        self.conninfo = conninfo
        self.maxConnections = max(1, maxConnections)
        self.acquireTimeout = acquireTimeout
        self.maxWaiters = max(0, maxWaiters)
        self.tenantShare = max(1, tenantShare ?? self.maxConnections / 2)
    }
}
