/// What a plugin adds to the store: the tables it owns (their migrations), the repositories over
/// them (written against `TenantSQL`), and its part in the store's upkeep. Declared on the plugin
/// type (`AeriePlugin.storage`), not registered by a built plugin, so the schema and the upkeep do
/// not depend on `AERIE_PLUGINS`: a table's rows are still deleted with their connection and still
/// sealed by the background re-encryption while its plugin is off.
public struct PluginStorage: Sendable {
    /// Migrations of the plugin's tables; the migrator applies them with the core's `schema/`, in
    /// version order, each version once (a version is unique across the core and every plugin).
    public var migrations: [SchemaMigration]
    /// The repositories `TenantTransaction.repository(_:)` finds by type while the plugin is enabled.
    public var repositories: [RepositoryProvider]
    /// Kinds of the plugin's rows that belong to a connection and go with it.
    public var connectionData: [ConnectionData]
    /// Rewrites up to `limit` of the plugin's rows still in a previous release's clear form
    /// sealed; answers how many (`TenantTransaction.sealClearRows`).
    public var sealClearRows: (@Sendable (any TenantTransaction, _ limit: Int) throws -> Int)?
    /// The plugin's tables that hold sealed values, and how (what a tenant import seals anew).
    public var sealedTables: [SealedTable]

    public init(
        migrations: [SchemaMigration] = [], repositories: [RepositoryProvider] = [], connectionData: [ConnectionData] = [],
        sealClearRows: (@Sendable (any TenantTransaction, _ limit: Int) throws -> Int)? = nil, sealedTables: [SealedTable] = []
    ) {
        self.migrations = migrations
        self.repositories = repositories
        self.connectionData = connectionData
        self.sealClearRows = sealClearRows
        self.sealedTables = sealedTables
    }

    /// A plugin with no tables.
    public static let none = PluginStorage()
}

/// One numbered schema change a plugin ships as SQL text (compiled in, so a deployment has
/// nothing more to copy than `schema/`). Runs as the owner role inside one transaction, like the
/// files of `schema/`; the same rules hold (tenant tables lead with `tenant_id`, enable and force
/// row-level security, grant to `aerie_runtime`). A version, once released, never changes: a
/// database records it as applied.
public struct SchemaMigration: Sendable, Hashable {
    public var version: Int
    public var name: String
    public var sql: String

    public init(version: Int, name: String, sql: String) {
        self.version = version
        self.name = name
        self.sql = sql
    }
}

/// How to build a repository of type `R` (usually a protocol the plugin declares) inside a tenant
/// transaction.
public struct RepositoryProvider: Sendable {
    let type: ObjectIdentifier
    let typeName: String
    let factory: any RepositoryFactory

    public init<R>(_ type: R.Type, make: @escaping @Sendable (any TenantTransaction) -> R) {
        self.type = ObjectIdentifier(type)
        self.typeName = String(describing: type)
        self.factory = TypedRepositoryFactory(make: make)
    }
}

protocol RepositoryFactory: Sendable {}

/// Keeps the factory's result type, so a lookup casts the factory (a class identity check) and
/// never the repository (an existential conversion).
final class TypedRepositoryFactory<R>: RepositoryFactory {
    let make: @Sendable (any TenantTransaction) -> R
    init(make: @escaping @Sendable (any TenantTransaction) -> R) { self.make = make }
}

/// The storage of every plugin the server knows, and which of them are enabled: what a tenant
/// transaction looks repositories up in, and the upkeep hooks it runs. Built once at start-up
/// (`AerieDatabase` holds it); lookups are one dictionary probe by type identity.
public struct PluginStores: Sendable {
    struct Entry: Sendable {
        let plugin: String
        let enabled: Bool
        let provider: RepositoryProvider
    }

    private let repositories: [ObjectIdentifier: Entry]
    /// Every registered plugin's connection data, enabled or not.
    public let connectionData: [ConnectionData]
    /// Every registered plugin's sealed tables, enabled or not.
    public let sealedTables: [SealedTable]
    private let clearRowSealers: [@Sendable (any TenantTransaction, Int) throws -> Int]

    /// No plugin storage (a database used only by the core, e.g. `aerie-admin`'s).
    public init() {
        repositories = [:]
        connectionData = []
        sealedTables = []
        clearRowSealers = []
    }

    /// `plugins`: every plugin the server knows, by name, with its storage and whether it runs.
    /// A repository type provided twice, or a kind of connection data named twice (the deletion
    /// counts rows by kind), is a start-up error.
    public init(_ plugins: [(name: String, storage: PluginStorage, enabled: Bool)]) throws {
        var repositories: [ObjectIdentifier: Entry] = [:]
        var kinds = Set(ConnectionData.all(plugins: []).map(\.kind) + ["connections"])
        for plugin in plugins {
            for data in plugin.storage.connectionData where !kinds.insert(data.kind).inserted {
                throw RouterError(message: "connection data '\(data.kind)' is named twice (the second by '\(plugin.name)')")
            }
            for provider in plugin.storage.repositories {
                if let existing = repositories[provider.type] {
                    throw RouterError(
                        message: "repository \(provider.typeName) is provided twice (by '\(existing.plugin)' and '\(plugin.name)')")
                }
                repositories[provider.type] = Entry(plugin: plugin.name, enabled: plugin.enabled, provider: provider)
            }
        }
        self.repositories = repositories
        connectionData = plugins.flatMap(\.storage.connectionData)
        sealedTables = plugins.flatMap(\.storage.sealedTables)
        clearRowSealers = plugins.compactMap(\.storage.sealClearRows)
    }

    /// The repository of type `R` over `transaction`. Throws `unavailable` when the plugin that
    /// provides it is not enabled, `internal_error` when no plugin provides it.
    public func repository<R>(_ type: R.Type, in transaction: any TenantTransaction) throws -> R {
        guard let entry = repositories[ObjectIdentifier(type)] else {
            throw AerieError.internalError(details: "no plugin provides the repository \(type)")
        }
        guard entry.enabled else {
            throw AerieError(
                .unavailable, "the '\(entry.plugin)' plugin is not enabled on this server (AERIE_PLUGINS)",
                details: "repository \(type) belongs to the '\(entry.plugin)' plugin")
        }
        guard let factory = entry.provider.factory as? TypedRepositoryFactory<R> else {
            throw AerieError.internalError(details: "the provider of \(type) builds another type")
        }
        return factory.make(transaction)
    }

    /// Runs every plugin's clear-row sealing; answers how many rows they rewrote.
    public func sealClearRows(in transaction: any TenantTransaction, limit: Int) throws -> Int {
        try clearRowSealers.reduce(0) { try $0 + $1(transaction, limit) }
    }
}
