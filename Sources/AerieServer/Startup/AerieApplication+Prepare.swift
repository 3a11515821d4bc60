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

        /// The configured URLs, or nil when the database is the embedded cluster.
        init?(_ database: AerieConfiguration.Database) {
            guard let url = database.url else { return nil }
            self.init(runtimeURL: url, ownerURL: database.ownerURL ?? url)
        }

        init(runtimeURL: String, ownerURL: String, embedded: EmbeddedPostgres? = nil) {
            self.runtimeURL = runtimeURL
            self.ownerURL = ownerURL
            self.embedded = embedded
        }
    }

    /// Creates the state directory (0700) and binds metrics to their backend before anything records.
    static func makeHome(_ configuration: AerieConfiguration) throws {
        try FileManager.default.createDirectory(
            at: configuration.home, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        if configuration.operations.metricsListen != nil { _ = AerieMetrics.registry }
    }

    /// The configured database, or the embedded cluster of `AERIE_HOME`, started now.
    static func startCluster(_ configuration: AerieConfiguration, logger: Logger) async throws -> Cluster {
        if let configured = Cluster(configuration.database) { return configured }
        let cluster = EmbeddedPostgres(home: configuration.home, logger: logger)
        let urls = try await cluster.start()
        return Cluster(runtimeURL: urls.runtimeConninfo, ownerURL: urls.ownerConninfo, embedded: cluster)
    }

    /// Runs `body` on the configured database, or on the embedded cluster of `AERIE_HOME`
    /// (started for the purpose and stopped again if it was not running): the tools' way in.
    static func withCluster<T: Sendable>(
        _ configuration: AerieConfiguration, logger: Logger, _ body: (Cluster) async throws -> T
    ) async throws -> T {
        if let configured = Cluster(configuration.database) { return try await body(configured) }
        let cluster = EmbeddedPostgres(home: configuration.home, logger: logger)
        let wasRunning = try await cluster.isRunning()
        let urls = try await cluster.start()
        do {
            let result = try await body(Cluster(runtimeURL: urls.runtimeConninfo, ownerURL: urls.ownerConninfo))
            if !wasRunning { try await cluster.stop() }
            return result
        } catch {
            if !wasRunning { try? await cluster.stop() }
            throw error
        }
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
            ownerConninfo: cluster.ownerURL,
            schemaDirectory: configuration.database.schemaDirectory ?? SchemaLocator.defaultDirectory(),
            pluginMigrations: registry.migrations + extraMigrations, logger: logger
        ).migrate()
        if !applied.isEmpty { logger.info("migrations applied", metadata: ["versions": "\(applied)"]) }

        let database = AerieDatabase(
            configuration: configuration.database.pool(conninfo: cluster.runtimeURL, caches: configuration.caches), logger: logger,
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
        let masterKeys = try MasterKeyring.load(configuration.secrets, home: configuration.home, logger: logger)
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
        let caches = configuration.caches
        let credentials = CredentialCache(capacity: caches.credentialsSize, maxAge: caches.credentialsMaxAge)
        let presenters = EventPresenters()
        let settings = configuration.webhooks.settings
        let webhooks = WebhookDelivery(
            webhooks: database.webhooks,
            http: HTTPDelivery(
                configuration: HTTPDelivery.Configuration(
                    addresses: configuration.outbound.webhookAddresses, trustedCertificates: configuration.outbound.tlsCAFile,
                    totalTimeout: configuration.webhooks.timeout, maxResponseBytes: 64 * 1024, threads: settings.concurrency)),
            masterKeys: masterKeys, instance: configuration.instanceName, settings: settings, logger: logger,
            presenters: presenters)
        let streams = EventStreams(
            log: database.events, retention: configuration.events.retention, pruneInterval: configuration.events.pruneInterval,
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
        let outbound = configuration.outbound
        let wakeup = OutboxWakeup(
            lease: configuration.delivery.enabled
                ? OutboxLease(instance: configuration.instanceName, seconds: configuration.delivery.leaseSeconds) : nil)
        var contexts = TenantContexts(database: database, masterKeys: masterKeys)
        contexts.outboxSignal = wakeup
        let endpoint = PublicEndpoint(configuration.didcomm.publicEndpoint)
        let events = wireEvents(configuration, database: database, masterKeys: masterKeys, runtimeURL: cluster.runtimeURL, logger: logger)
        var authenticator = TenantAuthenticator(database: database, contexts: contexts)
        authenticator.credentials = events.credentials
        let resolver = URLResolver(
            configuration: URLResolver.Configuration(addresses: outbound.peerAddresses, trustedCertificates: outbound.tlsCAFile),
            logger: logger)
        // Webhook receivers are judged by their own networks, never by the peers'.
        let webhookDestinations = URLResolver(
            configuration: URLResolver.Configuration(
                addresses: outbound.webhookAddresses, trustedCertificates: outbound.tlsCAFile, threads: 1),
            logger: logger)
        let core = coreMethods(
            configuration, database: database, masterKeys: masterKeys, authenticator: authenticator, events: events,
            webhookDestinations: webhookDestinations)
        // What discover-features discloses: filled from the router once it is built.
        let servedProtocols = ServedProtocols()
        let plugins = try PluginRegistry.standard.build(
            selected,
            services: PluginRegistry.Services(
                fetcher: resolver, endpoint: { endpoint.value }, events: events.hub, connections: configuration.connections,
                protocols: servedProtocols, sendingConnections: database.sendingConnections))
        let (router, hooks) = try installPlugins(
            plugins + extraPlugins, core: core, events: events, servedProtocols: servedProtocols)
        for plugin in plugins { logger.info("plugin enabled", metadata: ["plugin": "\(type(of: plugin).name)"]) }

        let rpcServer = RPCServer(
            configuration: configuration.rpc, router: router, authenticator: authenticator, serverVersion: version, logger: logger)
        let parsing = InboundParsing()
        let didcomm = configuration.didcomm
        let inbound = InboundProcessor(
            database: database, contexts: contexts, router: router, hooks: hooks, logger: logger,
            maxHandlingAttempts: didcomm.handlingMaxAttempts, handlingBackoff: didcomm.handlingBackoff, parsing: parsing,
            requestRates: RequestRateLimits(configuration.connections.requestRates))
        let didcommServer = HTTPListener(
            configuration: didcomm.listener, logger: logger,
            onBound: { port in endpoint.bound(host: didcomm.host, port: port) },
            answer: { body in await inbound.answer(body) })
        var order = ServiceOrder(
            database: DatabaseService(database: database, embedded: cluster.embedded, logger: logger), parsing: parsing,
            transport: TransportService(resolvers: [resolver, webhookDestinations]), events: events.hub,
            eventStreams: events.streams, webhooks: events.webhooks,
            inboundRecovery: InboundRecoveryService(
                database: database, contexts: contexts, processor: inbound, interval: didcomm.recoveryInterval, logger: logger),
            didcomm: didcommServer, rpc: rpcServer)
        let delivery = configuration.delivery
        if delivery.enabled {
            order.delivery = OutboxDeliveryService(
                database: database, contexts: contexts,
                delivery: HTTPDelivery(
                    configuration: HTTPDelivery.Configuration(
                        addresses: outbound.peerAddresses, trustedCertificates: outbound.tlsCAFile, threads: delivery.concurrency)),
                limits: DeliveryLimits(concurrency: delivery.concurrency, perDestination: delivery.perDestination),
                inbound: inbound, hooks: hooks, wakeup: wakeup, instance: configuration.instanceName,
                leaseSeconds: delivery.leaseSeconds, ready: { _ = try await didcommServer.listeningPort() },
                retry: delivery.retry, pollInterval: delivery.pollInterval, logger: logger)
        }
        if let interval = configuration.secrets.sealingSweepInterval {
            order.sealingSweep = SealingMigrationService(database: database, contexts: contexts, interval: interval, logger: logger)
        }
        if let days = configuration.tenants.messageRetentionDays {
            order.retention = MailboxRetentionService(
                database: database, retention: .seconds(days * 86_400), interval: configuration.tenants.retentionSweepInterval,
                logger: logger)
        }
        if let listen = configuration.operations.metricsListen {
            let (listener, drainSignal) = operatorEndpoint(
                listen, rpcServer: rpcServer, database: database, events: events.hub, logger: logger)
            order.operatorEndpoint = listener
            order.drainSignal = drainSignal
        }
        return order
    }

    /// The methods every server has: system, session, admin, tenant archives, backends, events.
    static func coreMethods(
        _ configuration: AerieConfiguration, database: AerieDatabase, masterKeys: MasterKeyring,
        authenticator: TenantAuthenticator, events: EventWiring, webhookDestinations: URLResolver
    ) -> [any AeriePlugin] {
        var admin = AdminMethods(database: database, masterKeys: masterKeys)
        admin.credentialChanged = { [hub = events.hub] id, current in hub.credentialChanged(tenant: id, current: current) }
        var archives = TenantArchiveMethods(
            database: database, transfers: TenantArchiveTransfers(database: database, masterKeys: masterKeys),
            movedKeysGrace: configuration.tenants.movedGraceSeconds)
        archives.credentialChanged = admin.credentialChanged
        archives.tenantSelfExport = configuration.tenants.selfExport
        return [
            SystemPlugin(version: version), SessionMethods(authenticator: authenticator), admin, archives,
            BackendMethods(
                database: database,
                webhooks: WebhookAdministration(
                    masterKeys: masterKeys, destinations: webhookDestinations, allowHTTP: configuration.webhooks.allowHTTP,
                    delivery: events.webhooks)),
            EventMethods(streams: events.streams),
        ]
    }

    /// The operator endpoint on `listen` (/metrics, /healthz, /readyz), and the service that
    /// turns `/readyz` to 503 when the drain begins.
    static func operatorEndpoint(
        _ listen: AerieConfiguration.ListenAddress, rpcServer: RPCServer, database: AerieDatabase, events: EventHub, logger: Logger
    ) -> (HTTPListener, DrainSignalService) {
        let readiness = Readiness()
        let endpoint = OperatorEndpoint(
            sampler: MetricsSampler(rpcServer: rpcServer, database: database, events: events),
            database: database, events: events, readiness: readiness)
        let listener = HTTPListener(
            configuration: HTTPListener.Configuration(host: listen.host, port: listen.port, limits: .operator),
            name: "operator HTTP (metrics, health)", logger: logger, handler: endpoint.answer)
        return (listener, DrainSignalService(readiness: readiness))
    }
}
