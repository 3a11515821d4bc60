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

    public init(
        conninfo: String, maxConnections: Int = 10, acquireTimeout: Duration = .seconds(10),
        maxWaiters: Int = 10_000
    ) {
        self.conninfo = conninfo
        self.maxConnections = max(1, maxConnections)
        self.acquireTimeout = acquireTimeout
        self.maxWaiters = max(0, maxWaiters)
    }
}
