import AerieRPC
import AerieTransport
import Foundation
import Logging

extension AerieConfiguration {
    /// What a configuration read from an environment starts from: the properties' defaults, plus
    /// the operator endpoint, which only a server run from the environment opens by default.
    static var environmentDefaults: AerieConfiguration {
        var config = AerieConfiguration()
        config.operations.metricsListen = Operations.defaultMetricsListen
        return config
    }

    /// Reads `AERIE_*` variables; throws with a message naming the variable at fault.
    public static func fromEnvironment(_ env: [String: String] = ProcessInfo.processInfo.environment) throws -> AerieConfiguration {
        var config = environmentDefaults
        for variable in environmentVariables {
            guard let text = env[variable.name]?.trimmingCharacters(in: .whitespaces), !text.isEmpty else { continue }
            try variable.apply(text, &config)
        }
        if config.database.ownerURL != nil, config.database.url == nil {
            throw Invalid(description: "AERIE_OWNER_DATABASE_URL is set but AERIE_DATABASE_URL is not")
        }
        // A selection that cannot work is refused here, before a database is started for it.
        _ = try PluginRegistry.standard.select(config.plugins)
        return config
    }

    /// The help text of `aerie-server --help`: every variable `fromEnvironment` reads, its
    /// meaning and its default.
    public static var environmentHelp: String {
        let defaults = environmentDefaults
        return (["Environment (all optional):"] + environmentVariables.map { $0.helpLine(defaults: defaults) })
            .joined(separator: "\n")
    }

    /// The names `fromEnvironment` reads, in `--help`'s order.
    public static var environmentVariableNames: [String] { environmentVariables.map(\.name) }

