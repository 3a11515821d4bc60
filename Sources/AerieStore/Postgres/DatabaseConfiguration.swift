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
    /// Per-tenant limits the database enforces (schema/0020), set on every session this pool
    /// opens. None by default; the server sets its configured ones.
    public var quotas: Quotas = .unlimited
    /// `connections.get` answers held in memory (`ConnectionViewCache`); 0, the default here,
    /// holds none. The server sets its configured size.
    public var connectionViewCacheSize = 0
    /// The longest a cached connection view is answered without a database read.
    public var connectionViewCacheMaxAge: Duration = .seconds(60)
    /// Keys made with their connections, kept for the inbound lookup (`RecentRecipients`); 0,
    /// the default here, keeps none. The server sets its configured size.
    public var recentRecipientsSize = 0
    /// The longest such a key is answered without the inbound lookup's database read.
    public var recentRecipientsMaxAge: Duration = .seconds(60)

    /// Per-tenant limits: messages and stored bytes in a tenant's mailbox, messages waiting to
    /// be sent; 0 = none.
    public struct Quotas: Sendable, Hashable {
        public var mailboxMessages: Int
        public var mailboxBytes: Int
        public var outboxPending: Int

        public init(mailboxMessages: Int = 100_000, mailboxBytes: Int = 1 << 30, outboxPending: Int = 10_000) {
            self.mailboxMessages = mailboxMessages
            self.mailboxBytes = mailboxBytes
            self.outboxPending = outboxPending
        }

        public static let unlimited = Quotas(mailboxMessages: 0, mailboxBytes: 0, outboxPending: 0)

        /// The session settings schema/0020's triggers read.
        var sessionSettings: [(name: String, value: String)] {
            [
                ("aerie.mailbox_max_messages", "\(mailboxMessages)"), ("aerie.mailbox_max_bytes", "\(mailboxBytes)"),
                ("aerie.outbox_max_pending", "\(outboxPending)"),
            ]
        }
    }

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
