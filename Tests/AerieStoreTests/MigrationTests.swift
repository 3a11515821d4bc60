import AerieStore
import AerieTesting
import Foundation
import Logging
import Testing

@Suite struct MigrationTests {
    private var expectedVersions: [Int] {
        get throws { try Migration.all(in: SchemaLocator.defaultDirectory()).map(\.version) }
    }

    @Test func freshDatabaseReachesLatestVersionAndSecondRunIsNoOp() async throws {
        try await StoreFixture.withDatabase(migrate: false) { database in
            let migrator = database.migrator()
            let expected = try expectedVersions
            #expect(!expected.isEmpty)
            #expect(try await migrator.migrate() == expected)
            #expect(try await migrator.appliedVersions() == expected)
            #expect(try await migrator.migrate() == [])
            #expect(try await migrator.appliedVersions() == expected)
        }
    }

    @Test func concurrentMigratorsApplyEachVersionOnce() async throws {
        try await StoreFixture.withDatabase(migrate: false) { database in
            let migrator = database.migrator()
            let results = try await withThrowingTaskGroup(of: [Int].self) { group in
                for _ in 0..<4 { group.addTask { try await migrator.migrate() } }
                return try await group.reduce(into: [[Int]]()) { $0.append($1) }
            }
            #expect(results.flatMap { $0 }.sorted() == (try expectedVersions))
            #expect(try await migrator.appliedVersions() == (try expectedVersions))
        }
    }

    @Test func failingMigrationRollsBackAndStopsThere() async throws {
        try await StoreFixture.withDatabase(migrate: false) { database in
            let directory = try temporarySchema([
                "0001_first.sql": "CREATE TABLE aerie.first (id int PRIMARY KEY);",
                "0002_broken.sql": "CREATE TABLE aerie.second (id int); SELECT no_such_function();",
                "0003_never.sql": "CREATE TABLE aerie.third (id int);",
            ])
            defer { try? FileManager.default.removeItem(at: directory) }
            var quiet = Logger(label: "test")
            quiet.logLevel = .warning
            let migrator = Migrator(
                ownerConninfo: database.ownerConninfo, schemaDirectory: directory, logger: quiet)
            await #expect(throws: DatabaseSetupError.self) { try await migrator.migrate() }
            #expect(try await migrator.appliedVersions() == [1])
            let tables = try await TestDatabaseQuery.rows(
                database.superuserConninfo,
                "SELECT tablename FROM pg_tables WHERE schemaname = 'aerie' ORDER BY tablename")
            #expect(tables == [["first"], ["schema_migrations"]])
        }
    }

    @Test func migrationFilesAreOrderedAndValidated() throws {
        let directory = try temporarySchema([
            "0010_later.sql": "", "0002_second.sql": "", "README.md": "", "notes.sql": "", "0001-first.sql": "",
        ])
        defer { try? FileManager.default.removeItem(at: directory) }
        let migrations = try Migration.all(in: directory)
        #expect(migrations.map(\.version) == [1, 2, 10])
        #expect(migrations.map(\.name) == ["first", "second", "later"])

        let duplicate = try temporarySchema(["0001_a.sql": "", "01_b.sql": ""])
        defer { try? FileManager.default.removeItem(at: duplicate) }
        #expect(throws: DatabaseSetupError.self) { try Migration.all(in: duplicate) }
    }

    @Test func schemaLocatorPrefersEnvironment() throws {
        let configured = SchemaLocator.defaultDirectory(environment: ["AERIE_SCHEMA_DIR": "/somewhere/schema"])
        #expect(configured.path == "/somewhere/schema")
        let fromCheckout = SchemaLocator.defaultDirectory(environment: [:])
        #expect(FileManager.default.fileExists(atPath: fromCheckout.appendingPathComponent("0001_tenants.sql").path))
    }

    private func temporarySchema(_ files: [String: String]) throws -> URL {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("aerie-schema-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        for (name, contents) in files {
            try contents.write(to: directory.appendingPathComponent(name), atomically: true, encoding: .utf8)
        }
        return directory
    }
}

/// One-off queries on a connection string, for inspection.
enum TestDatabaseQuery {
    static func rows(_ conninfo: String, _ sql: String, _ parameters: [SQLValue] = []) async throws -> [[String?]] {
        try await withPool(conninfo) { pool in
            try await pool.withSession { try $0.query(sql, parameters).allRows() }
        }
    }
}
