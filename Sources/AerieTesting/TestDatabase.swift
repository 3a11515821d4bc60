import AerieCore
import AerieServer
import AerieStore
import Foundation
import Logging

/// One throwaway database in the shared test cluster, with connection strings for each role.
public struct TestDatabase: Sendable {
    public let name: String
    /// `aerie_owner`: what migrations run as.
    public let ownerConninfo: String
    /// `aerie_app` (member of `aerie_runtime`): what the server runs as.
    public let runtimeConninfo: String
    /// The cluster's superuser on this database: for inspecting and breaking things in tests.
    public let superuserConninfo: String
    private let clusterSuperuserConninfo: String

    init(name: String, cluster: TestCluster) throws {
        self.name = name
        self.clusterSuperuserConninfo = cluster.superuserConninfo
        // The superuser's password (if any) is replaced by the aerie roles' own, or dropped.
        let password = cluster.password
        ownerConninfo = try ConnectionString.overriding(
            cluster.superuserConninfo, with: ["user": "aerie_owner", "dbname": name, "password": password])
        runtimeConninfo = try ConnectionString.overriding(
            cluster.superuserConninfo, with: ["user": "aerie_app", "dbname": name, "password": password])
        superuserConninfo = try ConnectionString.overriding(cluster.superuserConninfo, with: ["dbname": name])
    }

    /// A runtime-role database handle on this database (shut it down when done), with every
    /// plugin's repositories (`stores`: the server's, all plugins enabled, by default);
    /// `configure` sets what else differs from `DatabaseConfiguration`'s defaults.
    public func runtime(
        maxConnections: Int = 4, acquireTimeout: Duration = .seconds(10), stores: PluginStores = TestDatabase.allPluginStores,
        configure: (inout DatabaseConfiguration) -> Void = { _ in }
    ) -> AerieDatabase {
        var configuration = DatabaseConfiguration(
            conninfo: runtimeConninfo, maxConnections: maxConnections, acquireTimeout: acquireTimeout)
        configure(&configuration)
        return AerieDatabase(configuration: configuration, logger: quietLogger("aerie.test.database"), stores: stores)
    }

    /// The server's plugin storage with every plugin enabled.
    public static let allPluginStores: PluginStores = {
        do {
            return try AerieApplication.pluginStores()
        } catch {
            preconditionFailure("the standard plugins' storage does not build: \(error)")
        }
    }()

    /// Every plugin's migrations, as the server applies them with `schema/`.
    public static var pluginMigrations: [Migration] { AerieApplication.pluginMigrations }

    /// A migrator for this database, as the owner role: `schema/` and every plugin's migrations,
    /// as the server applies them.
    public func migrator() -> Migrator {
        Migrator(
            ownerConninfo: ownerConninfo, schemaDirectory: SchemaLocator.defaultDirectory(),
            pluginMigrations: Self.pluginMigrations, logger: quietLogger("aerie.test.migrator"))
    }

    /// Drops the database, disconnecting anyone still on it.
    public func drop() async throws {
        let name = name
        try await DatabaseProvisioner.withSuperuser(clusterSuperuserConninfo) { superuser in
            try DatabaseProvisioner.dropDatabase(superuser, name: name)
        }
    }

    func create() async throws {
        let name = name
        try await DatabaseProvisioner.withSuperuser(clusterSuperuserConninfo) { superuser in
            try DatabaseProvisioner.ensureDatabase(superuser, name: name)
        }
    }

    static func ensureRoles(superuserConninfo: String, password: String?) async throws {
        try await DatabaseProvisioner.withSuperuser(superuserConninfo) { superuser in
            try DatabaseProvisioner.ensureRoles(superuser, password: password)
        }
    }
}

/// Test loggers show warnings and errors only, so passing runs stay readable.
func quietLogger(_ label: String) -> Logger {
    var logger = Logger(label: label)
    logger.logLevel = .warning
    return logger
}
