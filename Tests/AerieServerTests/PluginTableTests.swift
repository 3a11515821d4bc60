import AerieClient
import AerieCore
import AerieTesting
import Foundation
import Testing

/// A new plugin with a table of its own touches nothing outside itself: its migration, its
/// repository over the SQL seam and its methods are all it ships, and the server applies the
/// migration at start, seals its rows and keeps tenants apart.
@Suite(.timeLimit(.minutes(10))) struct PluginTableTests {
    @Test func aNewPluginsTableIsMigratedSealedAndPerTenant() async throws {
        try await LiveServer.with(extraPlugins: [NotesPlugin()]) { server in
            let (alice, _) = try await server.tenantClient(label: "alice")
            let (bob, _) = try await server.tenantClient(label: "bob")
            defer { Task { await alice.close(); await bob.close() } }

            _ = try await alice.call("notes.put", params: ["key": "shopping", "text": "Alice plugin note"])
            _ = try await bob.call("notes.put", params: ["key": "shopping", "text": "Bob plugin note"])
            #expect(try await alice.call("notes.get", params: ["key": "shopping"])["text"] == "Alice plugin note")
            #expect(try await bob.call("notes.get", params: ["key": "shopping"])["text"] == "Bob plugin note")
            #expect(try await bob.call("notes.get", params: ["key": "elsewhere"])["text"] == nil, "no such note")

            let (applied, rows) = try await WalletFixture.asSuperuser(server.database) { session in
                (
                    try session.query("SELECT name FROM aerie.schema_migrations WHERE version = $1::int4", [.int(NotesPlugin.version)])
                        .allRows(),
                    try session.query("SELECT row_to_json(t)::text FROM aerie.test_notes t").allRows().map { $0[0] ?? "" }
                )
            }
            #expect(applied == [["test_notes"]])
            #expect(rows.count == 2)
            SealedStorageTests.expectNoSecrets(
                ["Alice plugin note", "Bob plugin note", "shopping"], in: rows.joined(), "the plugin's table at rest")
        }
    }
}

/// `notes.put {key, text}` / `notes.get {key}` over `aerie.test_notes`, a table of its own.
struct NotesPlugin: AeriePlugin {
    static let name = "test-notes"
    /// Far from the numbers `schema/` and the shipped plugins use.
    static let version = 9901

    static var storage: PluginStorage {
        PluginStorage(
            migrations: [
                SchemaMigration(
                    version: version, name: "test_notes",
                    sql: """
                        CREATE TABLE aerie.test_notes (
                            tenant_id uuid  NOT NULL REFERENCES aerie.tenants (id),
                            key_hash  bytea NOT NULL,
                            id        uuid  NOT NULL,
                            sealed    bytea NOT NULL,
                            PRIMARY KEY (tenant_id, key_hash)
                        );
                        ALTER TABLE aerie.test_notes ENABLE ROW LEVEL SECURITY;
                        ALTER TABLE aerie.test_notes FORCE ROW LEVEL SECURITY;
                        CREATE POLICY tenant_isolation ON aerie.test_notes
                            USING (tenant_id = NULLIF(current_setting('aerie.tenant_id', true), '')::uuid)
                            WITH CHECK (tenant_id = NULLIF(current_setting('aerie.tenant_id', true), '')::uuid);
                        GRANT SELECT, INSERT, UPDATE, DELETE ON aerie.test_notes TO aerie_runtime;
                        """)
            ],
            repositories: [RepositoryProvider(NoteRepository.self) { NoteStore(transaction: $0) }])
    }

    struct Put: Decodable, Sendable {
        var key: String
        var text: String
    }

    struct Get: Decodable, Sendable {
        var key: String
    }

    struct Note: Encodable, Sendable {
        var text: String?
    }

    func register(with router: inout MethodRouter) throws {
        try router.register("notes.put", summary: "Stores a note.") { (params: Put, tenant: TenantContext) in
            try await tenant.database.transaction { try $0.repository(NoteRepository.self).put(params.key, params.text) }
            return Note(text: params.text)
        }
        try router.register("notes.get", summary: "Reads a note.") { (params: Get, tenant: TenantContext) in
            Note(text: try await tenant.database.read { try $0.repository(NoteRepository.self).get(params.key) })
        }
    }
}

protocol NoteRepository {
    func put(_ key: String, _ text: String) throws
    func get(_ key: String) throws -> String?
}

/// Written the way a plugin writes a repository: the seam's statements, the transaction's sealing.
struct NoteStore: NoteRepository {
    let transaction: any TenantTransaction
    var sealing: RowSealing { transaction.rowSealing("test_notes") }

    func put(_ key: String, _ text: String) throws {
        let id = UUID()
        try transaction.sql.execute(
            """
            INSERT INTO aerie.test_notes (tenant_id, key_hash, id, sealed) VALUES ($1::uuid, $2, $3::uuid, $4)
            ON CONFLICT (tenant_id, key_hash) DO UPDATE SET id = EXCLUDED.id, sealed = EXCLUDED.sealed
            """,
            [
                .text(transaction.tenantID.rawValue), .bytes(try sealing.hash(key, column: "key") ?? []), .uuid(id),
                .bytes(try sealing.seal(["text": .string(text)], row: id.uuidString.lowercased())),
            ])
    }

    func get(_ key: String) throws -> String? {
        let rows = try transaction.sql.query(
            "SELECT id, sealed FROM aerie.test_notes WHERE tenant_id = $1::uuid AND key_hash = $2",
            [.text(transaction.tenantID.rawValue), .bytes(try sealing.hash(key, column: "key") ?? [])])
        guard rows.rowCount == 1, let id = rows.uuid(0, 0), let sealed = rows.bytes(0, 1) else { return nil }
        return try sealing.open(sealed, row: id.uuidString.lowercased()).string("text")
    }
}
