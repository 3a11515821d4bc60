import AerieRPC
import AerieStore
import AerieTransport
import Foundation
import Logging

/// Everything `aerie-server` is configured with, read from the environment in one place.
public struct AerieConfiguration: Sendable {
    /// `AERIE_HOME`: state directory (embedded cluster, master key, admin token). Default `./.aerie`.
    public var home: URL
    /// `AERIE_DATABASE_URL`: runtime-role conninfo; nil means the embedded cluster.
    public var databaseURL: String?
    /// `AERIE_OWNER_DATABASE_URL`: owner-role conninfo for migrations (defaults to the runtime URL).
    public var ownerDatabaseURL: String?
    /// `AERIE_DB_POOL_SIZE`: runtime connections (and blocking I/O threads). Default 8.
    public var databasePoolSize: Int
    /// `AERIE_DB_POOL_TENANT_SHARE`: connections one tenant holds before others' waiting calls
    /// go first (default half the pool).
    public var databaseTenantShare: Int?
    /// `AERIE_MAILBOX_MAX_MESSAGES` (100000), `AERIE_MAILBOX_MAX_BYTES` (1 GiB),
    /// `AERIE_OUTBOX_MAX_PENDING` (10000): per-tenant limits the database enforces; 0 = none.
    /// Over a mailbox limit an inbound message is refused with 503 (the peer retries later),
    /// over the outbox limit a call that would send answers `quota_exceeded`; nothing is stored.
    public var quotas = DatabaseConfiguration.Quotas()
    /// `AERIE_SCHEMA_DIR`: migrations folder; default `./schema`, then the source checkout's.
    public var schemaDirectory: URL?
    public var rpc: RPCServerConfiguration
    /// `AERIE_PLUGINS`: comma-separated plugin names; nil means all available.
    public var plugins: [String]?
    /// `AERIE_MASTER_KEY`: base64 of 32 bytes; nil means `<home>/master-key` (created 0600).
    public var masterKeyBase64: String?
    /// `AERIE_LOG_LEVEL`: trace, debug, info, notice, warning, error, critical. Default info.
    public var logLevel: Logger.Level
    /// `AERIE_LOG_FORMAT`: `text` (default) or `json`, one JSON object per line.
    public var logFormat: LogFormat
    /// `AERIE_METRICS_LISTEN`: the operator endpoint's `HOST:PORT` (/metrics, /healthz, /readyz),
    /// `off` for none. The environment's default is `defaultMetricsListen`; a configuration made
    /// in code (tests, embedders) has none unless it asks.
    public var metricsListen: ListenAddress?
    public static let defaultMetricsListen = ListenAddress(host: "127.0.0.1", port: 7402)
    /// `AERIE_ALLOW_PRIVATE_URLS=1`: let invitation URLs reach loopback/private addresses (tests only).
    public var allowPrivateURLs: Bool
    /// `AERIE_ALLOWED_NETWORKS`: non-public networks (CIDR, comma-separated) that invitation
    /// URLs and peer endpoints may use all the same: private peers of a closed deployment,
    /// without `AERIE_ALLOW_PRIVATE_URLS` opening every private address. Default none.
    public var allowedNetworks: [IPNetwork] = []
    /// `AERIE_DIDCOMM_LISTEN`: inbound DIDComm HTTP `HOST:PORT`. Default 127.0.0.1:7401.
    public var didcommHost: String
    public var didcommPort: Int
    /// `AERIE_PUBLIC_ENDPOINT`: the endpoint peers are told; default `http://<didcomm listen>`.
    public var publicEndpoint: String?
    /// `AERIE_DIDCOMM_*`: what one peer may take of the inbound endpoint (body size, connections,
    /// deadlines, keep-alive); the defaults are `HTTPListener.Limits`'.
    public var didcommLimits: HTTPListener.Limits
    /// `AERIE_DIDCOMM_MAX_BODY_BYTES`: largest inbound message (1 MiB).
    public var didcommMaxBodyBytes: Int {
        get { didcommLimits.maxBodyBytes }
        set { didcommLimits.maxBodyBytes = newValue }
    }
    /// Outbound delivery: attempts before a message (and a connection still being set up) fails.
    public var deliveryMaxAttempts: Int
    /// Outbound delivery: first retry delay, doubled each attempt (capped at 5 minutes).
    public var deliveryBackoff: Duration
    /// Outbound delivery: how often the outbox is polled besides the in-process wake-up.
    public var deliveryPollInterval: Duration
    /// `AERIE_DELIVERY_LEASE_SECONDS`: how long a server owns an outbox row it is sending; the
    /// rows of a server that died are sent by another once their lease ends (120). Keep it above
    /// the longest send (15 s).
    public var deliveryLeaseSeconds: Int = 120
    /// `AERIE_DELIVERY_CONCURRENCY`: deliveries running at once in this process (each holds a
    /// blocking transfer thread while it waits for the peer) (32).
    public var deliveryConcurrency: Int = 32
    /// `AERIE_DELIVERY_PER_DESTINATION`: deliveries running at once to one destination
    /// (`scheme://host:port`), so a slow or tarpitting peer holds at most this many of the
    /// process's slots and delays only its own rows (4).
    public var deliveryPerDestination: Int = 4
    /// Whether this process delivers the outbox (tests turn it off to hold messages back).
    public var deliveryEnabled: Bool
    /// `AERIE_MESSAGE_RETENTION_DAYS`: reviewed (`MS-106`) mailbox messages older than this many
    /// days are purged; nil keeps them forever.
    public var messageRetentionDays: Int?
    /// How often the retention sweep runs (hourly).
    public var retentionSweepInterval: Duration
    /// `AERIE_EVENT_RETENTION_SECONDS`: events of the durable log older than this are pruned,
    /// acknowledged or not (7 days); a backend's acknowledged events go at the next sweep.
    public var eventRetention: Duration = .seconds(7 * 86_400)
    /// How often the event log is pruned (every minute).
    public var eventPruneInterval: Duration = .seconds(60)
    /// `AERIE_WEBHOOK_ALLOW_HTTP=1`: backend webhooks may be http:// URLs too (development and
    /// tests; the default accepts https:// only).
    public var webhookAllowHTTP = false
    /// `AERIE_WEBHOOK_BATCH_SIZE`: events per webhook POST at most (100).
    public var webhookBatchSize = 100
    /// `AERIE_WEBHOOK_BACKOFF_MS`: first webhook retry delay, doubled per failed attempt (2 s)
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
    /// a call says otherwise (15 s).
    public var outOfBandTimeout: Duration
    /// `AERIE_CREDENTIAL_CACHE_SIZE`: tenant session credentials held in memory (tenant + token
    /// hash -> wrapped data key), invalidated by NOTIFY; 0 checks every call against the database.
    public var credentialCacheSize: Int
    /// `AERIE_CREDENTIAL_CACHE_TTL`: the longest a cached credential is used without a database
    /// read (a bound for the case no NOTIFY could cover, e.g. a silently partitioned listener).
    public var credentialCacheMaxAge: Duration

