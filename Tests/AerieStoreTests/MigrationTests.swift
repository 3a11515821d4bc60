import AerieCore
import AerieStore
import AerieTesting
import Foundation
import Logging
import Testing

@Suite(.timeLimit(.minutes(10))) struct MigrationTests {
    private var expectedVersions: [Int] {
        get throws { try Migration.all(in: SchemaLocator.defaultDirectory(), plugins: TestDatabase.pluginMigrations).map(\.version) }
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

    /// An upgrade of a database in use: every migration but the last, rows written by the
    /// runtime role as the previous release would, then the last migration; the rows still read
    /// back, per tenant, and new ones can be written.
    /// schema/0020 starts each tenant's quota counts from what is already stored.
    @Test func quotaCountsStartFromStoredRows() async throws {
        try await StoreFixture.withDatabase(migrate: false) { database in
            let (superuser, a, b) = try await Self.twoTenants(database, migratedThrough: 19)
            _ = try await superuser.withSession { session in
                for index in 0..<3 {
                    try session.execute(
                        """
                        INSERT INTO aerie.mailbox (tenant_id, uid, recipient_verkey, message_id, type, payload)
                        VALUES ($1::uuid, gen_random_uuid(), 'K', $2, 't', '{"content":"x"}')
                        """, [.text(a.rawValue), .text("m\(index)")])
                }
                for status in ["pending", "pending", "sent"] {
                    try session.execute(
                        "INSERT INTO aerie.outbox (tenant_id, id, endpoint, envelope, status) VALUES ($1::uuid, gen_random_uuid(), 'http://p', '\\x00', $2)",
                        [.text(a.rawValue), .text(status)])
                }
                return 0
            }
            // Through 20: schema/0034 drops the outbox count (the quota counts the rows themselves).
            _ = try await database.migrator().migrate(through: 20)
            let rows = try await superuser.withSession { session in
                try session.query(
                    "SELECT tenant_id::text, mailbox_messages::text, outbox_pending::text, (mailbox_bytes > 0)::text FROM aerie.tenant_usage ORDER BY mailbox_messages DESC"
                ).allRows()
            }
            await superuser.shutdown()
            #expect(rows.count == 2, "\(rows)")
            #expect(rows.first == [a.rawValue, "3", "2", "true"], "\(rows)")
            #expect(rows.last == [b.rawValue, "0", "0", "false"], "\(rows)")
        }
    }

    /// schema/0071 keeps each tenant's count as its first stripe: after it the sums are the
    /// counts before, per tenant, and new messages count on.
    @Test func stripedUsageKeepsTheCounts() async throws {
        try await StoreFixture.withDatabase(migrate: false) { database in
            let (superuser, a, b) = try await Self.twoTenants(database, migratedThrough: 69)
            let insert: @Sendable (TenantID, String) async throws -> Void = { tenant, id in
                _ = try await superuser.withSession { session in
                    try session.execute(
                        """
                        INSERT INTO aerie.mailbox (tenant_id, uid, recipient_verkey, message_id, type, payload)
                        VALUES ($1::uuid, gen_random_uuid(), 'K', $2, 't', '{"content":"x"}')
                        """, [.text(tenant.rawValue), .text(id)])
                }
            }
            for index in 0..<3 { try await insert(a, "m\(index)") }
            try await insert(b, "m0")
            _ = try await database.migrator().migrate()
            let sums: @Sendable () async throws -> [[String?]] = {
                try await superuser.withSession { session in
                    try session.query(
                        "SELECT tenant_id::text, sum(mailbox_messages)::text FROM aerie.tenant_usage WHERE tenant_id IN ($1::uuid, $2::uuid) GROUP BY 1 ORDER BY 2 DESC",
                        [.text(a.rawValue), .text(b.rawValue)]
                    ).allRows()
                }
            }
            #expect(try await sums() == [[a.rawValue, "3"], [b.rawValue, "1"]])
            try await insert(a, "m3")
            #expect(try await sums() == [[a.rawValue, "4"], [b.rawValue, "1"]])
            await superuser.shutdown()
        }
    }

    /// schema/0076 changes the mailbox trigger's body and adds the announcement after commit:
    /// after it each tenant's count goes on from its stripes, and a message stored without
    /// asking for it is announced at its commit, for its own tenant, as before.
    @Test func messageEventsAfterCommitKeepCountsAndEvents() async throws {
        try await StoreFixture.withDatabase(migrate: false) { database in
            let (superuser, a, b) = try await Self.twoTenants(database, migratedThrough: 73)
            let insert: @Sendable (TenantID, String) async throws -> Void = { tenant, id in
                _ = try await superuser.withSession { session in
                    try session.execute(
                        """
                        INSERT INTO aerie.mailbox (tenant_id, uid, recipient_verkey, message_id, type, payload)
                        VALUES ($1::uuid, gen_random_uuid(), 'K', $2, 't', '{"content":"x"}')
                        """, [.text(tenant.rawValue), .text(id)])
                }
            }
            for index in 0..<2 { try await insert(a, "m\(index)") }
            try await insert(b, "m0")
            #expect(try await database.migrator().migrate().contains(76))
            let heard = StoreFixture.Heard()
            let listener = PostgresEventListener(
                conninfo: database.superuserConninfo, channel: "aerie_events", logger: Logger(label: "test")
            ) { payload in heard.payloads.withLock { $0.append(payload) } }
            listener.start()
            defer { listener.stop() }
            for _ in 0..<500 where !listener.isListening { try await Task.sleep(for: .milliseconds(20)) }
            try await insert(a, "m2")
            try await insert(b, "m1")
            let tenants = try await heard.parsed(kind: "message", atLeast: 2).compactMap { $0["tenant"]?.stringValue }
            #expect(tenants == [a.rawValue, b.rawValue])
            let sums = try await superuser.withSession { session in
                try session.query(
                    "SELECT tenant_id::text, sum(mailbox_messages)::text FROM aerie.tenant_usage WHERE tenant_id IN ($1::uuid, $2::uuid) GROUP BY 1 ORDER BY 2 DESC",
                    [.text(a.rawValue), .text(b.rawValue)]
                ).allRows()
            }
            #expect(sums == [[a.rawValue, "3"], [b.rawValue, "2"]])
            await superuser.shutdown()
        }
    }

    /// `database` migrated through `version`, two tenants in it (rows of `aerie.tenants`, written
    /// as the superuser) and the superuser's pool: where a test of a later migration starts.
    static func twoTenants(_ database: TestDatabase, migratedThrough version: Int) async throws
        -> (superuser: AerieDatabase, a: TenantID, b: TenantID)
    {
        var quiet = Logger(label: "test")
        quiet.logLevel = .warning
        _ = try await database.migrator().migrate(through: version)
        let superuser = AerieDatabase(
            configuration: DatabaseConfiguration(conninfo: database.superuserConninfo, maxConnections: 1), logger: quiet)
        let (a, b) = (TenantID.random(), TenantID.random())
        _ = try await superuser.withSession { session in
            for id in [a, b] {
                try session.execute(
                    "INSERT INTO aerie.tenants (id, label, token_hash, data_key_wrapped, master_key_fingerprint) VALUES ($1::uuid, 'T', $2, $3, 'm')",
                    [.text(id.rawValue), .bytes(randomBytes(32)), .bytes(randomBytes(72))])
            }
            return 0
        }
        return (superuser, a, b)
    }

    /// schema/0032 removes the outbox rows an earlier release kept after delivering them, and only
    /// those: pending and failed rows stay, in both tenants, and the pending counts are unchanged.
    @Test func deliveredOutboxRowsKeptByAnEarlierReleaseGo() async throws {
        try await StoreFixture.withDatabase(migrate: false) { database in
            let (superuser, a, b) = try await Self.twoTenants(database, migratedThrough: 31)
            let state: @Sendable () async throws -> [[String?]] = {
                try await superuser.withSession { session in
                    try session.query(
                        """
                        SELECT o.tenant_id::text, string_agg(o.status, ',' ORDER BY o.status), min(u.outbox_pending)::text
                        FROM aerie.outbox o JOIN aerie.tenant_usage u USING (tenant_id) GROUP BY o.tenant_id ORDER BY 1
                        """
                    ).allRows()
                }
            }
            _ = try await superuser.withSession { session in
                for id in [a, b] {
                    for status in ["pending", "sent", "sent", "failed"] {
                        try session.execute(
                            "INSERT INTO aerie.outbox (tenant_id, id, endpoint, envelope) VALUES ($1::uuid, gen_random_uuid(), 'http://p', '\\x00')",
                            [.text(id.rawValue)])
                        if status != "pending" {
                            // Ended as the previous release ended it: an update of the status.
                            try session.execute(
                                "UPDATE aerie.outbox SET status = $2 WHERE tenant_id = $1::uuid AND status = 'pending' AND id = (SELECT id FROM aerie.outbox WHERE tenant_id = $1::uuid AND status = 'pending' LIMIT 1)",
                                [.text(id.rawValue), .text(status)])
                        }
                    }
                }
                return 0
            }
            let before = try await state()
            #expect(before == [a, b].map(\.rawValue).sorted().map { [$0, "failed,pending,sent,sent", "1"] }, "\(before)")
            // Through 32: schema/0034 drops the pending count this compares.
            _ = try await database.migrator().migrate(through: 32)
            let after = try await state()
            await superuser.shutdown()
            #expect(after == [a, b].map(\.rawValue).sorted().map { [$0, "failed,pending", "1"] }, "\(after)")
        }
    }

    /// schema/0043 removes the outbox rows an earlier release kept after they failed for good, and
    /// only those: pending rows stay, in both tenants.
    @Test func failedOutboxRowsKeptByAnEarlierReleaseGo() async throws {
        try await StoreFixture.withDatabase(migrate: false) { database in
            let (superuser, a, b) = try await Self.twoTenants(database, migratedThrough: 42)
            let state: @Sendable () async throws -> [[String?]] = {
                try await superuser.withSession { session in
                    try session.query(
                        "SELECT tenant_id::text, string_agg(status, ',' ORDER BY status) FROM aerie.outbox GROUP BY tenant_id ORDER BY 1"
                    ).allRows()
                }
            }
            _ = try await superuser.withSession { session in
                for id in [a, b] {
                    for status in ["pending", "failed", "failed", "pending"] {
                        try session.execute(
                            "INSERT INTO aerie.outbox (tenant_id, id, endpoint, envelope, status) VALUES ($1::uuid, gen_random_uuid(), 'http://p', '\\x00', $2)",
                            [.text(id.rawValue), .text(status)])
                    }
                }
                return 0
            }
            #expect(try await state() == [a, b].map(\.rawValue).sorted().map { [$0, "failed,failed,pending,pending"] })
            _ = try await database.migrator().migrate(through: 43)
            let after = try await state()
            await superuser.shutdown()
            #expect(after == [a, b].map(\.rawValue).sorted().map { [$0, "pending,pending"] }, "\(after)")
        }
    }

    @Test func theLastMigrationKeepsRowsWrittenBeforeIt() async throws {
        try await StoreFixture.withDatabase(migrate: false) { database in
            let versions = try expectedVersions
            try #require(versions.count >= 2)
            #expect(try await database.migrator().migrate(through: versions[versions.count - 2]) == Array(versions.dropLast()))

            let first = database.runtime()
            // Tenants as the previous release wrote them: its columns only (today's code writes
            // columns the previous schema does not have yet).
            let (a, b) = (TenantID.random(), TenantID.random())
            for (id, label) in [(a, "A"), (b, "B")] {
                _ = try await first.withSession { session in
                    try session.execute(
                        """
                        INSERT INTO aerie.tenants (id, label, token_hash, data_key_wrapped, master_key_fingerprint)
                        VALUES ($1::uuid, $2, $3, $4, 'm')
                        """,
                        [.text(id.rawValue), .text(label), .bytes(randomBytes(32)), .bytes(randomBytes(72))])
                }
            }
            // Rows as the previous release wrote them, in SQL: today's repositories write columns
            // the previous schema does not have yet.
            let row = (id: UUID(), bId: UUID())
            _ = try await first.withSession { session in
                for (tenant, values) in [
                    (a, "($1::uuid, $2::uuid, 'requested', '{\"@id\": \"inv-old\"}', 'connections/1.0', 'inv-old', 'DID-OLD', 'KEY-OLD', 'MYDID-OLD', 'MYVERKEY-OLD', 'req-old')"),
                    (b, "($1::uuid, $2::uuid, 'initialized', '{\"@id\": \"inv-b\"}', 'connections/1.0', 'inv-b', NULL, 'KEY-B', NULL, NULL, NULL)"),
                ] {
                    try session.execute("SELECT set_config('aerie.tenant_id', $1, false)", [.text(tenant.rawValue)])
                    try session.execute(
                        """
                        INSERT INTO aerie.connections (tenant_id, id, state, invitation, invitation_kind, invitation_id,
                            public_did, first_recipient_key, my_did, my_verkey, thread_id)
                        VALUES \(values)
                        """,
                        [.text(tenant.rawValue), .text((tenant == a ? row.id : row.bId).uuidString)])
                }
                try session.execute("SELECT set_config('aerie.tenant_id', $1, false)", [.text(a.rawValue)])
                try session.execute(
                    "INSERT INTO aerie.tenant_settings (tenant_id, key, value) VALUES ($1::uuid, 'before-upgrade', '\"kept\"')",
                    [.text(a.rawValue)])
                try session.execute("SELECT set_config('aerie.tenant_id', '', false)")
            }
            await first.shutdown()

            #expect(try await database.migrator().migrate() == [try #require(versions.last)])
            #expect(try await database.migrator().appliedVersions() == versions)

            let upgraded = database.runtime()
            do {
                #expect(try await upgraded.tenants.get(a)?.label == .clear("A"))
                let tenantA = upgraded.sealed(a)
                let loaded = try #require(try await tenantA.transaction { try $0.connections.get(row.id) })
                #expect(loaded.state == .requested)
                #expect(loaded.invitation == ["@id": "inv-old"])
                #expect(loaded.myVerkey == "MYVERKEY-OLD" && loaded.threadId == "req-old" && loaded.publicDid == "DID-OLD")
                #expect(try await tenantA.transaction { try $0.connections.findByMyVerkey("MYVERKEY-OLD") }?.id == row.id)
                #expect(
                    try await tenantA.transaction {
                        try $0.connections.findMatching(invitationId: "other", publicDid: "DID-OLD", firstRecipientKey: nil)
                    }?.id == row.id)
                let settings = try await tenantA.transaction { try $0.settings.list(after: nil, limit: 10) }
                #expect(settings.count == 1, "\(settings)")
                // Still one tenant's rows per tenant.
                let bList = try await upgraded.sealed(b).transaction { try $0.connections.list(after: nil, state: nil, limit: 10) }
                #expect(bList.map(\.id) == [row.bId])
                // The upgraded schema takes new rows too.
                let fresh = ConnectionStoreTests.record(invitationId: "inv-new", key: "KEY-NEW")
                try await tenantA.transaction { try $0.connections.insert(fresh) }
                let aList = try await tenantA.transaction { try $0.connections.list(after: nil, state: nil, limit: 10) }
                #expect(Set(aList.map(\.id)) == [row.id, fresh.id])
            } catch {
                await upgraded.shutdown()
                throw error
            }
            await upgraded.shutdown()
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

    /// Plugins' migrations join `schema/`'s in one version order; a version used twice, by a
    /// file and a plugin or by two plugins, stops the migrator with both named.
    @Test func pluginMigrationsMergeWithTheSchemaInVersionOrder() throws {
        let directory = try temporarySchema(["0001_first.sql": "", "0003_third.sql": ""])
        defer { try? FileManager.default.removeItem(at: directory) }
        let second = Migration(SchemaMigration(version: 2, name: "plugin_table", sql: "SELECT 1"), plugin: "example")
        let merged = try Migration.all(in: directory, plugins: [second])
        #expect(merged.map(\.version) == [1, 2, 3])
        #expect(try merged[1].sql() == "SELECT 1" && merged[1].origin == "0002_plugin_table of plugin example")

        let clash = Migration(SchemaMigration(version: 3, name: "other", sql: ""), plugin: "example")
        #expect {
            try Migration.all(in: directory, plugins: [clash])
        } throws: { error in
            let text = "\(error)"
            return text.contains("0003_third.sql") && text.contains("0003_other of plugin example")
        }
        #expect(throws: DatabaseSetupError.self) { try Migration.all(in: directory, plugins: [second, second]) }
        // The shipped ones: the out-of-band plugin's table keeps the version its file had.
        let shipped = try Migration.all(in: SchemaLocator.defaultDirectory(), plugins: TestDatabase.pluginMigrations)
        #expect(shipped.first { $0.version == 6 }?.name == "out_of_band")
        #expect(!FileManager.default.fileExists(atPath: SchemaLocator.defaultDirectory().appendingPathComponent("0006_out_of_band.sql").path))
    }

    @Test func schemaLocatorPrefersEnvironment() throws {
        let configured = SchemaLocator.defaultDirectory(environment: ["AERIE_SCHEMA_DIR": "/somewhere/schema"])
        #expect(configured.path == "/somewhere/schema")
        let fromCheckout = SchemaLocator.defaultDirectory(environment: [:])
        #expect(FileManager.default.fileExists(atPath: fromCheckout.appendingPathComponent("0001_tenants.sql").path))
        // Run from elsewhere (a working directory without schema/), the server and aerie-admin
        // fall back to the checkout they were built from, whichever file calls the locator.
        let checkout = SchemaLocator.checkoutDirectory()
        #expect(FileManager.default.fileExists(atPath: checkout.appendingPathComponent("0001_tenants.sql").path), "\(checkout.path)")
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
