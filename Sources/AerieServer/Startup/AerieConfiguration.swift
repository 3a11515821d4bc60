import AerieCore
import AerieRPC
import AerieStore
import AerieTransport
import Foundation
import Logging

/// Everything `aerie-server` is configured with. Each default is written once, on its property
/// (or in `RPCServerConfiguration`, `HTTPListener.Limits`, `DatabaseConfiguration.Quotas`);
/// `AerieConfiguration+Environment` reads the `AERIE_*` variables and builds `--help` from them.
public struct AerieConfiguration: Sendable {
    /// `AERIE_HOME`: state directory (embedded cluster, master key, admin token).
    public var home: URL
    /// `AERIE_DATABASE_URL`: runtime-role conninfo; nil means the embedded cluster.
    public var databaseURL: String?
    /// `AERIE_OWNER_DATABASE_URL`: owner-role conninfo for migrations (defaults to the runtime URL).
    public var ownerDatabaseURL: String?
    /// `AERIE_DB_POOL_SIZE`: runtime connections (and blocking I/O threads).
    public var databasePoolSize = 8
    /// `AERIE_DB_POOL_TENANT_SHARE`: connections one tenant holds before others' waiting calls
    /// go first (default half the pool).
    public var databaseTenantShare: Int?
    /// `AERIE_MAILBOX_MAX_MESSAGES`, `AERIE_MAILBOX_MAX_BYTES`,
    /// `AERIE_OUTBOX_MAX_PENDING`: per-tenant limits the database enforces; 0 = none.
    /// Over a mailbox limit an inbound message is refused with 503 (the peer retries later),
    /// over the outbox limit a call that would send answers `quota_exceeded`; nothing is stored.
    public var quotas = DatabaseConfiguration.Quotas()
    /// `AERIE_INVITATION_REQUESTS_PER_MINUTE`, `AERIE_SENDER_REQUESTS_PER_MINUTE`: how fast
    /// strangers' Requests are taken per invitation and per sender key, in this process; more
    /// are answered 429 and nothing is stored (`RequestRateLimits`).
    public var invitationRequestsPerMinute = 60
    public var senderRequestsPerMinute = 10
    /// `AERIE_PENDING_CONNECTIONS_MAX`: connections of one tenant waiting for their peer's first
    /// answer (`responded`, made in the last hour); a Request past it is answered 429 and nothing
    /// is stored, so strangers hold at most this many of the tenant's mailbox and outbox rows.
    public var pendingConnectionsMax = 100
    /// `AERIE_OPEN_EXCHANGES_PER_CONNECTION`, `AERIE_OPEN_EXCHANGES_PER_TENANT`: issue-credential
    /// offers and present-proof requests open at once (not done or abandoned), per protocol; a
    /// peer's next one is answered with a problem report and nothing of it is stored.
    public var openExchanges = OpenExchangeLimits.default
    /// `AERIE_MOVED_TENANT_GRACE_SECONDS`: how long after a move the old server answers the moved
    /// tenant's keys 503 (retry later) instead of 400 (unknown): a week.
    public var movedTenantGraceSeconds = 7 * 24 * 3600
    /// `AERIE_TENANT_SELF_EXPORT`: a tenant's own session may export a sealed archive of itself
    /// (`tenant.export`). Off: only the operator and the tenant's backend export.
    public var tenantSelfExport = false
    /// `AERIE_SCHEMA_DIR`: migrations folder; default `./schema`, then the source checkout's.
    public var schemaDirectory: URL?
    public var rpc = RPCServerConfiguration()
    /// `AERIE_PLUGINS`: comma-separated plugin names; nil means all available.
    public var plugins: [String]?
    /// `AERIE_MASTER_KEY`: base64 of 32 bytes; nil means `<home>/master-key` (created 0600).
    public var masterKeyBase64: String?
    /// `AERIE_LOG_LEVEL`: trace, debug, info, notice, warning, error, critical.
    public var logLevel: Logger.Level = .info
    /// `AERIE_LOG_FORMAT`: `text` (default) or `json`, one JSON object per line.
    public var logFormat: LogFormat = .text
    /// `AERIE_METRICS_LISTEN`: the operator endpoint's `HOST:PORT` (/metrics, /healthz, /readyz),
    /// `off` for none. The environment's default is `defaultMetricsListen`; a configuration made
    /// in code (tests, embedders) has none unless it asks.
    public var metricsListen: ListenAddress?
    public static let defaultMetricsListen = ListenAddress(host: "127.0.0.1", port: 7402)
    /// `AERIE_ALLOW_PRIVATE_URLS=1`: let invitation URLs reach loopback/private addresses (tests only).
    public var allowPrivateURLs = false
    /// `AERIE_ALLOWED_NETWORKS`: non-public networks (CIDR, comma-separated) that invitation
    /// URLs and peer endpoints may use all the same: private peers of a closed deployment,
    /// without `AERIE_ALLOW_PRIVATE_URLS` opening every private address.
    public var allowedNetworks: [IPNetwork] = []
    /// `AERIE_WEBHOOK_ALLOWED_NETWORKS`: non-public networks backend webhooks may be sent to.
    /// Apart from `allowedNetworks`, so that an internal receivers' network is never open to
    /// the endpoints strangers name.
    public var webhookAllowedNetworks: [IPNetwork] = []
    /// `AERIE_TLS_CA_FILE`: a PEM file of the certificate authorities outbound HTTPS (peers'
    /// endpoints, invitation URLs, webhooks) is verified against, instead of the system's.
    public var tlsCAFile: String?
    /// `AERIE_DIDCOMM_LISTEN`: inbound DIDComm HTTP `HOST:PORT`.
    public var didcommHost = "127.0.0.1"
    public var didcommPort = 7401
    /// `AERIE_PUBLIC_ENDPOINT`: the endpoint peers are told; default `http://<didcomm listen>`.
    public var publicEndpoint: String?
    /// `AERIE_DIDCOMM_*`: what one peer may take of the inbound endpoint (body size, connections,
    /// deadlines, keep-alive); the defaults are `HTTPListener.Limits`'.
    public var didcommLimits = HTTPListener.Limits()
    /// `AERIE_DIDCOMM_MAX_BODY_BYTES`: largest inbound message.
    public var didcommMaxBodyBytes: Int {
        get { didcommLimits.maxBodyBytes }
        set { didcommLimits.maxBodyBytes = newValue }
    }
    /// `AERIE_DELIVERY_HORIZON_SECONDS`: how long a peer's outage (no answer, 5xx, 408, 429) is
    /// retried before a message (and a connection still being set up) fails: 72 hours.
    public var deliveryHorizon: Duration = .seconds(72 * 3600)
    /// `AERIE_DELIVERY_PROTOCOL_HORIZON_SECONDS`: the same for what carries no message of the
    /// tenant's (handshake Requests and Responses, pings): an hour.
    public var deliveryProtocolHorizon: Duration = .seconds(3600)
    /// `AERIE_DELIVERY_BACKOFF_MS`: first retry delay, doubled each attempt up to `deliveryMaxBackoff`.
    public var deliveryBackoff: Duration = .seconds(2)
    /// `AERIE_DELIVERY_MAX_BACKOFF_SECONDS`: the longest wait between two tries (and the most a
    /// peer's `Retry-After` is honoured): an hour.
    public var deliveryMaxBackoff: Duration = .seconds(3600)
    /// Outbound delivery: how often the outbox is polled besides the in-process wake-up, while
    /// rows are known to wait (`OutboxPollSchedule`; else every 10 s).
    public var deliveryPollInterval: Duration = .seconds(1)
    /// `AERIE_DELIVERY_LEASE_SECONDS`: how long a server owns an outbox row it is sending; the
    /// rows of a server that died are sent by another once their lease ends. Keep it above
    /// the longest send (15 s).
    public var deliveryLeaseSeconds: Int = 120
    /// `AERIE_DELIVERY_CONCURRENCY`: deliveries running at once in this process (each holds a
    /// blocking transfer thread while it waits for the peer).
    public var deliveryConcurrency: Int = 32
    /// `AERIE_DELIVERY_PER_DESTINATION`: deliveries running at once to one destination address
    /// (`DeliveryLimits`: all ports of one host), so a slow or tarpitting peer holds at most this
    /// many of the process's slots and delays only its own rows.
    public var deliveryPerDestination: Int = 4
    /// Whether this process delivers the outbox (tests turn it off to hold messages back).
    public var deliveryEnabled = true
    /// `AERIE_MESSAGE_RETENTION_DAYS`: reviewed (`MS-106`) mailbox messages older than this many
    /// days are purged; nil keeps them forever.
    public var messageRetentionDays: Int?
    /// How often the retention sweep runs (hourly).
    public var retentionSweepInterval: Duration = .seconds(3600)
    /// `AERIE_EVENT_RETENTION_SECONDS`: events of the durable log older than this are pruned,
    /// acknowledged or not; a backend's acknowledged events go at the next sweep.
    public var eventRetention: Duration = .seconds(7 * 86_400)
    /// How often the event log is pruned (every minute).
    public var eventPruneInterval: Duration = .seconds(60)
    /// `AERIE_WEBHOOK_ALLOW_HTTP=1`: backend webhooks may be http:// URLs too (development and
    /// tests; the default accepts https:// only).
    public var webhookAllowHTTP = false
    /// `AERIE_WEBHOOK_BATCH_SIZE`: events per webhook POST at most.
    public var webhookBatchSize = 100
    /// `AERIE_WEBHOOK_BACKOFF_MS`: first webhook retry delay, doubled per failed attempt
    /// up to `webhookMaxBackoff`.
    public var webhookBackoff: Duration = .seconds(2)
    /// The longest wait between two webhook attempts (10 minutes).
    public var webhookMaxBackoff: Duration = .seconds(600)
    /// A webhook POST's total timeout (10 s); its connect timeout is 5 s.
    public var webhookTimeout: Duration = .seconds(10)
    /// `AERIE_INSTANCE`: this server's name in outbox leases, unique among the servers of one
    /// database and the same across its restarts. Default: host name, state directory and
    /// DIDComm listen address.
    public var instance: String?
    public var instanceName: String {
        instance ?? "\(ProcessInfo.processInfo.hostName):\(home.standardizedFileURL.path):\(didcommHost):\(didcommPort)"
    }
    /// `AERIE_SEALING_SWEEP_SECONDS`: how often rows still in the previous release's clear form
    /// are looked for and sealed (`SealingMigrationService`, also once at start); nil (0) = off.
    public var sealingSweepInterval: Duration? = .seconds(60)
    /// How often inbound messages whose handling failed are looked for, to be tried again (each
    /// waits its own backoff: 5 s doubling, 5 attempts).
    public var inboundRecoveryInterval: Duration = .seconds(10)
    /// Handling attempts of one inbound message before its connection fails.
    public var inboundHandlingMaxAttempts = 5
    /// The wait before an inbound message whose handling failed is tried again; doubles per attempt.
    public var inboundHandlingBackoff: Duration = .seconds(5)
    /// `AERIE_OOB_TIMEOUT`: how long `outOfBand.accept` / `sendReuse` wait for the inviter unless
    /// a call says otherwise.
    public var outOfBandTimeout: Duration = .seconds(15)
    /// `AERIE_CREDENTIAL_CACHE_SIZE`: tenant session credentials held in memory (tenant + token
    /// hash -> wrapped data key), invalidated by NOTIFY; 0 checks every call against the database.
    public var credentialCacheSize = 10_000
    /// `AERIE_CREDENTIAL_CACHE_TTL`: the longest a cached credential is used without a database
    /// read (a bound for the case no NOTIFY could cover, e.g. a silently partitioned listener).
    public var credentialCacheMaxAge: Duration = .seconds(60)
    /// `AERIE_CONNECTION_CACHE_SIZE`: `connections.get` answers held in memory (tenant +
    /// connection id -> view), invalidated by NOTIFY and by this server's own writes; 0 reads
    /// every call from the database.
    public var connectionCacheSize = 10_000
    /// `AERIE_CONNECTION_CACHE_TTL`: the longest a cached connection view is answered without a
    /// database read.
    public var connectionCacheMaxAge: Duration = .seconds(60)
    /// `AERIE_RECENT_RECIPIENTS`: pairwise keys this server made with their connections, kept so
    /// the peer's answer to one (a Response) is opened without the inbound lookup's database read;
    /// dropped by NOTIFY and by this server's own writes; 0 looks every inbound message up.
    public var recentRecipientsSize = 4096
    /// The longest such a key is kept (a Response usually comes within a second).
    public var recentRecipientsMaxAge: Duration = .seconds(60)

