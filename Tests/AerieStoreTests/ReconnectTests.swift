import AerieCore
import AerieStore
import AerieTesting
import Foundation
#if canImport(Glibc)
import Glibc
#endif
import Logging
import Testing

@Suite(.timeLimit(.minutes(10))) struct ReconnectTests {
    @Test func terminatedBackendsAreReplacedTransparently() async throws {
        try await StoreFixture.with(maxConnections: 3) { fixture in
            let token = randomBytes(32)
            let id = try await fixture.createTenant("A", tokenHash: token).id
            let tenant = fixture.runtime.sealed(id)
            // Open several connections so the pool holds idle ones.
            try await withThrowingTaskGroup(of: Void.self) { group in
                for index in 0..<6 {
                    group.addTask { try await tenant.transaction { try $0.settings.set("k\(index)", to: 1) } }
                }
                try await group.waitForAll()
            }

            for _ in 0..<2 {
                #expect(try await fixture.killRuntimeSessions() >= 1)
                // A read, a tenant transaction and a directory write all succeed at once.
                #expect(try await fixture.runtime.tenants.isActive(id, tokenHash: token))
                try await tenant.transaction { try $0.settings.set("after", to: "kill") }
                #expect(try await fixture.runtime.tenants.setStatus(id, .active))
            }
            #expect(try await tenant.transaction { try $0.settings.get("after") } == "kill")
        }
    }

    /// A private cluster (restarting the shared one would disturb parallel tests): start it,
    /// use it, stop it (calls fail as unavailable), start it again (same data), and the same
    /// pool carries on.
    @Test func embeddedClusterRestartsAndPoolReconnects() async throws {
        let home = URL(fileURLWithPath: "/tmp/aerie-restart-\(UUID().uuidString.prefix(8))")
        defer { try? FileManager.default.removeItem(at: home) }
        var logger = Logger(label: "test.embedded")
        logger.logLevel = .warning
        let cluster = EmbeddedPostgres(home: home, settings: ["fsync": "off"], logger: logger)
        #expect(try await !cluster.isRunning())
        let connection = try await cluster.start()
        #expect(try await cluster.isRunning())
        do {
            // Starting again while running reuses the cluster.
            #expect(try await cluster.start() == connection)
            #expect(connection.runtimeConninfo.contains(home.path))
            let applied = try await Migrator(
                ownerConninfo: connection.ownerConninfo, schemaDirectory: SchemaLocator.defaultDirectory(),
                pluginMigrations: TestDatabase.pluginMigrations, logger: logger
            ).migrate()
            #expect(!applied.isEmpty)

            let runtime = AerieDatabase(
                configuration: DatabaseConfiguration(conninfo: connection.runtimeConninfo, maxConnections: 2),
                logger: logger)
            try await runtime.verifyRuntimeRole()
            let token = randomBytes(32)
            let id = TenantID.random()
            _ = try await runtime.tenants.create(
                id: id, label: "survivor", sealer: StoreFixture.labelSealer(id), tokenHash: token, wrappedDataKey: [1], masterKeyFingerprint: "mk")

            try await cluster.stop()
            #expect(try await !cluster.isRunning())
            await #expect {
                try await runtime.tenants.isActive(id, tokenHash: token)
            } throws: { error in
                guard let error = error as? AerieError else { return false }
                return error.code == .unavailable && error.message == "database unavailable"
            }

            // A crash leaves postmaster.pid behind; the next start must not trip over it.
            let pidFile = cluster.clusterDirectory.appendingPathComponent("data/postmaster.pid")
            let deadPID = (4_000_000..<4_100_000).first { kill(pid_t($0), 0) == -1 && errno == ESRCH } ?? 4_000_000
            try "\(deadPID)\n\(cluster.clusterDirectory.appendingPathComponent("data").path)\n".write(
                to: pidFile, atomically: false, encoding: .utf8)

            #expect(try await cluster.start() == connection)
            #expect(try await runtime.tenants.isActive(id, tokenHash: token))
            try await runtime.sealed(id).transaction { try $0.settings.set("k", to: true) }
            #expect(try await Migrator(
                ownerConninfo: connection.ownerConninfo, schemaDirectory: SchemaLocator.defaultDirectory(),
                pluginMigrations: TestDatabase.pluginMigrations, logger: logger
            ).migrate() == [])
            await runtime.shutdown()
        } catch {
            try? await cluster.stop()
            throw error
        }
        try await cluster.stop()
        try await cluster.stop()  // stopping a stopped cluster is fine
        let socketMode = try FileManager.default.attributesOfItem(atPath: cluster.clusterDirectory.appendingPathComponent("run").path)[
            .posixPermissions] as? Int
        #expect(socketMode == 0o700)
    }
}