    public init(
        home: URL = URL(fileURLWithPath: ".aerie"),
        databaseURL: String? = nil,
        ownerDatabaseURL: String? = nil,
        databasePoolSize: Int = 8,
        schemaDirectory: URL? = nil,
        rpc: RPCServerConfiguration = RPCServerConfiguration(),
        plugins: [String]? = nil,
        masterKeyBase64: String? = nil,
        logLevel: Logger.Level = .info,
        logFormat: LogFormat = .text,
        metricsListen: ListenAddress? = nil,
        allowPrivateURLs: Bool = false,
        didcommHost: String = "127.0.0.1",
        didcommPort: Int = 7401,
        publicEndpoint: String? = nil,
        didcommLimits: HTTPListener.Limits = HTTPListener.Limits(),
        deliveryMaxAttempts: Int = 6,
        deliveryBackoff: Duration = .seconds(2),
        deliveryPollInterval: Duration = .seconds(1),
        deliveryEnabled: Bool = true,
        messageRetentionDays: Int? = nil,
        retentionSweepInterval: Duration = .seconds(3600),
        outOfBandTimeout: Duration = .seconds(15),
        credentialCacheSize: Int = 10_000,
        credentialCacheMaxAge: Duration = .seconds(60)
    ) {
        self.home = home
        self.databaseURL = databaseURL
        self.ownerDatabaseURL = ownerDatabaseURL
        self.databasePoolSize = databasePoolSize
        self.schemaDirectory = schemaDirectory
        self.rpc = rpc
        self.plugins = plugins
        self.masterKeyBase64 = masterKeyBase64
        self.logLevel = logLevel
        self.logFormat = logFormat
        self.metricsListen = metricsListen
        self.allowPrivateURLs = allowPrivateURLs
        self.didcommHost = didcommHost
        self.didcommPort = didcommPort
        self.publicEndpoint = publicEndpoint
        self.didcommLimits = didcommLimits
        self.deliveryMaxAttempts = deliveryMaxAttempts
        self.deliveryBackoff = deliveryBackoff
        self.deliveryPollInterval = deliveryPollInterval
        self.deliveryEnabled = deliveryEnabled
        self.messageRetentionDays = messageRetentionDays
        self.retentionSweepInterval = retentionSweepInterval
        self.outOfBandTimeout = outOfBandTimeout
        self.credentialCacheSize = credentialCacheSize
        self.credentialCacheMaxAge = credentialCacheMaxAge
    }

