import AerieClient
import AerieCore
import AerieStore
import AerieTesting
import Foundation
import Logging

#if canImport(Glibc)
import Glibc
#endif

/// `aerie-server` (release build, next to this binary) as its own process on a fresh database of
/// the benchmark's cluster, or on its own embedded cluster.
final class AerieProcess: @unchecked Sendable {
    let process: Process
    let port: Int
    /// Its operator endpoint (`/metrics`: the round-trip counter).
    let metricsPort: Int
    let home: URL
    /// Nil when the server runs its embedded cluster.
    let database: TestDatabase?
    /// The postmaster of the database's cluster (its CPU and its children's is the database's).
    private(set) var postmaster: Int32?
    var pid: Int32 { process.processIdentifier }

    private init(process: Process, port: Int, metricsPort: Int, home: URL, database: TestDatabase?) {
        self.process = process
        self.port = port
        self.metricsPort = metricsPort
        self.home = home
        self.database = database
    }

    /// `embedded`: the server starts its own cluster in its home (as a default deployment does)
    /// instead of using a fresh database of the benchmark's cluster.
    static func start(embedded: Bool = false) async throws -> AerieProcess {
        let database = embedded ? nil : try await TestPostgres.shared.freshDatabase()
        let home = FileManager.default.temporaryDirectory.appendingPathComponent("aerie-bench-\(UUID().uuidString)")
        let rpcPort = try ACAPyAgent.freePort()
        let didcommPort = try ACAPyAgent.freePort()
        let metricsPort = try ACAPyAgent.freePort()
        let process = Process()
        process.executableURL = try BuiltProducts.executable("aerie-server")
        var environment = ProcessInfo.processInfo.environment
        environment["AERIE_HOME"] = home.path
        if let database {
            environment["AERIE_DATABASE_URL"] = database.runtimeConninfo
            environment["AERIE_OWNER_DATABASE_URL"] = database.ownerConninfo
        } else {
            environment["AERIE_DATABASE_URL"] = nil
            environment["AERIE_OWNER_DATABASE_URL"] = nil
        }
        environment["AERIE_RPC_LISTEN"] = "127.0.0.1:\(rpcPort)"
        environment["AERIE_DIDCOMM_LISTEN"] = "127.0.0.1:\(didcommPort)"
        environment["AERIE_METRICS_LISTEN"] = "127.0.0.1:\(metricsPort)"
        environment["AERIE_ALLOW_PRIVATE_URLS"] = "1"
        environment["AERIE_LOG_LEVEL"] = "warning"
        process.environment = environment
        process.standardInput = FileHandle.nullDevice
        try process.run()
        let server = AerieProcess(process: process, port: rpcPort, metricsPort: metricsPort, home: home, database: database)
        if let database { server.postmaster = try? await Self.postmaster(of: database) }
        let deadline = ContinuousClock.now + .seconds(embedded ? 120 : 30)
        while ContinuousClock.now < deadline {
            if let client = try? await AerieClient.connect(host: "127.0.0.1", port: rpcPort),
                (try? await client.call("system.ping")) == "pong"
            {
                await client.close()
                if embedded { server.postmaster = Self.embeddedPostmaster(home: home) }
                return server
            }
            try await Task.sleep(for: .milliseconds(200))
        }
        await server.stop()
        throw BenchFailure("aerie-server did not start in time")
    }

    /// The embedded cluster's postmaster (`pg_ctl` detaches it from the server): the first line
    /// of its `postmaster.pid`.
    static func embeddedPostmaster(home: URL) -> Int32? {
        let pidFile = EmbeddedPostgres.clusterDirectory(forHome: home).appendingPathComponent("data/postmaster.pid")
        return (try? String(contentsOf: pidFile, encoding: .utf8))?.split(separator: "\n").first.flatMap { Int32($0) }
    }

    /// The parent of a backend of `database` is its cluster's postmaster.
    static func postmaster(of database: TestDatabase) async throws -> Int32? {
        let backend = try await asSuperuser(of: database) { session in try session.query("SELECT pg_backend_pid()").int(0, 0) }
        return backend.flatMap { ProcessCPU.parent(of: Int32($0)) }
    }

