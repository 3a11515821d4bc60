import AerieCore
import AerieCrypto
import AerieRPC
import AerieStore
import AerieTransport
import Foundation
import Logging
import ServiceLifecycle
import Synchronization
import SystemPlugin

/// Wires a running Aerie: database (embedded or external), migrations, secrets, plugins, router
/// and the JSON-RPC server. `aerie-server` and the tests both start Aerie through it.
public enum AerieApplication {
    public static let version = "0.1.0"

    /// Everything started and ready to run under a `ServiceGroup`.
    public struct Prepared: Sendable {
        public let rpcServer: RPCServer
        /// The inbound DIDComm endpoint (`listeningPort()` reads back port 0).
        public let didcommServer: HTTPListener
        /// The operator endpoint (/metrics, /healthz, /readyz), when `metricsListen` is set.
        public let operatorServer: HTTPListener?
        /// Run these in this order; the group stops them in reverse (RPC drains before the database closes).
        public let services: [any Service]
        public let database: AerieDatabase
        /// Where the admin token was written on first start.
        public let adminTokenFile: URL
    }

    /// `extraPlugins` lets tests add methods (slow or failing ones) through the same interface.
    public static func prepare(
        configuration: AerieConfiguration, logger: Logger, extraPlugins: [any AeriePlugin] = []
    ) async throws -> Prepared {
        try FileManager.default.createDirectory(
            at: configuration.home, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        // Metrics are bound to their backend when created: bootstrap before anything records.
        if configuration.metricsListen != nil { _ = AerieMetrics.registry }

        var embedded: EmbeddedPostgres? = nil
        let runtimeURL: String
        let ownerURL: String
        if let databaseURL = configuration.databaseURL {
            runtimeURL = databaseURL
            ownerURL = configuration.ownerDatabaseURL ?? databaseURL
        } else {
            let cluster = EmbeddedPostgres(home: configuration.home, logger: logger)
            let urls = try await cluster.start()
            embedded = cluster
            runtimeURL = urls.runtimeConninfo
            ownerURL = urls.ownerConninfo
        }

        do {
            let registry = PluginRegistry.standard
            let selected = try registry.select(configuration.plugins)
            let schema = configuration.schemaDirectory ?? SchemaLocator.defaultDirectory()
            let applied = try await Migrator(
                ownerConninfo: ownerURL, schemaDirectory: schema,
                pluginMigrations: registry.migrations
                    + extraPlugins.flatMap { plugin in type(of: plugin).storage.migrations.map { Migration($0, plugin: type(of: plugin).name) } },
                logger: logger
            ).migrate()
            if !applied.isEmpty { logger.info("migrations applied", metadata: ["versions": "\(applied)"]) }

            var databaseConfiguration = DatabaseConfiguration(
                conninfo: runtimeURL, maxConnections: configuration.databasePoolSize, tenantShare: configuration.databaseTenantShare)
            databaseConfiguration.quotas = configuration.quotas
            databaseConfiguration.connectionViewCacheSize = configuration.connectionCacheSize
            databaseConfiguration.connectionViewCacheMaxAge = configuration.connectionCacheMaxAge
            databaseConfiguration.recentRecipientsSize = configuration.recentRecipientsSize
            databaseConfiguration.recentRecipientsMaxAge = configuration.recentRecipientsMaxAge
            let database = AerieDatabase(
                configuration: databaseConfiguration, logger: logger,
                stores: try registry.stores(selected: selected, extra: extraPlugins))
            try await database.verifyRuntimeRole()
            let unsafe = try await database.durabilitySettingsOff()
            if !unsafe.isEmpty {
                logger.notice(
                    "PostgreSQL runs with durability settings off: a crash can lose acknowledged writes",
                    metadata: ["off": "\(unsafe)"])
            }

            let masterKeys = try MasterKeyring.load(configuration, logger: logger)
            do {
                try await checkMasterKeys(masterKeys, database: database, logger: logger)
            } catch {
                await database.shutdown()
                throw error
            }
            let adminTokenFile = configuration.home.appendingPathComponent("admin-token")
            try await initializeAdminToken(database: database, file: adminTokenFile, logger: logger)

            let wakeup = OutboxWakeup(
                lease: configuration.deliveryEnabled
                    ? OutboxLease(instance: configuration.instanceName, seconds: configuration.deliveryLeaseSeconds) : nil)
            var contexts = TenantContexts(database: database, masterKeys: masterKeys)
            contexts.outboxSignal = wakeup
            let endpoint = PublicEndpoint(configuration.publicEndpoint)
            // The LISTEN on aerie_events (its own connection) always runs: it keeps the credential
            // and connection caches true; push subscriptions ride on it when the messages plugin
            // offers them.
            let credentials = CredentialCache(
                capacity: configuration.credentialCacheSize, maxAge: configuration.credentialCacheMaxAge)
            let tenantDirectory = database.tenants
            // Filled from the router once the plugins that present the event kinds are installed.
            let presenters = EventPresenters()
            // Likewise: what discover-features discloses.
            let servedProtocols = ServedProtocols()
            let webhookSettings = WebhookDelivery.Settings(
                batchSize: configuration.webhookBatchSize, backoff: configuration.webhookBackoff,
                maxBackoff: configuration.webhookMaxBackoff)
            let webhookDelivery = WebhookDelivery(
                webhooks: database.webhooks,
                http: HTTPDelivery(
                    configuration: HTTPDelivery.Configuration(
                        allowPrivateAddresses: configuration.allowPrivateURLs, allowedNetworks: configuration.webhookAllowedNetworks,
                        allowedNetworksSetting: "AERIE_WEBHOOK_ALLOWED_NETWORKS",
                        totalTimeout: configuration.webhookTimeout, maxResponseBytes: 64 * 1024, threads: webhookSettings.concurrency)),
                masterKeys: masterKeys, instance: configuration.instanceName, settings: webhookSettings,
                logger: logger, presenters: presenters)
            let eventStreams = EventStreams(
                log: database.events, retention: configuration.eventRetention, pruneInterval: configuration.eventPruneInterval,
                onPositionsAdvanced: { [webhookDelivery] in webhookDelivery.positionsAdvanced() },
                positionsAwaited: { [webhookDelivery] in webhookDelivery.hasWebhooks }, logger: logger,
                presenters: presenters)
            let events = EventHub(
                conninfo: runtimeURL, logger: logger, credentials: credentials, connectionViews: database.connectionViews,
                recentRecipients: database.recentRecipients, credentialIsCurrent: { id, tokenHash in try await tenantDirectory.isActive(id, tokenHash: tokenHash) },
                eventLog: eventStreams, presenters: presenters)
            var authenticator = TenantAuthenticator(database: database, contexts: contexts)
            authenticator.credentials = credentials
            var router = MethodRouter()
            try router.install(SystemPlugin(version: version))
            try router.install(SessionMethods(authenticator: authenticator))
            var admin = AdminMethods(database: database, masterKeys: masterKeys)
            admin.credentialChanged = { [events] id, current in events.credentialChanged(tenant: id, current: current) }
            try router.install(admin)
            var archiveMethods = TenantArchiveMethods(
                database: database, transfers: TenantArchiveTransfers(database: database, masterKeys: masterKeys),
                movedKeysGrace: configuration.movedTenantGraceSeconds)
            archiveMethods.credentialChanged = admin.credentialChanged
            archiveMethods.tenantSelfExport = configuration.tenantSelfExport
            try router.install(archiveMethods)
            let resolver = URLResolver(
                configuration: URLResolver.Configuration(
                    allowPrivateAddresses: configuration.allowPrivateURLs, allowedNetworks: configuration.allowedNetworks),
                logger: logger)
            // Webhook receivers are judged by their own networks, never by the peers'.
            let webhookDestinations = URLResolver(
                configuration: URLResolver.Configuration(
                    allowPrivateAddresses: configuration.allowPrivateURLs, allowedNetworks: configuration.webhookAllowedNetworks,
                    allowedNetworksSetting: "AERIE_WEBHOOK_ALLOWED_NETWORKS", threads: 1),
                logger: logger)
            try router.install(BackendMethods(
                database: database,
                webhooks: WebhookAdministration(
                    masterKeys: masterKeys, destinations: webhookDestinations, allowHTTP: configuration.webhookAllowHTTP,
                    delivery: webhookDelivery)))
            try router.install(EventMethods(streams: eventStreams))
            let plugins = try registry.build(
                selected,
                services: PluginRegistry.Services(
                    fetcher: resolver, endpoint: { endpoint.value }, events: events,
                    outOfBandTimeout: configuration.outOfBandTimeout, protocols: servedProtocols,
                    pendingConnectionsMax: configuration.pendingConnectionsMax))
            for plugin in plugins {
                try router.install(plugin)
                logger.info("plugin enabled", metadata: ["plugin": "\(type(of: plugin).name)"])
            }
            for plugin in extraPlugins { try router.install(plugin) }
            presenters.install(router)
            servedProtocols.install(router)

            let rpcServer = RPCServer(
                configuration: configuration.rpc, router: router, authenticator: authenticator,
                serverVersion: version, logger: logger)
            let databaseService = DatabaseService(database: database, embedded: embedded, logger: logger)
            let transportService = TransportService(resolvers: [resolver, webhookDestinations])
            let parsing = InboundParsing()
            let inbound = InboundProcessor(
                database: database, contexts: contexts, router: router, logger: logger,
                maxHandlingAttempts: configuration.inboundHandlingMaxAttempts, handlingBackoff: configuration.inboundHandlingBackoff,
                parsing: parsing, requestRates: RequestRateLimits(
                    .init(perInvitation: configuration.invitationRequestsPerMinute, perSender: configuration.senderRequestsPerMinute)))
            let didcommServer = HTTPListener(
                configuration: HTTPListener.Configuration(
                    host: configuration.didcommHost, port: configuration.didcommPort, limits: configuration.didcommLimits),
                logger: logger,
                onBound: { port in endpoint.bound(host: configuration.didcommHost, port: port) },
                didcomm: { body in (await inbound.answer(body), nil) })
            var services: [any Service] = [databaseService, parsing, transportService, events, eventStreams, webhookDelivery]
            if configuration.deliveryEnabled {
                services.append(OutboxDeliveryService(
                database: database, contexts: contexts,
                delivery: HTTPDelivery(
                    configuration: HTTPDelivery.Configuration(
                        allowPrivateAddresses: configuration.allowPrivateURLs, allowedNetworks: configuration.allowedNetworks,
                        threads: configuration.deliveryConcurrency)),
                limits: DeliveryLimits(
                    concurrency: configuration.deliveryConcurrency, perDestination: configuration.deliveryPerDestination),
                inbound: inbound, wakeup: wakeup, instance: configuration.instanceName,
                leaseSeconds: configuration.deliveryLeaseSeconds,
                ready: { _ = try await didcommServer.listeningPort() },
                retry: DeliveryRetry(
                    backoff: configuration.deliveryBackoff, maxBackoff: configuration.deliveryMaxBackoff,
                    horizon: configuration.deliveryHorizon, protocolHorizon: configuration.deliveryProtocolHorizon),
                pollInterval: configuration.deliveryPollInterval, logger: logger))
            }
            services.append(InboundRecoveryService(
                database: database, contexts: contexts, processor: inbound, interval: configuration.inboundRecoveryInterval,
                logger: logger))
            if let interval = configuration.sealingSweepInterval {
                services.append(SealingMigrationService(database: database, contexts: contexts, interval: interval, logger: logger))
            }
            if let days = configuration.messageRetentionDays {
                services.append(MailboxRetentionService(
                    database: database, retention: .seconds(days * 86_400), interval: configuration.retentionSweepInterval,
                    logger: logger))
            }
            services += [didcommServer, rpcServer]
            var operatorServer: HTTPListener? = nil
            if let listen = configuration.metricsListen {
                let readiness = Readiness()
                let endpoint = OperatorEndpoint(
                    sampler: MetricsSampler(rpcServer: rpcServer, database: database, events: events),
                    database: database, events: events, readiness: readiness)
                let server = HTTPListener(
                    configuration: HTTPListener.Configuration(host: listen.host, port: listen.port, limits: .operator),
                    name: "operator HTTP (metrics, health)", logger: logger, handler: endpoint.answer)
                // First to start and last to stop, so probes see the whole drain; the drain signal
                // is last, so shutdown reaches it first.
                services.insert(server, at: 0)
                services.append(DrainSignalService(readiness: readiness))
                operatorServer = server
            }
            return Prepared(
                rpcServer: rpcServer, didcommServer: didcommServer, operatorServer: operatorServer, services: services,
                database: database, adminTokenFile: adminTokenFile)
        } catch {
            if let embedded { try? await embedded.stop() }
            throw error
        }
    }

    /// Every plugin's migrations (enabled or not), applied with `schema/` by `prepare` and `migrate`.
    public static var pluginMigrations: [Migration] { PluginRegistry.standard.migrations }

    /// The plugins' storage with the repositories of the plugins `AERIE_PLUGINS` would enable
    /// (`plugins`, nil: all) available, for a database used outside `prepare` (tests, tools).
    public static func pluginStores(plugins: [String]? = nil) throws -> PluginStores {
        let registry = PluginRegistry.standard
        return try registry.stores(selected: registry.select(plugins))
    }

    /// `aerie-admin migrate`: applies pending migrations to the configured database, or to the
    /// embedded cluster (started for the purpose and stopped again if it was not running).
    public static func migrate(configuration: AerieConfiguration, schemaDirectory: URL, logger: Logger) async throws -> [Int] {
        if let databaseURL = configuration.databaseURL {
            let owner = configuration.ownerDatabaseURL ?? databaseURL
            return try await Migrator(
                ownerConninfo: owner, schemaDirectory: schemaDirectory, pluginMigrations: pluginMigrations, logger: logger
            ).migrate()
        }
        let cluster = EmbeddedPostgres(home: configuration.home, logger: logger)
        let wasRunning = try await cluster.isRunning()
        let urls = try await cluster.start()
        do {
            let applied = try await Migrator(
                ownerConninfo: urls.ownerConninfo, schemaDirectory: schemaDirectory, pluginMigrations: pluginMigrations,
                logger: logger
            ).migrate()
            if !wasRunning { try await cluster.stop() }
            return applied
        } catch {
            if !wasRunning { try? await cluster.stop() }
            throw error
        }
    }

    /// Refuses to start with master keys that open none of the tenants' data keys (a wrong
    /// `AERIE_MASTER_KEY`, or a rotation the server was not told about); warns when some tenants
    /// are out of reach. When every tenant uses a key the server holds besides its current one
    /// (an unfinished rotation that already committed), new tenants use that key too.
    static func checkMasterKeys(_ masterKeys: MasterKeyring, database: AerieDatabase, logger: Logger) async throws {
        let inUse = try await database.tenants.masterKeyFingerprints()
        guard !inUse.isEmpty else { return }
        let unknown = inUse.filter { masterKeys.key(fingerprint: $0.key) == nil }
        if unknown.count == inUse.count {
            throw AerieConfiguration.Invalid(
                description: "the master key (\(masterKeys.current.fingerprint)) does not match the database: tenants' data keys are "
                    + "wrapped by \(unknown.keys.sorted().joined(separator: ", ")). Set AERIE_MASTER_KEY (or AERIE_HOME/master-key) "
                    + "to the key `aerie-admin keys rotate-master` last wrote.")
        }
        if !unknown.isEmpty {
            logger.error(
                "some tenants' data keys are wrapped by master keys this server does not have; their keys cannot be used",
                metadata: ["masterKeys": "\(unknown.keys.sorted())", "tenants": "\(unknown.values.reduce(0, +))"])
        }
        if inUse.count == 1, let only = inUse.keys.first, only != masterKeys.current.fingerprint {
            _ = masterKeys.adopt(fingerprint: only)
        }
    }

    /// On the first start against a database, creates the admin token and writes it to a 0600 file.
    static func initializeAdminToken(database: AerieDatabase, file: URL, logger: Logger) async throws {
        if try await database.tenants.adminTokenHash() != nil {
            if !FileManager.default.fileExists(atPath: file.path) {
                logger.notice(
                    "an admin token exists in the database but not at \(file.path); use AERIE_ADMIN_TOKEN with aerie-admin, or issue a new one with: aerie-admin admin rotate-token --direct")
            }
            return
        }
        let token = TokenHasher.generate(prefix: adminTokenPrefix)
        guard try await database.tenants.initializeAdminTokenHash(TokenHasher.hash(token)) else { return }
        try? FileManager.default.removeItem(at: file)
        try SecretFile.create(file, contents: token)
        logger.notice("admin token created", metadata: ["file": "\(file.path)"])
    }
}
