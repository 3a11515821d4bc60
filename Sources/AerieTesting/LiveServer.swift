import AerieClient
import AerieCore
import AerieRPC
import AerieServer
import Foundation
import Logging
import ServiceLifecycle

/// A real Aerie server for tests: its own fresh database, its own state directory, JSON-RPC on a
/// free port (port 0, read back), run under a `ServiceGroup` exactly as `aerie-server` runs.
public final class LiveServer: Sendable {
    public let port: Int
    public let adminToken: String
    public let home: URL
    public let database: TestDatabase
    private let group: ServiceGroup
    private let running: Task<Void, any Error>

    private init(port: Int, adminToken: String, home: URL, database: TestDatabase, group: ServiceGroup, running: Task<Void, any Error>) {
        self.port = port
        self.adminToken = adminToken
        self.home = home
        self.database = database
        self.group = group
        self.running = running
    }

    public static func start(
        extraPlugins: [any AeriePlugin] = [],
        plugins: [String]? = nil,
        rpc configure: (inout RPCServerConfiguration) -> Void = { _ in }
    ) async throws -> LiveServer {
        let database = try await TestPostgres.shared.freshDatabase()
        let home = FileManager.default.temporaryDirectory.appendingPathComponent("aerie-live-\(UUID().uuidString)")
        var rpc = RPCServerConfiguration(host: "127.0.0.1", port: 0)
        configure(&rpc)
        let configuration = AerieConfiguration(
            home: home, databaseURL: database.runtimeConninfo, ownerDatabaseURL: database.ownerConninfo,
            databasePoolSize: 4, rpc: rpc, plugins: plugins, logLevel: .warning)
        var logger = Logger(label: "aerie-test")
        logger.logLevel = .warning
        let prepared = try await AerieApplication.prepare(configuration: configuration, logger: logger, extraPlugins: extraPlugins)
        let group = ServiceGroup(
            configuration: ServiceGroupConfiguration(
                services: prepared.services.map { .init(service: $0) }, gracefulShutdownSignals: [], logger: logger))
        let running = Task { try await group.run() }
        let port = try await prepared.rpcServer.listeningPort()
        let token = try String(contentsOf: prepared.adminTokenFile, encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines)
        return LiveServer(port: port, adminToken: token, home: home, database: database, group: group, running: running)
    }

    /// Starts a server, runs `body`, and always stops it and drops its database.
    public static func with(
        extraPlugins: [any AeriePlugin] = [],
        plugins: [String]? = nil,
        rpc configure: (inout RPCServerConfiguration) -> Void = { _ in },
        _ body: (LiveServer) async throws -> Void
    ) async throws {
        let server = try await start(extraPlugins: extraPlugins, plugins: plugins, rpc: configure)
        do {
            try await body(server)
        } catch {
            try? await server.stop()
            throw error
        }
        try await server.stop()
    }

    /// Graceful shutdown, as on SIGTERM; then the test database is dropped.
    public func stop() async throws {
        await group.triggerGracefulShutdown()
        try await running.value
        try? FileManager.default.removeItem(at: home)
        try? await database.drop()
    }

    public func client() async throws -> AerieClient {
        try await AerieClient.connect(host: "127.0.0.1", port: port)
    }

    public func adminClient() async throws -> AerieClient {
        let client = try await client()
        try await client.authenticate(token: adminToken)
        return client
    }

    /// Creates a tenant through the admin API and returns a session authenticated as it.
    public func tenantClient(label: String) async throws -> (AerieClient, TenantID) {
        let admin = try await adminClient()
        defer { Task { await admin.close() } }
        let created = try await admin.call("admin.tenants.create", params: ["label": .string(label)])
        guard let token = created["token"]?.stringValue, let raw = created["tenantId"]?.stringValue, let id = TenantID(raw) else {
            throw AerieClientError(code: -32603, message: "unexpected admin.tenants.create result", data: created)
        }
        let client = try await client()
        try await client.authenticate(token: token)
        return (client, id)
    }
}
