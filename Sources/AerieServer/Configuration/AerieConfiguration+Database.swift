import AerieStore
import Foundation

extension AerieConfiguration {
    /// Where the database is and how the pool uses it.
    public struct Database: Sendable {
        /// `AERIE_DATABASE_URL`: runtime-role conninfo; nil means the embedded cluster of `AERIE_HOME`.
        public var url: String?
        /// `AERIE_OWNER_DATABASE_URL`: owner-role conninfo for migrations (defaults to the runtime URL).
        public var ownerURL: String?
        /// `AERIE_SCHEMA_DIR`: migrations folder; default `./schema`, then the source checkout's.
        public var schemaDirectory: URL?
        /// `AERIE_DB_POOL_SIZE`: runtime connections (and blocking I/O threads).
        public var poolSize = 8
        /// `AERIE_DB_POOL_TENANT_SHARE`: connections one tenant holds before others' waiting calls
        /// go first (default half the pool).
        public var tenantShare: Int?
        /// `AERIE_MAILBOX_MAX_MESSAGES`, `AERIE_MAILBOX_MAX_BYTES`,
        /// `AERIE_OUTBOX_MAX_PENDING`: per-tenant limits the database enforces; 0 = none.
        /// Over a mailbox limit an inbound message is refused with 503 (the peer retries later),
        /// over the outbox limit a call that would send answers `quota_exceeded`; nothing is stored.
        public var quotas = DatabaseConfiguration.Quotas()

        public init(url: String? = nil, ownerURL: String? = nil) {
            self.url = url
            self.ownerURL = ownerURL
        }

        /// The pool's configuration on `conninfo` (the configured URL or the embedded cluster's),
        /// with the store caches of `caches`.
        func pool(conninfo: String, caches: Caches) -> DatabaseConfiguration {
            var pool = DatabaseConfiguration(conninfo: conninfo, maxConnections: poolSize, tenantShare: tenantShare)
            pool.quotas = quotas
            pool.connectionViewCacheSize = caches.connectionsSize
            pool.connectionViewCacheMaxAge = caches.connectionsMaxAge
            pool.recentRecipientsSize = caches.recentRecipientsSize
            pool.recentRecipientsMaxAge = caches.recentRecipientsMaxAge
            return pool
        }
    }

    /// What is held in memory to spare database reads; each is kept true by NOTIFY (and by this
    /// server's own writes) and bounded in size and age.
    public struct Caches: Sendable {
        /// `AERIE_CREDENTIAL_CACHE_SIZE`: tenant session credentials (tenant + token hash ->
        /// wrapped data key); 0 checks every call against the database.
        public var credentialsSize = 10_000
        /// `AERIE_CREDENTIAL_CACHE_TTL`: the longest a cached credential is used without a database
        /// read (a bound for the case no NOTIFY could cover, e.g. a silently partitioned listener).
        public var credentialsMaxAge: Duration = .seconds(60)
        /// `AERIE_CONNECTION_CACHE_SIZE`: `connections.get` answers (tenant + connection id ->
        /// view); 0 reads every call from the database.
        public var connectionsSize = 10_000
        /// `AERIE_CONNECTION_CACHE_TTL`: the longest a cached connection view is answered without
        /// a database read.
        public var connectionsMaxAge: Duration = .seconds(60)
        /// `AERIE_RECENT_RECIPIENTS`: inbound recipients kept in memory (`RecentRecipients`):
        /// pairwise keys this server made with their connections, so the peer's answer to one (a
        /// Response) is opened without the inbound lookup's database read, and established
        /// connections' keys as read, for the peer's plain messages; 0 looks every inbound message
        /// up.
        public var recentRecipientsSize = 4096
        /// The longest such a key is kept (a Response usually comes within a second; a remembered
        /// connection is read again after it).
        public var recentRecipientsMaxAge: Duration = .seconds(60)

        public init() {}
    }
}