    /// Every other setting starts at its default above (the one place defaults are written:
    /// `--help` reads them from here); set what differs on the value.
    public init(home: URL = URL(fileURLWithPath: ".aerie"), databaseURL: String? = nil, ownerDatabaseURL: String? = nil) {
        self.home = home
        self.databaseURL = databaseURL
        self.ownerDatabaseURL = ownerDatabaseURL
    }

    public struct Invalid: Error, CustomStringConvertible {
        public let description: String
    }

    public enum LogFormat: String, Sendable {
        case text, json
    }

    public struct ListenAddress: Sendable, Equatable, CustomStringConvertible {
        public var host: String
        public var port: Int

        public init(host: String, port: Int) {
            self.host = host
            self.port = port
        }

        public var description: String { host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)" }
    }

    /// Parses `HOST:PORT` (`[::1]:7400` for IPv6).
    public static func parseListen(_ value: String, variable: String) throws -> (String, Int) {
        guard let colon = value.lastIndex(of: ":"),
            let port = Int(value[value.index(after: colon)...]), (0...65535).contains(port)
        else {
            throw Invalid(description: "\(variable) must be HOST:PORT, got '\(value)'")
        }
        var host = String(value[..<colon])
        if host.hasPrefix("["), host.hasSuffix("]") { host = String(host.dropFirst().dropLast()) }
        guard !host.isEmpty else { throw Invalid(description: "\(variable) must be HOST:PORT, got '\(value)'") }
        return (host, port)
    }
}
