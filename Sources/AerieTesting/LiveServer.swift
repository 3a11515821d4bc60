import AerieClient
import AerieCore
import AerieRPC
import AerieServer
import AerieStore
import AerieTransport
import Foundation
import Logging
import ServiceLifecycle
import Synchronization

/// A real Aerie server for tests: its own fresh database, its own state directory, JSON-RPC on a
/// free port (port 0, read back), run under a `ServiceGroup` exactly as `aerie-server` runs.
public final class LiveServer: Sendable {
    public let port: Int
    /// The inbound DIDComm HTTP port (bound as port 0, read back).
    public let didcommPort: Int
    /// The operator endpoint's port (/metrics, /healthz, /readyz), when `metricsListen` was set.
    public let operatorPort: Int?
    public let adminToken: String
    public let home: URL
    public let database: TestDatabase
    /// The server's own handle on it (its pool and in-process caches).
    public let serverDatabase: AerieDatabase
    /// What it was started with, for `restarted(_:)`.
    public let configuration: AerieConfiguration
    private let extraPlugins: [any AeriePlugin]
    private let group: ServiceGroup
    private let running: Task<Void, any Error>
    /// A sibling shares its first server's database and state directory and removes neither.
    private let isSibling: Bool
    /// Every RPC session this server handed out, so a stuck test can end them.
    private let sessions = Mutex<[AerieClient]>([])
    /// Why the sessions were ended, once they were.
    private let abandoned = Mutex<String?>(nil)

    /// How long `with` lets its body run before it ends the body's RPC sessions.
    public static let defaultTimeLimit: Duration = .seconds(300)

    /// The body of `with` ran past its time limit (or its test was cancelled, as Swift Testing's
    /// `.timeLimit` does): the sessions it had were closed so calls waiting for an answer threw.
    public struct TimeLimitExceeded: Error, CustomStringConvertible {
        public let description: String
    }

    private init(
        port: Int, didcommPort: Int, operatorPort: Int?, adminToken: String, home: URL, database: TestDatabase,
        serverDatabase: AerieDatabase, group: ServiceGroup, running: Task<Void, any Error>, configuration: AerieConfiguration,
        extraPlugins: [any AeriePlugin], isSibling: Bool = false
    ) {
        self.isSibling = isSibling
        self.configuration = configuration
        self.extraPlugins = extraPlugins
        self.port = port
        self.didcommPort = didcommPort
        self.operatorPort = operatorPort
        self.adminToken = adminToken
        self.home = home
        self.database = database
        self.serverDatabase = serverDatabase
        self.group = group
        self.running = running
    }

    public static func start(
        extraPlugins: [any AeriePlugin] = [],
        plugins: [String]? = nil,
        rpc configure: (inout RPCServerConfiguration) -> Void = { _ in },
        server configureServer: (inout AerieConfiguration) -> Void = { _ in }
    ) async throws -> LiveServer {
        let database = try await TestPostgres.shared.freshDatabase()
        let home = FileManager.default.temporaryDirectory.appendingPathComponent("aerie-live-\(UUID().uuidString)")
        var rpc = RPCServerConfiguration(host: "127.0.0.1", port: 0)
        // Tests on a loaded machine may take a while between connecting and authenticating;
        // the tests of the deadline set their own.
        rpc.authTimeoutSeconds = 120
        configure(&rpc)
        var configuration = AerieConfiguration(
            home: home, databaseURL: database.runtimeConninfo, ownerDatabaseURL: database.ownerConninfo)
        configuration.database.poolSize = 4
        configuration.rpc = rpc
        configuration.plugins = plugins
        configuration.operations.logLevel = .warning
        configuration.didcomm.port = 0
        // Every test peer (ACA-Py, hand-made invitations) and webhook receiver listens on
        // loopback; tests of the address policy set their own (`outbound.allowedNetworks = []`,
        // `outbound.webhookAllowedNetworks = []`).
        configuration.outbound.allowedNetworks = Self.loopbackNetworks
        configuration.outbound.webhookAllowedNetworks = Self.loopbackNetworks
        configureServer(&configuration)
        return try await launch(configuration: configuration, database: database, extraPlugins: extraPlugins)
    }

    /// 127.0.0.0/8 and ::1: where test peers listen.
    public static let loopbackNetworks = [IPNetwork("127.0.0.0/8")!, IPNetwork("::1")!]

