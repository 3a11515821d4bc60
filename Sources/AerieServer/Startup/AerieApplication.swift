import AerieCore
import AerieCrypto
import AerieRPC
import AerieStore
import AerieTransport
import Foundation
import Logging
import ServiceLifecycle

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
        try makeHome(configuration)
        let cluster = try await startCluster(configuration, logger: logger)
        do {
            let selected = try PluginRegistry.standard.select(configuration.plugins)
            let database = try await openDatabase(
                configuration, cluster: cluster, selected: selected, extraPlugins: extraPlugins, logger: logger)
            let masterKeys = try await loadMasterKeys(configuration, database: database, logger: logger)
            let adminTokenFile = configuration.home.appendingPathComponent("admin-token")
            try await initializeAdminToken(database: database, file: adminTokenFile, logger: logger)
            let order = try wireServices(
                configuration, cluster: cluster, database: database, masterKeys: masterKeys, selected: selected,
                extraPlugins: extraPlugins, logger: logger)
            return Prepared(
                rpcServer: order.rpc, didcommServer: order.didcomm, operatorServer: order.operatorEndpoint,
                services: order.services, database: database, adminTokenFile: adminTokenFile)
        } catch {
            if let embedded = cluster.embedded { try? await embedded.stop() }
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
        try await withCluster(configuration, logger: logger) { cluster in
            try await Migrator(
                ownerConninfo: cluster.ownerURL, schemaDirectory: schemaDirectory, pluginMigrations: pluginMigrations, logger: logger
            ).migrate()
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
