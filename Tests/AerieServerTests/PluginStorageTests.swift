import AerieCore
import AerieCrypto
import AerieStore
import AerieTesting
import Foundation
import Logging
import OutOfBandPlugin
import Testing

@testable import AerieServer

/// Issue 11 item 5: a plugin owns its table. The out-of-band plugin's repository is written
/// against the core's SQL seam (`TenantTransaction.sql`), found by type, confined to its tenant by
/// row-level security and sealed like the store's own rows; its migration keeps the version its
/// `schema/` file had, so a database that ran the file does not run it again.
@Suite(.timeLimit(.minutes(10))) struct PluginStorageTests {
    static func record(_ invitationId: String, connection: UUID, secret: String) -> OutOfBandRecord {
        OutOfBandRecord(
            invitationId: invitationId, connectionId: connection, decisionRow: 5, state: .connecting,
            attachedMessage: ["comment": .string(secret)], invitation: ["@id": .string(invitationId), "label": .string(secret)])
    }

    @Test func aPluginRepositoryThroughTheSeamIsPerTenantAndSealed() async throws {
        try await WalletFixture.with { fixture in
            let alice = try await fixture.createTenant("alice")
            let bob = try await fixture.createTenant("bob")
            let connection = UUID()
            // One invitation `@id` for both: unique per tenant only.
            let aliceRecord = Self.record("plugin-shared-inv", connection: connection, secret: "Alice plugin secret")
            let bobRecord = Self.record("plugin-shared-inv", connection: connection, secret: "Bob plugin secret")
            try await alice.database.transaction { try $0.repository(OutOfBandRepository.self).insert(aliceRecord) }
            try await bob.database.transaction { try $0.repository(OutOfBandRepository.self).insert(bobRecord) }

            // Each tenant reads its own, in a transaction and through `read` alike.
            let aliceFound = try await alice.database.transaction {
                try $0.repository(OutOfBandRepository.self).find(invitationId: "plugin-shared-inv", forUpdate: true)
            }
            let bobFound = try await bob.database.read {
                try $0.repository(OutOfBandRepository.self).find(invitationId: "plugin-shared-inv", forUpdate: false)
            }
            #expect(aliceFound?.id == aliceRecord.id && aliceFound?.attachedMessage?["comment"] == "Alice plugin secret")
            #expect(bobFound?.id == bobRecord.id && bobFound?.invitation["label"] == "Bob plugin secret")

            // The seam's errors are the store's: a second record of one invitation is a conflict.
            let duplicate = Self.record("plugin-shared-inv", connection: connection, secret: "again")
            let conflict = await thrownError {
                try await alice.database.transaction { try $0.repository(OutOfBandRepository.self).insert(duplicate) }
            }
            #expect((conflict as? AerieError)?.code == .conflict, "\(String(describing: conflict))")

            // Bob cannot change Alice's row, even by its id.
            var changed = aliceRecord
            changed.state = .failed
            let stolen = changed
            #expect(try await bob.database.transaction { try $0.repository(OutOfBandRepository.self).update(stolen) } == false)
            // The runtime role without a tenant set sees no row at all (row-level security).
            let unscoped = try await fixture.runtime.withSession { session in
                try session.query("SELECT count(*) FROM aerie.oob_invitations").int(0, 0)
            }
            #expect(unscoped == 0)

            // At rest: nothing of either record in clear, private fields in `sealed` only.
            let rows = try await fixture.asSuperuser { session in
                try session.query(
                    "SELECT row_to_json(t)::text, sealed IS NOT NULL AND invitation_id IS NULL AND invitation IS NULL FROM aerie.oob_invitations t"
                ).allRows()
            }
            #expect(rows.count == 2 && rows.allSatisfy { $0[1] == "t" }, "\(rows)")
            SealedStorageTests.expectNoSecrets(
                ["Alice plugin secret", "Bob plugin secret", "plugin-shared-inv"], in: rows.map { $0[0] ?? "" }.joined(),
                "a superuser's SELECT of the plugin's table")

            // Alice's sealed value copied onto Bob's row does not open there.
            _ = try await fixture.asSuperuser { session in
                try session.execute(
                    "UPDATE aerie.oob_invitations SET sealed = (SELECT sealed FROM aerie.oob_invitations WHERE tenant_id = $1::uuid) WHERE tenant_id = $2::uuid",
                    [.text(alice.tenantID.rawValue), .text(bob.tenantID.rawValue)])
            }
            let moved = await thrownError {
                try await bob.database.transaction {
                    try $0.repository(OutOfBandRepository.self).find(invitationId: "plugin-shared-inv", forUpdate: false)
                } as Any
            }
            #expect((moved as? AerieError)?.code == .internalError, "\(String(describing: moved))")

            // The plugin's rows go with the connection (its `ConnectionData`), one tenant's only.
            let removed = try await alice.database.transaction { tx in
                let kind = try #require(tx.connectionData.first { $0.kind == "oob_invitations" })
                return try kind.remove(tx, ConnectionRecord(id: connection, state: .requested, invitation: [:], invitationKind: "connections/1.0"))
            }
            #expect(removed == 1)
            #expect(
                try await alice.database.transaction {
                    try $0.repository(OutOfBandRepository.self).find(invitationId: "plugin-shared-inv", forUpdate: false)
                } == nil)
            let bobRows = try await fixture.asSuperuser { session in
                try session.query("SELECT count(*) FROM aerie.oob_invitations WHERE tenant_id = $1::uuid", [.text(bob.tenantID.rawValue)])
                    .int(0, 0)
            }
            #expect(bobRows == 1)
        }
    }

    /// `AERIE_PLUGINS` without `out-of-band`: asking for its repository is a clear error, while
    /// its table's upkeep (deletion with a connection, background sealing) still covers it.
    @Test func aRepositoryOfAPluginThatIsNotEnabledIsAClearError() async throws {
        try await WalletFixture.with { fixture in
            let runtime = fixture.database.runtime(stores: try AerieApplication.pluginStores(plugins: ["connections", "messages"]))
            let partial = WalletFixture(database: fixture.database, runtime: runtime, masterKey: fixture.masterKey)
            do {
                let alice = try await partial.createTenant("alice")
                let error = await thrownError {
                    try await alice.database.transaction { tx -> Int in _ = try tx.repository(OutOfBandRepository.self); return 0 }
                }
                let refused = try #require(error as? AerieError)
                #expect(refused.code == .unavailable)
                #expect(refused.message == "the 'out-of-band' plugin is not enabled on this server (AERIE_PLUGINS)")
                #expect(refused.details?.contains("OutOfBandRepository") == true)

                let (kinds, sealed) = try await alice.database.transaction { tx in
                    (tx.connectionData.map(\.kind), try tx.sealClearRows(limit: 10))
                }
                #expect(kinds == ["outbox", "mailbox", "invitation_limits", "credential_exchanges", "proof_exchanges", "oob_invitations", "tenant_keys"])
                #expect(sealed == 0)

                // A type no plugin provides names itself in the log-only details.
                let unknown = await thrownError {
                    try await alice.database.transaction { tx -> Int in _ = try tx.repository(NoSuchRepository.self); return 0 }
                }
                #expect((unknown as? AerieError)?.code == .internalError)
                #expect((unknown as? AerieError)?.details?.contains("NoSuchRepository") == true)
            } catch {
                await runtime.shutdown()
                throw error
            }
            await runtime.shutdown()
        }
    }

    /// A database that ran `schema/0006_out_of_band.sql` as a file (the release before the plugin
    /// owned its table) and holds rows of two tenants: today's migrator, the plugin's version 6
    /// included, applies nothing, the version stays recorded once, and the rows read through the
    /// plugin's repository.
    @Test func aDatabaseThatRanTheFileUpgradesWithoutRunningItAgain() async throws {
        try await WalletFixture.with(migrate: false) { fixture in
            let database = fixture.database
            let source = SchemaLocator.defaultDirectory()
            let directory = FileManager.default.temporaryDirectory.appendingPathComponent("aerie-schema-\(UUID())")
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
            defer { try? FileManager.default.removeItem(at: directory) }
            for name in try FileManager.default.contentsOfDirectory(atPath: source.path) where name.hasSuffix(".sql") {
                try FileManager.default.copyItem(at: source.appendingPathComponent(name), to: directory.appendingPathComponent(name))
            }
            // The out-of-band plugin's version 6 as the file it was; the plugins' later versions
            // as files too, so the previous release is taken to have run everything but the
            // change under test.
            #expect(TestDatabase.pluginMigrations.contains { $0.version == 6 && $0.name == "out_of_band" })
            for migration in TestDatabase.pluginMigrations {
                let file = "\(String(format: "%04d", migration.version))_\(migration.name).sql"
                try migration.sql().write(to: directory.appendingPathComponent(file), atomically: true, encoding: .utf8)
            }
            var quiet = Logger(label: "test")
            quiet.logLevel = .warning
            let previous = Migrator(ownerConninfo: database.ownerConninfo, schemaDirectory: directory, logger: quiet)
            let versions = try await previous.migrate()
            #expect(versions.contains(6) && versions.contains(18))

            let alice = try await fixture.createTenant("alice")
            let bob = try await fixture.createTenant("bob")
            for (tenant, secret) in [(alice, "Alice before"), (bob, "Bob before")] {
                let record = Self.record("inv-before-upgrade", connection: UUID(), secret: secret)
                try await tenant.database.transaction { try $0.repository(OutOfBandRepository.self).insert(record) }
            }

            #expect(try await database.migrator().migrate() == [])
            #expect(try await database.migrator().appliedVersions() == versions)
            let recorded = try await fixture.asSuperuser { session in
                try session.query("SELECT name FROM aerie.schema_migrations WHERE version = 6").allRows()
            }
            #expect(recorded == [["out_of_band"]])
            for (tenant, secret) in [(alice, "Alice before"), (bob, "Bob before")] {
                let found = try await tenant.database.transaction {
                    try $0.repository(OutOfBandRepository.self).find(invitationId: "inv-before-upgrade", forUpdate: false)
                }
                #expect(found?.invitation["label"] == .string(secret))
            }
        }
    }
}

/// A repository type no plugin provides.
protocol NoSuchRepository {}
