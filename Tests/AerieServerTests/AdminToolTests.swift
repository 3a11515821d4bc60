import AerieClient
import AerieCore
import AerieCrypto
import AerieStore
import AerieTesting
import Foundation
import Testing

/// `aerie-admin` run as a real process against a live server on a free port.
@Suite(.timeLimit(.minutes(10))) struct AdminToolTests {
    @Test func tenantLifecycleThroughTheCommandLine() async throws {
        try await LiveServer.with { server in
            let admin = AdminTool(server: server)

            let created = try await admin.run(["tenant", "create", "--label", "Acme Wallet", "--json"])
            #expect(created.status == 0, "\(created.stderr)")
            let tenant = try JSONValue(parsing: created.stdout)
            let id = try #require(tenant["tenantId"]?.stringValue)
            let token = try #require(tenant["token"]?.stringValue)

            // The printed token authenticates a tenant session.
            let client = try await AerieClient.connect(host: "127.0.0.1", port: server.port)
            defer { Task { await client.close() } }
            let auth = try await client.authenticate(token: token)
            #expect(auth["tenantId"] == .string(id))

            let listed = try await admin.run(["tenant", "list"])
            #expect(listed.status == 0)
            #expect(listed.stdout.contains(id) && listed.stdout.contains("Acme Wallet"))

            let shown = try await admin.run(["tenant", "show", id])
            #expect(shown.stdout.contains("status: active"))

            #expect(try await admin.run(["tenant", "suspend", id]).stdout.contains("status: suspended"))
            await expectCode("unauthenticated") { try await client.call("settings.list") }
            #expect(try await admin.run(["tenant", "resume", id]).stdout.contains("status: active"))

            let rotated = try await admin.run(["tenant", "rotate-token", id, "--json"])
            let newToken = try #require(try JSONValue(parsing: rotated.stdout)["token"]?.stringValue)
            #expect(newToken != token)

            let unconfirmed = try await admin.run(["tenant", "delete", id])
            #expect(unconfirmed.status == 2)
            #expect(unconfirmed.stderr.contains("--yes"))
            let deleted = try await admin.run(["tenant", "delete", id, "--yes"])
            #expect(deleted.status == 0)
            #expect(deleted.stdout.contains("deleted tenant"))
            let missing = try await admin.run(["tenant", "show", id])
            #expect(missing.status == 1)
            #expect(missing.stderr.contains("not_found"))
        }
    }

    /// `aerie-admin migrate` itself, on an empty database: the core `schema/` files and the
    /// migrations plugins compile in (the out-of-band table, version 6) in one order, each once.
    @Test func migrateAppliesCoreAndPluginMigrationsOnce() async throws {
        let database = try await TestPostgres.shared.freshDatabase(migrate: false)
        var environment = ProcessInfo.processInfo.environment
        environment["AERIE_DATABASE_URL"] = database.runtimeConninfo
        environment["AERIE_OWNER_DATABASE_URL"] = database.ownerConninfo
        environment["AERIE_HOME"] = FileManager.default.temporaryDirectory.appendingPathComponent("aerie-migrate-\(UUID().uuidString)").path
        let tool = try BuiltProducts.executable("aerie-admin")

        let first = try await runProcess(tool, ["migrate", "--json"], environment: environment)
        #expect(first.status == 0, "\(first.stderr)")
        guard case .array(let listed)? = try JSONValue(parsing: first.stdout)["applied"] else {
            Issue.record("no list of applied migrations: \(first.stdout)")
            return
        }
        let applied = listed.compactMap(\.intValue)
        let shipped = try Migration.all(in: SchemaLocator.defaultDirectory(), plugins: TestDatabase.pluginMigrations).map(\.version)
        #expect(applied == shipped.map(Int64.init))
        #expect(applied.contains(6))
        let runtime = database.runtime()
        let table = try await runtime.pool.read { try $0.query("SELECT to_regclass('aerie.oob_invitations')::text").string(0, 0) }
        await runtime.shutdown()
        #expect(table == "aerie.oob_invitations")

        let again = try await runProcess(tool, ["migrate"], environment: environment)
        #expect(again.status == 0, "\(again.stderr)")
        #expect(again.stdout.contains("database is up to date"))
        try await database.drop()
    }

    /// `tenant move --to ... --rotate-token-file` as an operator runs it, between two servers with
    /// their own databases, master keys and endpoints. A token file that cannot be read stops it
    /// before anything moves; with the files in place the tenant moves (shredded on the source,
    /// its token working on the destination) and every established connection's DID is rotated
    /// there: the peer gets a DID Rotate from the connection's old key, naming a DID whose
    /// document has the destination's endpoint.
    @Test func tenantMoveRotatesEveryConnectionAtTheDestination() async throws {
        let inbox = try await PeerInbox()
        let source = try await LiveServer.start(server: TenantImportTests.configure)
        let destination = try await LiveServer.start(server: TenantImportTests.configure)
        let files = FileManager.default.temporaryDirectory.appendingPathComponent("aerie-move-\(UUID().uuidString)")
        do {
            let alice = try await TenantMoveTests.tenant(source, label: "Alice Command Line Mover")
            let bob = try await TenantMoveTests.tenant(source, label: "Bob Stays")
            let peer = try await TestPeer.connect(alice.client, endpoint: inbox.url, key: inbox.key)
            _ = try await alice.client.call("settings.set", params: ["key": "profile", "value": ["name": "Alice"]])
            let before = try await TenantMoveTests.listings(alice.client)
            try FileManager.default.createDirectory(at: files, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
            let destinationToken = files.appendingPathComponent("destination-admin-token").path
            let tenantToken = files.appendingPathComponent("tenant-token").path
            for (path, token) in [(destinationToken, destination.adminToken), (tenantToken, alice.token)] {
                #expect(FileManager.default.createFile(atPath: path, contents: Data((token + "\n").utf8), attributes: [.posixPermissions: 0o600]))
            }
            let admin = AdminTool(server: source)
            let move = ["tenant", "move", alice.id.rawValue, "--to", "127.0.0.1:\(destination.port)", "--to-token-file", destinationToken]

            let unreadable = try await admin.run(move + ["--rotate-token-file", files.appendingPathComponent("missing").path])
            #expect(unreadable.status == 2, "\(unreadable.stdout)\(unreadable.stderr)")
            #expect(unreadable.stderr.contains("cannot read"), "\(unreadable.stderr)")
            #expect(try await TenantMoveTests.listings(alice.client) == before, "the tenant stays on the source, working")
            #expect(try await TenantMoveTests.rowsLeft(destination.database, tenant: alice.id) == 0)

            let moved = try await admin.run(move + ["--rotate-token-file", tenantToken])
            #expect(moved.status == 0, "\(moved.stdout)\(moved.stderr)")
            #expect(moved.stdout.contains("moved tenant \(alice.id.rawValue)"), "\(moved.stdout)")
            #expect(moved.stdout.contains("announced the new endpoint on 1 connections"), "\(moved.stdout)")
            #expect(try await TenantMoveTests.rowsLeft(source.database, tenant: alice.id) == 0)
            #expect(try await TenantMoveTests.rowsLeft(source.database, tenant: bob.id) > 0)

            let rotate = try #require(try await inbox.wait { $0["@type"] == "https://didcomm.org/did-rotate/1.0/rotate" })
            #expect(rotate.senderVerkey == peer.pwVerkey, "the rotate goes from the connection's old key")
            let newDid = try #require(rotate.message["to_did"]?.stringValue)
            let document = String(decoding: try PeerDID4.documentJSON(newDid), as: UTF8.self)
            #expect(document.contains(":\(destination.didcommPort)") && !document.contains(":\(source.didcommPort)"), "\(document)")
            let session = try await destination.client()
            try await session.authenticate(token: alice.token)
            let connection = try await session.call("connections.get", params: ["connectionId": .string(peer.connectionId)])
            #expect(connection["rotatingToDid"] == .string(PeerDID4.shortForm(newDid)), "\(connection)")

            for client in [alice.client, bob.client, session] { await client.close() }
        } catch {
            Issue.record(error)
        }
        try? FileManager.default.removeItem(at: files)
        try await source.stop()
        try await destination.stop()
        await inbox.stop()
    }

    @Test func clearFailuresWhenServerIsDownOrTokenIsWrong() async throws {
        try await LiveServer.with { server in
            let wrongToken = try await AdminTool(server: server, token: "aerie_a_wrongwrongwrongwrongwrongwrongwrongwrong").run(["tenant", "list"])
            #expect(wrongToken.status == 4)
            #expect(wrongToken.stderr.contains("rejected the admin token"))
        }
        let down = try await AdminTool(port: 1, token: "x").run(["tenant", "list"])
        #expect(down.status == 3)
        #expect(down.stderr.contains("cannot reach aerie-server"))
    }
}

struct AdminTool {
    let port: Int
    let token: String

    init(server: LiveServer, token: String? = nil) {
        self.port = server.port
        self.token = token ?? server.adminToken
    }

    init(port: Int, token: String) {
        self.port = port
        self.token = token
    }

    struct Output {
        let status: Int32
        let stdout: String
        let stderr: String
    }

    /// Runs the tool as a process (off the concurrency pool; see `runProcess`).
    func run(_ arguments: [String]) async throws -> Output {
        var environment = ProcessInfo.processInfo.environment
        environment["AERIE_ADMIN_TOKEN"] = token
        let result = try await runProcess(
            try BuiltProducts.executable("aerie-admin"), arguments + ["--server", "127.0.0.1:\(port)"], environment: environment)
        return Output(status: result.status, stdout: result.stdout, stderr: result.stderr)
    }
}