    public struct Invalid: Error, CustomStringConvertible {
        public let description: String
    }

    /// Reads `AERIE_*` variables; throws with a message naming the variable at fault.
    public static func fromEnvironment(_ env: [String: String] = ProcessInfo.processInfo.environment) throws -> AerieConfiguration {
        var config = AerieConfiguration()
        func nonEmpty(_ key: String) -> String? {
            guard let value = env[key]?.trimmingCharacters(in: .whitespaces), !value.isEmpty else { return nil }
            return value
        }
        func integer(_ key: String, _ range: ClosedRange<Int>) throws -> Int? {
            guard let raw = nonEmpty(key) else { return nil }
            guard let value = Int(raw), range.contains(value) else {
                throw Invalid(description: "\(key) must be an integer in \(range.lowerBound)...\(range.upperBound), got '\(raw)'")
            }
            return value
        }
        if let home = nonEmpty("AERIE_HOME") { config.home = URL(fileURLWithPath: home) }
        config.databaseURL = nonEmpty("AERIE_DATABASE_URL")
        config.ownerDatabaseURL = nonEmpty("AERIE_OWNER_DATABASE_URL")
        if config.ownerDatabaseURL != nil, config.databaseURL == nil {
            throw Invalid(description: "AERIE_OWNER_DATABASE_URL is set but AERIE_DATABASE_URL is not")
        }
        if let size = try integer("AERIE_DB_POOL_SIZE", 1...256) { config.databasePoolSize = size }
        config.databaseTenantShare = try integer("AERIE_DB_POOL_TENANT_SHARE", 1...256)
        if let v = try integer("AERIE_MAILBOX_MAX_MESSAGES", 0...1_000_000_000) { config.quotas.mailboxMessages = v }
        if let v = try integer("AERIE_MAILBOX_MAX_BYTES", 0...(1 << 50)) { config.quotas.mailboxBytes = v }
        if let v = try integer("AERIE_OUTBOX_MAX_PENDING", 0...1_000_000_000) { config.quotas.outboxPending = v }
        if let dir = nonEmpty("AERIE_SCHEMA_DIR") { config.schemaDirectory = URL(fileURLWithPath: dir) }
        if let listen = nonEmpty("AERIE_RPC_LISTEN") {
            (config.rpc.host, config.rpc.port) = try parseListen(listen, variable: "AERIE_RPC_LISTEN")
        }
        if let v = try integer("AERIE_RPC_MAX_SESSIONS", 1...1_000_000) { config.rpc.maxSessions = v }
        if let v = try integer("AERIE_RPC_MAX_IN_FLIGHT", 1...10_000) { config.rpc.maxInFlightPerSession = v }
        if let v = try integer("AERIE_RPC_IDLE_TIMEOUT", 1...86_400) { config.rpc.idleTimeoutSeconds = v }
        if let v = try integer("AERIE_RPC_MAX_LINE_BYTES", 1024...(64 << 20)) { config.rpc.maxLineBytes = v }
        if let v = try integer("AERIE_RPC_MAX_BATCH", 1...10_000) { config.rpc.maxBatchEntries = v }
        if let v = try integer("AERIE_RPC_NOTIFICATION_QUEUE", 1...1_000_000) { config.rpc.notificationQueueLimit = v }
        if let v = try integer("AERIE_RPC_AUTH_TIMEOUT", 1...3600) { config.rpc.authTimeoutSeconds = v }
        if let v = try integer("AERIE_RPC_MAX_UNAUTHENTICATED", 1...1_000_000) { config.rpc.maxUnauthenticatedSessions = v }
        if let plugins = nonEmpty("AERIE_PLUGINS") {
            config.plugins = plugins.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }
        }
        config.masterKeyBase64 = nonEmpty("AERIE_MASTER_KEY")
        config.instance = nonEmpty("AERIE_INSTANCE").map { String($0.prefix(200)) }
        if let level = nonEmpty("AERIE_LOG_LEVEL") {
            guard let parsed = Logger.Level(rawValue: level.lowercased()) else {
                throw Invalid(description: "AERIE_LOG_LEVEL must be one of trace, debug, info, notice, warning, error, critical")
            }
            config.logLevel = parsed
        }
        switch nonEmpty("AERIE_LOG_FORMAT")?.lowercased() {
        case nil, "text": config.logFormat = .text
        case "json": config.logFormat = .json
        case let other?: throw Invalid(description: "AERIE_LOG_FORMAT must be text or json, got '\(other)'")
        }
        switch nonEmpty("AERIE_METRICS_LISTEN") {
        case nil: config.metricsListen = defaultMetricsListen
        case "off": config.metricsListen = nil
        case let listen?:
            let (host, port) = try parseListen(listen, variable: "AERIE_METRICS_LISTEN")
            config.metricsListen = ListenAddress(host: host, port: port)
        }
        switch nonEmpty("AERIE_ALLOW_PRIVATE_URLS") {
        case nil, "0": config.allowPrivateURLs = false
        case "1": config.allowPrivateURLs = true
        case let other?: throw Invalid(description: "AERIE_ALLOW_PRIVATE_URLS must be 0 or 1, got '\(other)'")
        }
        if let networks = nonEmpty("AERIE_ALLOWED_NETWORKS") {
            do {
                config.allowedNetworks = try IPNetwork.parseList(networks)
            } catch {
                throw Invalid(description: "AERIE_ALLOWED_NETWORKS: \(error)")
            }
        }
        if let listen = nonEmpty("AERIE_DIDCOMM_LISTEN") {
            (config.didcommHost, config.didcommPort) = try parseListen(listen, variable: "AERIE_DIDCOMM_LISTEN")
        }
        if let endpoint = nonEmpty("AERIE_PUBLIC_ENDPOINT") {
            guard endpoint.hasPrefix("http://") || endpoint.hasPrefix("https://") else {
                throw Invalid(description: "AERIE_PUBLIC_ENDPOINT must be an http(s) URL, got '\(endpoint)'")
            }
            config.publicEndpoint = endpoint
        }
        if let v = try integer("AERIE_DIDCOMM_MAX_BODY_BYTES", 1024...(64 << 20)) { config.didcommLimits.maxBodyBytes = v }
        if let v = try integer("AERIE_DIDCOMM_MAX_CONNECTIONS", 1...1_000_000) { config.didcommLimits.maxConnections = v }
        if let v = try integer("AERIE_DIDCOMM_HEADER_TIMEOUT", 1...3600) { config.didcommLimits.headerTimeout = .seconds(v) }
        if let v = try integer("AERIE_DIDCOMM_BODY_TIMEOUT", 1...3600) { config.didcommLimits.bodyTimeout = .seconds(v) }
        if let v = try integer("AERIE_DIDCOMM_REQUEST_TIMEOUT", 1...3600) { config.didcommLimits.requestTimeout = .seconds(v) }
        if let v = try integer("AERIE_DIDCOMM_MAX_REQUESTS_PER_CONNECTION", 1...1_000_000) {
            config.didcommLimits.maxRequestsPerConnection = v
        }
        if let v = try integer("AERIE_DIDCOMM_KEEPALIVE_TIMEOUT", 1...3600) { config.didcommLimits.keepAliveTimeout = .seconds(v) }
        if let v = try integer("AERIE_DELIVERY_MAX_ATTEMPTS", 1...100) { config.deliveryMaxAttempts = v }
        if let v = try integer("AERIE_DELIVERY_LEASE_SECONDS", 2...3600) { config.deliveryLeaseSeconds = v }
        if let v = try integer("AERIE_DELIVERY_CONCURRENCY", 1...1024) { config.deliveryConcurrency = v }
        if let v = try integer("AERIE_DELIVERY_PER_DESTINATION", 1...1024) { config.deliveryPerDestination = v }
        config.messageRetentionDays = try integer("AERIE_MESSAGE_RETENTION_DAYS", 1...36500)
        if let v = try integer("AERIE_EVENT_RETENTION_SECONDS", 1...(3650 * 86_400)) { config.eventRetention = .seconds(v) }
        switch nonEmpty("AERIE_WEBHOOK_ALLOW_HTTP") {
        case nil, "0": config.webhookAllowHTTP = false
        case "1": config.webhookAllowHTTP = true
        case let other?: throw Invalid(description: "AERIE_WEBHOOK_ALLOW_HTTP must be 0 or 1, got '\(other)'")
        }
        if let v = try integer("AERIE_WEBHOOK_BATCH_SIZE", 1...1000) { config.webhookBatchSize = v }
        if let v = try integer("AERIE_WEBHOOK_BACKOFF_MS", 10...3_600_000) { config.webhookBackoff = .milliseconds(v) }
        if let v = try integer("AERIE_OOB_TIMEOUT", 1...120) { config.outOfBandTimeout = .seconds(v) }
        if let v = try integer("AERIE_SEALING_SWEEP_SECONDS", 0...86_400) { config.sealingSweepInterval = v == 0 ? nil : .seconds(v) }
        if let v = try integer("AERIE_CREDENTIAL_CACHE_SIZE", 0...10_000_000) { config.credentialCacheSize = v }
        if let v = try integer("AERIE_CREDENTIAL_CACHE_TTL", 1...86_400) { config.credentialCacheMaxAge = .seconds(v) }
        return config
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