    /// `body` on a session of `database` as its cluster's superuser (a one-connection pool, shut
    /// down after).
    static func asSuperuser<T: Sendable>(
        of database: TestDatabase, _ body: @escaping @Sendable (DatabaseSession) throws -> T
    ) async throws -> T {
        let superuser = AerieDatabase(
            configuration: DatabaseConfiguration(conninfo: database.superuserConninfo, maxConnections: 1),
            logger: Logger(label: "bench"))
        defer { Task { await superuser.shutdown() } }
        return try await superuser.withSession(body)
    }

    /// The server's `aerie_db_round_trips_total` now (a scrape of its operator endpoint; the
    /// scrape's own database figures are read once per 5 s at most and not in this counter's
    /// way: they go through the same pool, so a scrape may add one round trip).
    func roundTrips() async throws -> Double {
        let metrics = try await RawLineClient.httpGet(port: metricsPort, path: "/metrics").body
        for line in metrics.split(separator: "\n") where line.hasPrefix("aerie_db_round_trips_total ") {
            if let value = line.split(separator: " ").last.flatMap({ Double($0) }) { return value }
        }
        return 0
    }

    /// A session of a new tenant, created by the operator, or by a new backend when `backend`
    /// (a backend's tenants write the event log, schema/0033; the operator's do not).
    func tenantClient(backend: Bool = false) async throws -> (AerieClient, TenantID) {
        let token = try String(contentsOf: home.appendingPathComponent("admin-token"), encoding: .utf8)
            .trimmingCharacters(in: .whitespacesAndNewlines)
        var creator = try await AerieClient.connect(host: "127.0.0.1", port: port)
        try await creator.authenticate(token: token)
        if backend {
            let made = try await creator.call("admin.backends.create", params: ["label": "bench"])
            await creator.close()
            guard let backendToken = made["token"]?.stringValue else {
                throw BenchFailure("admin.backends.create answered \(made.jsonString)")
            }
            creator = try await AerieClient.connect(host: "127.0.0.1", port: port)
            try await creator.authenticate(token: backendToken)
        }
        let created = try await creator.call("admin.tenants.create", params: ["label": "bench"])
        await creator.close()
        guard let tenantToken = created["token"]?.stringValue, let id = created["tenantId"]?.stringValue.flatMap(TenantID.init)
        else { throw BenchFailure("admin.tenants.create answered \(created.jsonString)") }
        let client = try await AerieClient.connect(host: "127.0.0.1", port: port)
        try await client.authenticate(token: tenantToken)
        return (client, id)
    }

    /// ANALYZE of the whole database (as its superuser).
    func analyze() async throws {
        guard let database else { return }
        try await Self.asSuperuser(of: database) { session in _ = try session.execute("ANALYZE", []) }
    }

    /// The cluster's next transaction id (assigning none itself): its difference over a run is
    /// the number of transactions that wrote, each a durable commit (or a rollback).
    func nextTransactionID() async throws -> Int64 {
        guard let database else { return 0 }
        return try await Self.asSuperuser(of: database) { session in
            try session.query("SELECT pg_snapshot_xmax(pg_current_snapshot())::text::int8").int(0, 0).map(Int64.init) ?? 0
        }
    }

    /// SIGTERM (graceful), waited for off the concurrency pool.
    func stop() async {
        let process = self.process
        await offPool {
            if process.isRunning { kill(process.processIdentifier, SIGTERM) }
            process.waitUntilExit()
        }
        if database == nil {
            // A server stopped gracefully stops its embedded cluster; one that did not leaves it.
            let data = EmbeddedPostgres.clusterDirectory(forHome: home).appendingPathComponent("data")
            if FileManager.default.fileExists(atPath: data.appendingPathComponent("postmaster.pid").path) {
                _ = try? await PostgresControl.run(["stop", "-D", data.path, "-m", "immediate"])
            }
            try? FileManager.default.removeItem(at: EmbeddedPostgres.clusterDirectory(forHome: home))
        }
        try? FileManager.default.removeItem(at: home)
        try? await database?.drop()
    }
}