    /// Every variable, in `--help`'s order.
    static var environmentVariables: [EnvironmentVariable] {
        typealias V = EnvironmentVariable
        return [
            V("AERIE_HOME", "state directory: embedded cluster, master key, admin token",
              shownDefault: { $0.home.relativePath.hasPrefix("/") ? $0.home.relativePath : "./\($0.home.relativePath)" }) {
                text, config in config.home = URL(fileURLWithPath: text)
            },
            V("AERIE_DATABASE_URL", "runtime-role libpq conninfo/URL; unset = embedded PostgreSQL of AERIE_HOME", shown: nil) {
                text, config in config.database.url = text
            },
            V("AERIE_OWNER_DATABASE_URL", "owner-role conninfo used for migrations", shown: "AERIE_DATABASE_URL") {
                text, config in config.database.ownerURL = text
            },
            .integer("AERIE_DB_POOL_SIZE", 1...256, \.database.poolSize, "database connections and blocking I/O threads"),
            V("AERIE_DB_POOL_TENANT_SHARE", "connections one tenant holds before other tenants' waiting calls go first",
              shown: "half the pool") { text, config in
                config.database.tenantShare = try V.parseInteger("AERIE_DB_POOL_TENANT_SHARE", text, 1...256)
            },
            .integer("AERIE_MAILBOX_MAX_MESSAGES", 0...1_000_000_000, \.database.quotas.mailboxMessages,
                     "messages one tenant's mailbox holds, 0 = no limit; more inbound answers 503"),
            .integer("AERIE_MAILBOX_MAX_BYTES", 0...(1 << 50), \.database.quotas.mailboxBytes,
                     "bytes one tenant's mailbox holds, as stored, 0 = no limit"),
            .integer("AERIE_OUTBOX_MAX_PENDING", 0...1_000_000_000, \.database.quotas.outboxPending,
                     "a tenant's messages waiting to be sent, 0 = no limit; calls that would send more answer quota_exceeded"),
            .integer("AERIE_INVITATION_REQUESTS_PER_MINUTE", 0...1_000_000, \.connections.invitationRequestsPerMinute,
                     "Requests one invitation takes a minute (per server), 0 = no limit; more answer 429"),
            .integer("AERIE_SENDER_REQUESTS_PER_MINUTE", 0...1_000_000, \.connections.senderRequestsPerMinute,
                     "Requests one sender key gets answered by one tenant a minute (per server), 0 = no limit; more answer 429"),
            .integer("AERIE_PENDING_CONNECTIONS_MAX", 1...1_000_000, \.connections.pendingMax,
                     "a tenant's connections waiting for their peer's first answer; a Request past it answers 429"),
            .integer("AERIE_OPEN_EXCHANGES_PER_CONNECTION", 1...1_000_000, \.connections.openExchanges.perConnection,
                     "credential offers (or proof requests) open at once on one connection; a peer's next is refused"),
            .integer("AERIE_OPEN_EXCHANGES_PER_TENANT", 1...1_000_000_000, \.connections.openExchanges.perTenant,
                     "credential offers (or proof requests) open at once in one tenant; a peer's next is refused"),
            .integer("AERIE_MOVED_TENANT_GRACE_SECONDS", 0...(365 * 24 * 3600), \.tenants.movedGraceSeconds,
                     "after a tenant moved away, how long its keys' inbound is answered 503 (retry) instead of 400"),
            V("AERIE_SCHEMA_DIR", "migrations folder", shown: "./schema, then the source checkout's") {
                text, config in config.database.schemaDirectory = URL(fileURLWithPath: text)
            },
            V("AERIE_RPC_LISTEN", "JSON-RPC HOST:PORT", shownDefault: { ListenAddress(host: $0.rpc.host, port: $0.rpc.port).description }) {
                text, config in (config.rpc.host, config.rpc.port) = try parseListen(text, variable: "AERIE_RPC_LISTEN")
            },
            .integer("AERIE_RPC_MAX_SESSIONS", 1...1_000_000, \.rpc.maxSessions,
                     "concurrent authenticated tenant and backend sessions; more are answered busy and closed"),
            .integer("AERIE_RPC_MAX_SESSIONS_PER_CREDENTIAL", 1...1_000_000, \.rpc.maxSessionsPerCredential,
                     "sessions one tenant token or one backend token holds at once; more are answered busy and closed"),
            .integer("AERIE_RPC_MAX_ADMIN_SESSIONS", 1...1024, \.rpc.maxAdminSessions,
                     "admin sessions, counted apart from AERIE_RPC_MAX_SESSIONS so the operator can always act"),
            .integer("AERIE_RPC_MAX_IN_FLIGHT", 1...10_000, \.rpc.maxInFlightPerSession,
                     "running requests per session before reading pauses"),
            .integer("AERIE_RPC_IDLE_TIMEOUT", 1...86_400, \.rpc.idleTimeoutSeconds,
                     "seconds without a request before a session is closed"),
            .integer("AERIE_RPC_MAX_LINE_BYTES", 1024...(64 << 20), \.rpc.maxLineBytes,
                     "longest request line; longer answers -32600 and closes"),
            .integer("AERIE_RPC_MAX_BATCH", 1...10_000, \.rpc.maxBatchEntries, "entries per batch"),
            .integer("AERIE_RPC_NOTIFICATION_QUEUE", 1...1_000_000, \.rpc.notificationQueueLimit, "pending notifications per session"),
            .integer("AERIE_RPC_AUTH_TIMEOUT", 1...3600, \.rpc.authTimeoutSeconds,
                     "seconds a new session has to call session.authenticate before it is closed"),
            .integer("AERIE_RPC_MAX_UNAUTHENTICATED", 1...1_000_000, \.rpc.maxUnauthenticatedSessions,
                     "sessions not yet authenticated, a cap apart from AERIE_RPC_MAX_SESSIONS"),
            V("AERIE_PLUGINS", "comma-separated protocol plugins to load: \(PluginRegistry.standard.names.joined(separator: ", "))",
              shown: "all") {
                text, config in
                config.plugins = text.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }
            },
            V("AERIE_MASTER_KEY", "base64 32-byte master key", shown: "AERIE_HOME/master-key, created 0600") {
                text, config in config.secrets.masterKeyBase64 = text
            },
            V("AERIE_LOG_LEVEL", "trace|debug|info|notice|warning|error|critical", shownDefault: { $0.operations.logLevel.rawValue }) {
                text, config in
                guard let level = Logger.Level(rawValue: text.lowercased()) else {
                    throw Invalid(description: "AERIE_LOG_LEVEL must be one of trace, debug, info, notice, warning, error, critical")
                }
                config.operations.logLevel = level
            },
            V("AERIE_LOG_FORMAT", "text|json: json writes one object per line, with a request id per call and inbound message",
              shownDefault: { $0.operations.logFormat.rawValue }) { text, config in
                guard let format = LogFormat(rawValue: text.lowercased()) else {
                    throw Invalid(description: "AERIE_LOG_FORMAT must be text or json, got '\(text)'")
                }
                config.operations.logFormat = format
            },
            V("AERIE_METRICS_LISTEN", "operator HTTP HOST:PORT for /metrics (Prometheus), /healthz, /readyz; off = none",
              shownDefault: { $0.operations.metricsListen?.description ?? "off" }) { text, config in
                if text == "off" {
                    config.operations.metricsListen = nil
                } else {
                    let (host, port) = try parseListen(text, variable: "AERIE_METRICS_LISTEN")
                    config.operations.metricsListen = ListenAddress(host: host, port: port)
                }
            },
            .flag("AERIE_ALLOW_PRIVATE_URLS", \.outbound.allowPrivateURLs,
                  "1 lets invitation URLs and peer endpoints be loopback/private addresses; tests only"),
            V("AERIE_ALLOWED_NETWORKS", "non-public networks peers (invitation URLs, endpoints) may use all the same, CIDR, comma-separated; not webhooks",
              shown: "none") {
                text, config in
                do {
                    config.outbound.allowedNetworks = try IPNetwork.parseList(text)
                } catch {
                    throw Invalid(description: "AERIE_ALLOWED_NETWORKS: \(error)")
                }
            },
            V("AERIE_TLS_CA_FILE", "PEM file of the certificate authorities outbound HTTPS (peers, invitation URLs, webhooks) trusts, instead of the system's",
              shown: "the system's") {
                text, config in
                guard FileManager.default.isReadableFile(atPath: text) else {
                    throw Invalid(description: "AERIE_TLS_CA_FILE: \(text) is not a readable file")
                }
                config.outbound.tlsCAFile = text
            },
            V("AERIE_WEBHOOK_ALLOWED_NETWORKS", "non-public networks backend webhook receivers may use, CIDR, comma-separated; not peers",
              shown: "none") {
                text, config in
                do {
                    config.outbound.webhookAllowedNetworks = try IPNetwork.parseList(text)
                } catch {
                    throw Invalid(description: "AERIE_WEBHOOK_ALLOWED_NETWORKS: \(error)")
                }
            },
            V("AERIE_DIDCOMM_LISTEN", "inbound DIDComm HTTP HOST:PORT",
              shownDefault: { ListenAddress(host: $0.didcomm.host, port: $0.didcomm.port).description }) { text, config in
                (config.didcomm.host, config.didcomm.port) = try parseListen(text, variable: "AERIE_DIDCOMM_LISTEN")
            },
            V("AERIE_PUBLIC_ENDPOINT", "the endpoint peers are told", shown: "http://<AERIE_DIDCOMM_LISTEN>") { text, config in
                guard text.hasPrefix("http://") || text.hasPrefix("https://") else {
                    throw Invalid(description: "AERIE_PUBLIC_ENDPOINT must be an http(s) URL, got '\(text)'")
                }
                config.didcomm.publicEndpoint = text
            },
            .integer("AERIE_DIDCOMM_MAX_BODY_BYTES", 1024...(64 << 20), \.didcomm.limits.maxBodyBytes,
                     "largest inbound DIDComm message; larger answers 413"),
            .integer("AERIE_DIDCOMM_MAX_CONNECTIONS", 1...1_000_000, \.didcomm.limits.maxConnections,
                     "open inbound connections; more are closed at once"),
            .seconds("AERIE_DIDCOMM_HEADER_TIMEOUT", 1...3600, \.didcomm.limits.headerTimeout,
                     "seconds a new connection has to send its request head"),
            .seconds("AERIE_DIDCOMM_BODY_TIMEOUT", 1...3600, \.didcomm.limits.bodyTimeout,
                     "seconds from a request head to the end of its body"),
            .seconds("AERIE_DIDCOMM_REQUEST_TIMEOUT", 1...3600, \.didcomm.limits.requestTimeout,
                     "seconds from a request head to its answer; later answers 503"),
            .integer("AERIE_DIDCOMM_MAX_REQUESTS_PER_CONNECTION", 1...1_000_000, \.didcomm.limits.maxRequestsPerConnection,
                     "requests on one kept-alive connection"),
            .seconds("AERIE_DIDCOMM_KEEPALIVE_TIMEOUT", 1...3600, \.didcomm.limits.keepAliveTimeout,
                     "seconds a kept-alive connection may idle before its next request"),
            .seconds("AERIE_DELIVERY_HORIZON_SECONDS", 1...(30 * 86_400), \.delivery.horizon,
                     "seconds a peer that is down, overloaded or full (no answer, 5xx, 408, 429) is retried before a message fails"),
            .seconds("AERIE_DELIVERY_PROTOCOL_HORIZON_SECONDS", 1...(30 * 86_400), \.delivery.protocolHorizon,
                     "the same for what carries no message (handshake Requests and Responses, pings); at most the horizon"),
            .milliseconds("AERIE_DELIVERY_BACKOFF_MS", 10...3_600_000, \.delivery.backoff,
                          "first delivery retry delay in ms, doubled per failed attempt up to AERIE_DELIVERY_MAX_BACKOFF_SECONDS"),
            .seconds("AERIE_DELIVERY_MAX_BACKOFF_SECONDS", 1...86_400, \.delivery.maxBackoff,
                     "longest wait between two delivery tries; a peer's Retry-After is honoured up to it"),
            .integer("AERIE_DELIVERY_LEASE_SECONDS", 2...3600, \.delivery.leaseSeconds,
                     "seconds a server owns an outbox row it sends; a dead server's rows go to another after it; keep above 15"),
            .integer("AERIE_DELIVERY_CONCURRENCY", 1...1024, \.delivery.concurrency, "deliveries running at once in this process"),
            .integer("AERIE_DELIVERY_PER_DESTINATION", 1...1024, \.delivery.perDestination,
                     "deliveries running at once to one address (all its ports), so a slow peer delays only its own rows"),
            V("AERIE_MESSAGE_RETENTION_DAYS", "reviewed (MS-106) mailbox messages older than this are purged, hourly",
              shownDefault: { $0.tenants.messageRetentionDays.map(String.init) ?? "unlimited" }) { text, config in
                config.tenants.messageRetentionDays = try V.parseInteger("AERIE_MESSAGE_RETENTION_DAYS", text, 1...36500)
            },
            .seconds("AERIE_EVENT_RETENTION_SECONDS", 1...(3650 * 86_400), \.events.retention,
                     "events of the durable log older than this are pruned, acked or not; acked ones go sooner"),
            .flag("AERIE_TENANT_SELF_EXPORT", \.tenants.selfExport,
                  "1 lets a tenant's own session export a sealed archive of itself (tenant.export)"),
            .flag("AERIE_WEBHOOK_ALLOW_HTTP", \.webhooks.allowHTTP, "1 accepts http:// backend webhook URLs; development only"),
            .integer("AERIE_WEBHOOK_BATCH_SIZE", 1...1000, \.webhooks.batchSize, "events per webhook POST at most"),
            .milliseconds("AERIE_WEBHOOK_BACKOFF_MS", 10...3_600_000, \.webhooks.backoff,
                          "first webhook retry delay in ms, doubled per failed attempt up to 10 minutes"),
            .seconds("AERIE_OOB_TIMEOUT", 1...120, \.connections.outOfBandTimeout, "seconds outOfBand.accept/sendReuse wait for the inviter"),
            V("AERIE_SEALING_SWEEP_SECONDS", "seconds between sweeps sealing rows a previous release left in clear (at start too); 0 = off",
              shownDefault: { $0.secrets.sealingSweepInterval.map { "\($0.components.seconds)" } ?? "0" }) { text, config in
                let seconds = try V.parseInteger("AERIE_SEALING_SWEEP_SECONDS", text, 0...86_400)
                config.secrets.sealingSweepInterval = seconds == 0 ? nil : .seconds(seconds)
            },
            V("AERIE_INSTANCE", "this server's name in outbox leases; unique per server of one database, kept across restarts",
              shown: "host:AERIE_HOME:DIDComm address") { text, config in
                config.instance = String(text.prefix(200))
            },
            .integer("AERIE_CREDENTIAL_CACHE_SIZE", 0...10_000_000, \.caches.credentialsSize,
                     "session credentials cached in memory, dropped by NOTIFY on rotate/suspend/delete; 0 = off"),
            .seconds("AERIE_CREDENTIAL_CACHE_TTL", 1...86_400, \.caches.credentialsMaxAge,
                     "seconds a cached credential is used before it is read again"),
            .integer("AERIE_CONNECTION_CACHE_SIZE", 0...10_000_000, \.caches.connectionsSize,
                     "connections.get answers cached in memory, dropped by NOTIFY and by this server's writes; 0 = off"),
            .seconds("AERIE_CONNECTION_CACHE_TTL", 1...86_400, \.caches.connectionsMaxAge,
                     "seconds a cached connection view is answered before it is read again"),
            .integer("AERIE_RECENT_RECIPIENTS", 0...1_000_000, \.caches.recentRecipientsSize,
                     "inbound recipients (keys just made, established connections' keys as read) kept 60 s so a peer's message skips the inbound lookup; 0 = off"),
        ]
    }
}
