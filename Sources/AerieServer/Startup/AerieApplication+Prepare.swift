import AerieCore
import AerieCrypto
import AerieRPC
import AerieStore
import AerieTransport
import Foundation
import Logging
import SystemPlugin

/// The steps of `AerieApplication.prepare`, in the order it takes them.
extension AerieApplication {
    /// Where the database runs: the configured URLs, or an embedded cluster of `AERIE_HOME`.
    struct Cluster {
        var runtimeURL: String
        var ownerURL: String
        /// Started by `startCluster`, stopped with the server (or by `prepare` when it fails).
        var embedded: EmbeddedPostgres?
    }

    /// Creates the state directory (0700) and binds metrics to their backend before anything records.
    static func makeHome(_ configuration: AerieConfiguration) throws {
        try FileManager.default.createDirectory(
            at: configuration.home, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        if configuration.metricsListen != nil { _ = AerieMetrics.registry }
    }

    /// The configured database, or the embedded cluster, started now.
    static func startCluster(_ configuration: AerieConfiguration, logger: Logger) async throws -> Cluster {
        if let databaseURL = configuration.databaseURL {
            return Cluster(runtimeURL: databaseURL, ownerURL: configuration.ownerDatabaseURL ?? databaseURL)
        }
        let cluster = EmbeddedPostgres(home: configuration.home, logger: logger)
        let urls = try await cluster.start()
        return Cluster(runtimeURL: urls.runtimeConninfo, ownerURL: urls.ownerConninfo, embedded: cluster)
    }

    /// Applies the migrations (`schema/` and every plugin's), opens the pool with the stores of
    /// the `selected` plugins, and checks the runtime role and the durability settings.
    static func openDatabase(
        _ configuration: AerieConfiguration, cluster: Cluster, selected: [String], extraPlugins: [any AeriePlugin], logger: Logger
    ) async throws -> AerieDatabase {
        let registry = PluginRegistry.standard
        let extraMigrations = extraPlugins.flatMap { plugin in
            type(of: plugin).storage.migrations.map { Migration($0, plugin: type(of: plugin).name) }
        }
        let applied = try await Migrator(
            ownerConninfo: cluster.ownerURL, schemaDirectory: configuration.schemaDirectory ?? SchemaLocator.defaultDirectory(),
            pluginMigrations: registry.migrations + extraMigrations, logger: logger
        ).migrate()
        if !applied.isEmpty { logger.info("migrations applied", metadata: ["versions": "\(applied)"]) }

        var databaseConfiguration = DatabaseConfiguration(
            conninfo: cluster.runtimeURL, maxConnections: configuration.databasePoolSize, tenantShare: configuration.databaseTenantShare)
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
                "PostgreSQL runs with durability settings off: a crash can lose acknowledged writes", metadata: ["off": "\(unsafe)"])
        }
        return database
    }

    /// The master keys, checked against the tenants' data keys (the pool is closed when they do
    /// not match).
    static func loadMasterKeys(_ configuration: AerieConfiguration, database: AerieDatabase, logger: Logger) async throws
        -> MasterKeyring
    {
        let masterKeys = try MasterKeyring.load(configuration, logger: logger)
        do {
            try await checkMasterKeys(masterKeys, database: database, logger: logger)
        } catch {
            await database.shutdown()
            throw error
        }
        return masterKeys
    }

    /// The event side: the session credentials the LISTEN keeps true, the presenters (filled once
    /// the plugins are installed), webhooks, the durable log's streams and the hub.
    struct EventWiring {
        var credentials: CredentialCache
        var presenters: EventPresenters
        var webhooks: WebhookDelivery
        var streams: EventStreams
        var hub: EventHub
    }

    static func wireEvents(
        _ configuration: AerieConfiguration, database: AerieDatabase, masterKeys: MasterKeyring, runtimeURL: String,
        logger: Logger
    ) -> EventWiring {
        let credentials = CredentialCache(capacity: configuration.credentialCacheSize, maxAge: configuration.credentialCacheMaxAge)
        let presenters = EventPresenters()
        let settings = WebhookDelivery.Settings(
            batchSize: configuration.webhookBatchSize, backoff: configuration.webhookBackoff, maxBackoff: configuration.webhookMaxBackoff)
        let webhooks = WebhookDelivery(
            webhooks: database.webhooks,
            http: HTTPDelivery(
                configuration: HTTPDelivery.Configuration(
                    addresses: configuration.webhookAddresses, trustedCertificates: configuration.tlsCAFile, totalTimeout: configuration.webhookTimeout,
                    maxResponseBytes: 64 * 1024, threads: settings.concurrency)),
            masterKeys: masterKeys, instance: configuration.instanceName, settings: settings, logger: logger,
            presenters: presenters)
        let streams = EventStreams(
            log: database.events, retention: configuration.eventRetention, pruneInterval: configuration.eventPruneInterval,
            onPositionsAdvanced: { [webhooks] in webhooks.positionsAdvanced() },
            positionsAwaited: { [webhooks] in webhooks.hasWebhooks }, logger: logger, presenters: presenters)
        let tenants = database.tenants
        // The LISTEN on aerie_events (its own connection) always runs: it keeps the caches true;
        // push subscriptions ride on it when the messages plugin offers them.
        let hub = EventHub(
            conninfo: runtimeURL, logger: logger,
            caches: ChannelCaches(
                credentials: credentials, connectionViews: database.connectionViews,
                sendingConnections: database.sendingConnections, recentRecipients: database.recentRecipients),
            credentialIsCurrent: { id, tokenHash in try await tenants.isActive(id, tokenHash: tokenHash) },
            eventLog: streams, presenters: presenters)
        return EventWiring(credentials: credentials, presenters: presenters, webhooks: webhooks, streams: streams, hub: hub)
    }

    /// Installs the core methods, the `selected` plugins and `extraPlugins`: methods and inbound
    /// types into the router, hooks and event presenters into their registries.
    static func installPlugins(
        _ plugins: [any AeriePlugin], core: [any AeriePlugin], events: EventWiring, servedProtocols: ServedProtocols
    ) throws -> (router: MethodRouter, hooks: ConnectionHooks) {
        var router = MethodRouter()
        var hooks = ConnectionHooks()
        var presenters = EventPresenterRegistry()
        for plugin in core + plugins {
            try router.install(plugin)
            hooks.install(plugin)
            try presenters.install(plugin)
        }
        events.presenters.install(presenters)
        servedProtocols.install(router)
        return (router, hooks)
    }

    /// Everything a running server runs, in `ServiceOrder`.
    static func wireServices(
        _ configuration: AerieConfiguration, cluster: Cluster, database: AerieDatabase, masterKeys: MasterKeyring,
        selected: [String], extraPlugins: [any AeriePlugin], logger: Logger
    ) throws -> ServiceOrder {
        let wakeup = OutboxWakeup(
            lease: configuration.deliveryEnabled
                ? OutboxLease(instance: configuration.instanceName, seconds: configuration.deliveryLeaseSeconds) : nil)
        var contexts = TenantContexts(database: database, masterKeys: masterKeys)
        contexts.outboxSignal = wakeup
        let endpoint = PublicEndpoint(configuration.publicEndpoint)
        let events = wireEvents(configuration, database: database, masterKeys: masterKeys, runtimeURL: cluster.runtimeURL, logger: logger)
        var authenticator = TenantAuthenticator(database: database, contexts: contexts)
        authenticator.credentials = events.credentials
        let resolver = URLResolver(configuration: URLResolver.Configuration(addresses: configuration.peerAddresses, trustedCertificates: configuration.tlsCAFile), logger: logger)
        // Webhook receivers are judged by their own networks, never by the peers'.
        let webhookDestinations = URLResolver(
            configuration: URLResolver.Configuration(addresses: configuration.webhookAddresses, trustedCertificates: configuration.tlsCAFile, threads: 1), logger: logger)
        var admin = AdminMethods(database: database, masterKeys: masterKeys)
        admin.credentialChanged = { [hub = events.hub] id, current in hub.credentialChanged(tenant: id, current: current) }
        var archives = TenantArchiveMethods(
            database: database, transfers: TenantArchiveTransfers(database: database, masterKeys: masterKeys),
            movedKeysGrace: configuration.movedTenantGraceSeconds)
        archives.credentialChanged = admin.credentialChanged
        archives.tenantSelfExport = configuration.tenantSelfExport
        let core: [any AeriePlugin] = [
            SystemPlugin(version: version), SessionMethods(authenticator: authenticator), admin, archives,
            BackendMethods(
                database: database,
                webhooks: WebhookAdministration(
                    masterKeys: masterKeys, destinations: webhookDestinations, allowHTTP: configuration.webhookAllowHTTP,
                    delivery: events.webhooks)),
            EventMethods(streams: events.streams),
        ]
        // What discover-features discloses: filled from the router once it is built.
        let servedProtocols = ServedProtocols()
        let plugins = try PluginRegistry.standard.build(
            selected,
            services: PluginRegistry.Services(
                fetcher: resolver, endpoint: { endpoint.value }, events: events.hub,
                outOfBandTimeout: configuration.outOfBandTimeout, protocols: servedProtocols,
                pendingConnectionsMax: configuration.pendingConnectionsMax,
                sender: ConnectionSendService(connections: database.sendingConnections)))
        let (router, hooks) = try installPlugins(
            plugins + extraPlugins, core: core, events: events, servedProtocols: servedProtocols)
        for plugin in plugins { logger.info("plugin enabled", metadata: ["plugin": "\(type(of: plugin).name)"]) }

        let rpcServer = RPCServer(
            configuration: configuration.rpc, router: router, authenticator: authenticator, serverVersion: version, logger: logger)
        let parsing = InboundParsing()
        let inbound = InboundProcessor(
            database: database, contexts: contexts, router: router, hooks: hooks, logger: logger,
            maxHandlingAttempts: configuration.inboundHandlingMaxAttempts, handlingBackoff: configuration.inboundHandlingBackoff,
            parsing: parsing,
            requestRates: RequestRateLimits(
                .init(perInvitation: configuration.invitationRequestsPerMinute, perSender: configuration.senderRequestsPerMinute)))
        let didcommServer = HTTPListener(
            configuration: HTTPListener.Configuration(
                host: configuration.didcommHost, port: configuration.didcommPort, limits: configuration.didcommLimits),
            logger: logger,
            onBound: { port in endpoint.bound(host: configuration.didcommHost, port: port) },
            didcomm: { body in (await inbound.answer(body), nil) })
        var order = ServiceOrder(
            database: DatabaseService(database: database, embedded: cluster.embedded, logger: logger), parsing: parsing,
            transport: TransportService(resolvers: [resolver, webhookDestinations]), events: events.hub,
            eventStreams: events.streams, webhooks: events.webhooks,
            inboundRecovery: InboundRecoveryService(
                database: database, contexts: contexts, processor: inbound, interval: configuration.inboundRecoveryInterval,
                logger: logger),
            didcomm: didcommServer, rpc: rpcServer)
        if configuration.deliveryEnabled {
            order.delivery = OutboxDeliveryService(
                database: database, contexts: contexts,
                delivery: HTTPDelivery(
                    configuration: HTTPDelivery.Configuration(
                        addresses: configuration.peerAddresses, trustedCertificates: configuration.tlsCAFile, threads: configuration.deliveryConcurrency)),
                limits: DeliveryLimits(concurrency: configuration.deliveryConcurrency, perDestination: configuration.deliveryPerDestination),
                inbound: inbound, hooks: hooks, wakeup: wakeup, instance: configuration.instanceName,
                leaseSeconds: configuration.deliveryLeaseSeconds,
                ready: { _ = try await didcommServer.listeningPort() },
                retry: DeliveryRetry(
                    backoff: configuration.deliveryBackoff, maxBackoff: configuration.deliveryMaxBackoff,
                    horizon: configuration.deliveryHorizon, protocolHorizon: configuration.deliveryProtocolHorizon),
                pollInterval: configuration.deliveryPollInterval, logger: logger)
        }
        if let interval = configuration.sealingSweepInterval {
            order.sealingSweep = SealingMigrationService(database: database, contexts: contexts, interval: interval, logger: logger)
        }
        if let days = configuration.messageRetentionDays {
            order.retention = MailboxRetentionService(
                database: database, retention: .seconds(days * 86_400), interval: configuration.retentionSweepInterval, logger: logger)
        }
        if let listen = configuration.metricsListen {
            let readiness = Readiness()
            let endpoint = OperatorEndpoint(
                sampler: MetricsSampler(rpcServer: rpcServer, database: database, events: events.hub),
                database: database, events: events.hub, readiness: readiness)
            order.operatorEndpoint = HTTPListener(
                configuration: HTTPListener.Configuration(host: listen.host, port: listen.port, limits: .operator),
                name: "operator HTTP (metrics, health)", logger: logger, handler: endpoint.answer)
            order.drainSignal = DrainSignalService(readiness: readiness)
        }
        return order
    }
}