    private static func launch(
        configuration: AerieConfiguration, database: TestDatabase, extraPlugins: [any AeriePlugin], isSibling: Bool = false
    ) async throws -> LiveServer {
        let home = configuration.home
        var logger = Logger(label: "aerie-test")
        logger.logLevel = .warning
        let prepared = try await AerieApplication.prepare(configuration: configuration, logger: logger, extraPlugins: extraPlugins)
        var groupConfiguration = ServiceGroupConfiguration(
            services: prepared.services.map { .init(service: $0) }, gracefulShutdownSignals: [], logger: logger)
        // A stop that never drains fails (a fatal error names the overrun) instead of hanging the run.
        groupConfiguration.maximumGracefulShutdownDuration = .seconds(60)
        groupConfiguration.maximumCancellationDuration = .seconds(30)
        let group = ServiceGroup(configuration: groupConfiguration)
        let running = Task { try await group.run() }
        let port = try await prepared.rpcServer.listeningPort()
        let didcommPort = try await prepared.didcommServer.listeningPort()
        let operatorPort: Int? = if let server = prepared.operatorServer { try await server.listeningPort() } else { nil }
        let token = try String(contentsOf: prepared.adminTokenFile, encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines)
        return LiveServer(
            port: port, didcommPort: didcommPort, operatorPort: operatorPort, adminToken: token, home: home, database: database,
            serverDatabase: prepared.database, group: group, running: running, configuration: configuration, extraPlugins: extraPlugins, isSibling: isSibling)
    }

    /// A second server process on this one's database (and master key and admin token), on
    /// ports of its own, as behind a load balancer. Stop it before this one; it drops nothing.
    public func sibling(_ change: (inout AerieConfiguration) -> Void = { _ in }) async throws -> LiveServer {
        var next = configuration
        next.rpc.port = 0
        next.didcomm.port = 0
        change(&next)
        return try await Self.launch(configuration: next, database: database, extraPlugins: extraPlugins, isSibling: true)
    }

    /// Stops this server gracefully, keeping its database and state directory, and starts a new
    /// one on them with the same DIDComm port (peers were told it), as a process restart would.
    /// Stop only the returned server afterwards.
    public func restarted(_ change: (inout AerieConfiguration) -> Void = { _ in }) async throws -> LiveServer {
        await group.triggerGracefulShutdown()
        try await running.value
        var next = configuration
        next.didcomm.port = didcommPort
        change(&next)
        return try await Self.launch(configuration: next, database: database, extraPlugins: extraPlugins)
    }

    /// Starts a server, runs `body`, and always stops it and drops its database. A body still
    /// running after `timeLimit`, or cancelled, has its RPC sessions closed (calls waiting on
    /// them throw) and `with` throws `TimeLimitExceeded`: a server that stops answering fails the
    /// test instead of hanging the run.
    public static func with(
        extraPlugins: [any AeriePlugin] = [],
        plugins: [String]? = nil,
        timeLimit: Duration = LiveServer.defaultTimeLimit,
        rpc configure: (inout RPCServerConfiguration) -> Void = { _ in },
        server configureServer: (inout AerieConfiguration) -> Void = { _ in },
        _ body: (LiveServer) async throws -> Void
    ) async throws {
        let server = try await start(extraPlugins: extraPlugins, plugins: plugins, rpc: configure, server: configureServer)
        let watchdog = Task {
            do { try await Task.sleep(for: timeLimit) } catch { return }
            server.abandonSessions("the test body ran past its time limit of \(timeLimit)")
        }
        do {
            try await withTaskCancellationHandler {
                try await body(server)
            } onCancel: {
                server.abandonSessions("the test was cancelled (a time limit?)")
            }
        } catch {
            watchdog.cancel()
            try? await server.stop()
            if let reason = server.abandoned.withLock({ $0 }) {
                throw TimeLimitExceeded(description: "\(reason); its RPC sessions were closed: \(error)")
            }
            throw error
        }
        watchdog.cancel()
        try await server.stop()
        if let reason = server.abandoned.withLock({ $0 }) {
            throw TimeLimitExceeded(description: "\(reason); its RPC sessions were closed")
        }
    }

    /// Closes every session handed out by `client()` and friends (once), recording why.
    private func abandonSessions(_ reason: String) {
        let first = abandoned.withLock { current in
            guard current == nil else { return false }
            current = reason
            return true
        }
        guard first else { return }
        let clients = sessions.withLock { $0 }
        Task { for client in clients { await client.close() } }
    }

    /// Graceful shutdown, as on SIGTERM; then the test database is dropped.
    public func stop() async throws {
        await group.triggerGracefulShutdown()
        try await running.value
        guard !isSibling else { return }
        try? FileManager.default.removeItem(at: home)
        try? await database.drop()
    }

    public func client() async throws -> AerieClient {
        let client = try await AerieClient.connect(host: "127.0.0.1", port: port)
        sessions.withLock { $0.append(client) }
        return client
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

    /// A session each of two new tenants, A and B (an isolation test's two), closed after `body`.
    public func withTwoTenants<T: Sendable>(
        _ body: (_ a: (client: AerieClient, id: TenantID), _ b: (client: AerieClient, id: TenantID)) async throws -> T
    ) async throws -> T {
        let a = try await tenantClient(label: "A")
        let b = try await tenantClient(label: "B")
        let result: Result<T, any Error>
        do { result = .success(try await body(a, b)) } catch { result = .failure(error) }
        await a.0.close()
        await b.0.close()
        return try result.get()
    }
}