    /// The help text of `aerie-server --help`: every variable, its default and meaning.
    public static let environmentHelp = """
        Environment (all optional):
          AERIE_HOME                   state directory: embedded cluster, master key, admin token (./.aerie)
          AERIE_DATABASE_URL           runtime-role libpq conninfo/URL; unset = embedded PostgreSQL under AERIE_HOME/pg
          AERIE_OWNER_DATABASE_URL     owner-role conninfo used for migrations (default: AERIE_DATABASE_URL)
          AERIE_DB_POOL_SIZE           database connections and blocking I/O threads (8)
          AERIE_DB_POOL_TENANT_SHARE   connections one tenant holds before other tenants' waiting calls go first (half the pool)
          AERIE_MAILBOX_MAX_MESSAGES   messages one tenant's mailbox holds; more inbound answers 503 (100000; 0 = no limit)
          AERIE_MAILBOX_MAX_BYTES      bytes one tenant's mailbox holds, as stored (1073741824; 0 = no limit)
          AERIE_OUTBOX_MAX_PENDING     a tenant's messages waiting to be sent; calls that would send more answer quota_exceeded (10000; 0 = no limit)
          AERIE_SCHEMA_DIR             migrations folder (./schema, then the source checkout's)
          AERIE_RPC_LISTEN             JSON-RPC HOST:PORT (127.0.0.1:7400)
          AERIE_RPC_MAX_SESSIONS       concurrent sessions; more are answered busy and closed (1024)
          AERIE_RPC_MAX_IN_FLIGHT      running requests per session before reading pauses (64)
          AERIE_RPC_IDLE_TIMEOUT       seconds without a request before a session is closed (300)
          AERIE_RPC_MAX_LINE_BYTES     longest request line; longer answers -32600 and closes (1048576)
          AERIE_RPC_MAX_BATCH          entries per batch (100)
          AERIE_RPC_NOTIFICATION_QUEUE pending notifications per session (1000)
          AERIE_RPC_AUTH_TIMEOUT       seconds a new session has to call session.authenticate before it is closed (10)
          AERIE_RPC_MAX_UNAUTHENTICATED sessions not yet authenticated, a cap apart from AERIE_RPC_MAX_SESSIONS (1024)
          AERIE_PLUGINS                comma-separated protocol plugins to load (all)
          AERIE_MASTER_KEY             base64 32-byte master key; unset = AERIE_HOME/master-key (created 0600)
          AERIE_LOG_LEVEL              trace|debug|info|notice|warning|error|critical (info)
          AERIE_LOG_FORMAT             text|json: json writes one object per line, with a request id per call and inbound message (text)
          AERIE_METRICS_LISTEN         operator HTTP HOST:PORT for /metrics (Prometheus), /healthz, /readyz; off = none (127.0.0.1:7402)
          AERIE_ALLOW_PRIVATE_URLS     1 lets invitation URLs and peer endpoints be loopback/private addresses; tests only (0)
          AERIE_ALLOWED_NETWORKS       non-public networks peers may use all the same, CIDR, comma-separated (none)
          AERIE_DIDCOMM_LISTEN         inbound DIDComm HTTP HOST:PORT (127.0.0.1:7401)
          AERIE_PUBLIC_ENDPOINT        the endpoint peers are told (http://<AERIE_DIDCOMM_LISTEN>)
          AERIE_DIDCOMM_MAX_BODY_BYTES largest inbound DIDComm message; larger answers 413 (1048576)
          AERIE_DIDCOMM_MAX_CONNECTIONS open inbound connections; more are closed at once (1024)
          AERIE_DIDCOMM_HEADER_TIMEOUT seconds a new connection has to send its request head (10)
          AERIE_DIDCOMM_BODY_TIMEOUT   seconds from a request head to the end of its body (30)
          AERIE_DIDCOMM_REQUEST_TIMEOUT seconds from a request head to its answer; later answers 503 (60)
          AERIE_DIDCOMM_MAX_REQUESTS_PER_CONNECTION requests on one kept-alive connection (100)
          AERIE_DIDCOMM_KEEPALIVE_TIMEOUT seconds a kept-alive connection may idle before its next request (5)
          AERIE_DELIVERY_MAX_ATTEMPTS  delivery attempts before a message fails (6)
          AERIE_DELIVERY_LEASE_SECONDS seconds a server owns an outbox row it sends; a dead server's rows go to another after it; keep above 15 (120)
          AERIE_DELIVERY_CONCURRENCY   deliveries running at once in this process (32)
          AERIE_DELIVERY_PER_DESTINATION deliveries running at once to one scheme://host:port, so a slow peer delays only its own rows (4)
          AERIE_MESSAGE_RETENTION_DAYS reviewed (MS-106) mailbox messages older than this are purged, hourly (unlimited)
          AERIE_EVENT_RETENTION_SECONDS events of the durable log older than this are pruned, acked or not; acked ones go sooner (604800)
          AERIE_OOB_TIMEOUT            seconds outOfBand.accept/sendReuse wait for the inviter, 1...120 (15)
          AERIE_SEALING_SWEEP_SECONDS  seconds between sweeps sealing rows of the pre-0018 clear form (at start too); 0 = off (60)
          AERIE_INSTANCE               this server's name in outbox leases; unique per server of one database, kept across restarts (host:AERIE_HOME:DIDComm address)
          AERIE_CREDENTIAL_CACHE_SIZE  session credentials cached in memory, dropped by NOTIFY on rotate/suspend/delete; 0 = off (10000)
          AERIE_CREDENTIAL_CACHE_TTL   seconds a cached credential is used before it is read again (60)
        """
}
