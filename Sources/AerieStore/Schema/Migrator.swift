import AerieCore
import Foundation
import Logging
import NIOPosix

/// Applies the numbered SQL files of `schema/` and the plugins' migrations as the owner role:
/// each exactly once, in one version order (a plugin's table may come before a core file that
/// alters it), each in its own transaction, recorded in `aerie.schema_migrations`.
///
/// A session-level advisory lock serialises migrators, so several servers starting at once
/// against one database neither race nor fail: the first applies, the others find nothing left.
/// Files run inside `BEGIN`/`COMMIT`, so they must not use statements that refuse a transaction
/// block (such as `CREATE INDEX CONCURRENTLY`).
public struct Migrator: Sendable {
    public var ownerConninfo: String
    public var schemaDirectory: URL
    /// Every plugin's migrations, enabled or not (`PluginStorage.migrations`).
    public var pluginMigrations: [Migration]
    public var logger: Logger

    /// Arbitrary but fixed: "aerie_mg" in ASCII. Advisory locks are per database.
    static let advisoryLockKey: Int64 = 0x6165_7269_655F_6D67

    public init(ownerConninfo: String, schemaDirectory: URL, pluginMigrations: [Migration] = [], logger: Logger) {
        self.ownerConninfo = ownerConninfo
        self.schemaDirectory = schemaDirectory
        self.pluginMigrations = pluginMigrations
        self.logger = logger
    }

    /// Every migration this migrator knows, in version order.
    public func migrations() throws -> [Migration] {
        try Migration.all(in: schemaDirectory, plugins: pluginMigrations)
    }

    /// Applies what is missing (up to version `last`, when given: a database as an earlier
    /// release left it, for upgrade tests) and returns the versions applied now (empty when up
    /// to date).
    @discardableResult
    public func migrate(through last: Int? = nil) async throws -> [Int] {
        let all = try migrations()
        let migrations = last.map { last in all.filter { $0.version <= last } } ?? all
        let scripts = try migrations.map { try $0.sql() }
        let pending = zip(migrations, scripts).map { (migration: $0, sql: $1) }
        return try await NIOThreadPool.singleton.runIfActive { [self] in
            try withLockedConnection { connection in
                let applied = try Self.appliedVersions(connection)
                if let newest = applied.max(), let known = all.last?.version, newest > known {
                    logger.warning(
                        "database schema is newer than this build's migrations",
                        metadata: ["database": "\(newest)", "build": "\(known)"])
                }
                var appliedNow: [Int] = []
                for (migration, sql) in pending where !applied.contains(migration.version) {
                    try apply(migration, sql: sql, on: connection)
                    appliedNow.append(migration.version)
                }
                return appliedNow
            }
        }
    }

    /// The versions recorded in `aerie.schema_migrations`, ascending.
    public func appliedVersions() async throws -> [Int] {
        try await NIOThreadPool.singleton.runIfActive { [self] in
            try withLockedConnection { try Self.appliedVersions($0).sorted() }
        }
    }

    // MARK: - Blocking parts (on a thread-pool thread)

    private func withLockedConnection<T>(_ body: (PostgresConnection) throws -> T) throws -> T {
        let connection: PostgresConnection
        do {
            connection = try PostgresConnection(conninfo: ownerConninfo)
        } catch {
            throw DatabaseSetupError("cannot connect as the database owner role to migrate: \(error)")
        }
        defer { connection.close() }
        do {
            try connection.query("SELECT pg_advisory_lock($1::int8)", [.text(String(Self.advisoryLockKey))])
            try connection.script(
                """
                CREATE SCHEMA IF NOT EXISTS aerie;
                CREATE TABLE IF NOT EXISTS aerie.schema_migrations (
                    version    integer     PRIMARY KEY,
                    name       text        NOT NULL,
                    applied_at timestamptz NOT NULL DEFAULT now()
                );
                """)
        } catch {
            throw DatabaseSetupError("cannot prepare schema aerie for migrations: \(error)")
        }
        // Closing the connection releases the lock too; unlocking keeps it tidy for a reused session.
        defer { _ = try? connection.query("SELECT pg_advisory_unlock($1::int8)", [.text(String(Self.advisoryLockKey))]) }
        return try body(connection)
    }

    private static func appliedVersions(_ connection: PostgresConnection) throws -> Set<Int> {
        let result = try connection.query("SELECT version FROM aerie.schema_migrations")
        return Set((0..<result.rowCount).compactMap { result.int($0, 0) })
    }

    private func apply(_ migration: Migration, sql: String, on connection: PostgresConnection) throws {
        let started = ContinuousClock.now
        do {
            try connection.script("BEGIN")
            try connection.script(sql)
            try connection.query(
                "INSERT INTO aerie.schema_migrations (version, name) VALUES ($1::int4, $2)",
                [.int(migration.version), .text(migration.name)])
            try connection.script("COMMIT")
        } catch {
            _ = try? connection.script("ROLLBACK")
            throw DatabaseSetupError("migration \(migration.origin) failed: \(error)")
        }
        logger.info(
            "applied database migration",
            metadata: [
                "version": "\(migration.version)", "name": "\(migration.name)",
                "duration": "\(ContinuousClock.now - started)",
            ])
    }
}
