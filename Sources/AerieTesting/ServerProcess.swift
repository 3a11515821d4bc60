import AerieClient
import AerieCore
import AerieStore
import Foundation

/// The real `aerie-server` executable as a child process, for what an in-process `LiveServer`
/// cannot show: `kill -9`, a crash at a fault point (`AERIE_FAULT_POINT`), a restart by the same
/// command, the embedded PostgreSQL left behind. Ports are fixed at creation and kept across
/// restarts (peers were told the DIDComm endpoint). Stopped only by its own pid.
public final class ServerProcess: @unchecked Sendable {
    public struct Unavailable: Error, CustomStringConvertible {
        public let description: String
    }

    public let home: URL
    public let rpcPort: Int
    public let didcommPort: Int
    /// The operator endpoint (`AERIE_METRICS_LISTEN`: /metrics, /healthz, /readyz).
    public let metricsPort: Int
    /// The database, or nil for the embedded default (`EmbeddedPostgres.clusterDirectory(forHome:)`).
    public let database: TestDatabase?
    private var environment: [String: String]
    private var process: Process?
    private var launches = 0

    /// A server on `database` (nil: embedded) with a fresh state directory; `environment` adds to
    /// or overrides the defaults (private URLs allowed, warnings only).
    public init(database: TestDatabase?, environment: [String: String] = [:]) throws {
        self.database = database
        home = URL(fileURLWithPath: "/tmp/aerie-proc-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: home, withIntermediateDirectories: true)
        rpcPort = try ACAPyAgent.freePort()
        didcommPort = try ACAPyAgent.freePort()
        metricsPort = try ACAPyAgent.freePort()
        var env = ProcessInfo.processInfo.environment.filter { !$0.key.hasPrefix("AERIE_") }
        env["AERIE_HOME"] = home.path
        env["AERIE_RPC_LISTEN"] = "127.0.0.1:\(rpcPort)"
        env["AERIE_DIDCOMM_LISTEN"] = "127.0.0.1:\(didcommPort)"
        env["AERIE_METRICS_LISTEN"] = "127.0.0.1:\(metricsPort)"
        env["AERIE_ALLOW_PRIVATE_URLS"] = "1"
        env["AERIE_LOG_LEVEL"] = "info"
        env["AERIE_DB_POOL_SIZE"] = "4"
        if let database {
            env["AERIE_DATABASE_URL"] = database.runtimeConninfo
            env["AERIE_OWNER_DATABASE_URL"] = database.ownerConninfo
        }
        env.merge(environment) { _, new in new }
        self.environment = env
    }

    public var pid: Int32? { process?.processIdentifier }
    public var isRunning: Bool { process?.isRunning ?? false }
    public var logFile: URL { home.appendingPathComponent("server.log") }

    /// Starts the executable (`extra` environment for this launch only, e.g. a fault point) and
    /// waits until `system.ping` answers, at most `timeout`. With `waitUntilReady: false` it
    /// returns once the process is started (a fault point may end it before it is ready).
    public func start(extra: [String: String] = [:], waitUntilReady ready: Bool = true, timeout: Duration = .seconds(60))
        async throws
    {
        precondition(!isRunning, "the server is already running")
        let process = Process()
        process.executableURL = try BuiltProducts.executable("aerie-server")
        process.environment = environment.merging(extra) { _, new in new }
        if !FileManager.default.fileExists(atPath: logFile.path) {
            _ = FileManager.default.createFile(atPath: logFile.path, contents: nil)
        }
        let log = try FileHandle(forWritingTo: logFile)
        log.seekToEndOfFile()
        launches += 1
        log.write(Data("---- launch \(launches) \(extra)\n".utf8))
        process.standardOutput = log
        process.standardError = log
        process.standardInput = FileHandle.nullDevice
        try process.run()
        self.process = process
        if ready { try await waitUntilReady(timeout: timeout) }
    }

    /// Waits until the JSON-RPC port answers `system.ping`.
    public func waitUntilReady(timeout: Duration = .seconds(60)) async throws {
        let deadline = ContinuousClock.now + timeout
        while true {
            if let client = try? await AerieClient.connect(host: "127.0.0.1", port: rpcPort) {
                let pong = try? await client.call("system.ping")
                await client.close()
                if pong == "pong" { return }
            }
            guard isRunning else { throw Unavailable(description: "aerie-server exited:\n\(log().suffix(3000))") }
            guard ContinuousClock.now < deadline else {
                throw Unavailable(description: "aerie-server not ready within \(timeout):\n\(log().suffix(3000))")
            }
            try await Task.sleep(for: .milliseconds(100))
        }
    }

    /// `kill -9`: no shutdown, nothing flushed; waits until the process is gone.
    public func kill9() async {
        guard let process, process.isRunning else { return }
        kill(process.processIdentifier, SIGKILL)
        await waitForExit(process)
    }

    /// SIGTERM (graceful), then SIGKILL after `grace`.
    public func stop(grace: Duration = .seconds(20)) async {
        guard let process, process.isRunning else { return }
        kill(process.processIdentifier, SIGTERM)
        let deadline = ContinuousClock.now + grace
        while process.isRunning, ContinuousClock.now < deadline { try? await Task.sleep(for: .milliseconds(50)) }
        if process.isRunning { kill(process.processIdentifier, SIGKILL) }
        await waitForExit(process)
    }

    /// Waits (bounded) for a process that ends by itself, e.g. at a fault point. True if it ended.
    public func waitForExit(timeout: Duration) async -> Bool {
        guard let process else { return true }
        let deadline = ContinuousClock.now + timeout
        while process.isRunning, ContinuousClock.now < deadline { try? await Task.sleep(for: .milliseconds(20)) }
        return !process.isRunning
    }

    private func waitForExit(_ process: Process) async {
        while process.isRunning { try? await Task.sleep(for: .milliseconds(20)) }
    }

    /// Stops the server (and, embedded, its cluster, which a killed server leaves running) and
    /// removes the state directory.
    public func cleanUp() async {
        await stop()
        let cluster = EmbeddedPostgres.clusterDirectory(forHome: home)
        let data = cluster.appendingPathComponent("data")
        if FileManager.default.fileExists(atPath: data.appendingPathComponent("postmaster.pid").path) {
            _ = try? await PostgresControl.run(["stop", "-D", data.path, "-m", "immediate"])
        }
        try? FileManager.default.removeItem(at: cluster)
        try? FileManager.default.removeItem(at: home)
    }

    public var adminToken: String {
        get throws {
            try String(contentsOf: home.appendingPathComponent("admin-token"), encoding: .utf8)
                .trimmingCharacters(in: .whitespacesAndNewlines)
        }
    }

    public func client() async throws -> AerieClient {
        try await AerieClient.connect(host: "127.0.0.1", port: rpcPort)
    }

    /// Creates a tenant through the admin API; answers its id and token.
    public func createTenant(label: String) async throws -> (id: String, token: String) {
        let admin = try await client()
        defer { Task { await admin.close() } }
        try await admin.authenticate(token: try adminToken)
        let created = try await admin.call("admin.tenants.create", params: ["label": .string(label)])
        guard let id = created["tenantId"]?.stringValue, let token = created["token"]?.stringValue else {
            throw Unavailable(description: "unexpected admin.tenants.create result \(created)")
        }
        return (id, token)
    }

    /// A session authenticated with `token`.
    public func tenantClient(token: String) async throws -> AerieClient {
        let client = try await client()
        try await client.authenticate(token: token)
        return client
    }

    public func log() -> String {
        (try? String(contentsOf: logFile, encoding: .utf8)) ?? ""
    }
}

/// `pg_ctl` of the installed PostgreSQL, run as the `postgres` user when we are root (a cluster
/// made by `initdb` as root would be refused).
public enum PostgresControl {
    /// Runs `pg_ctl arguments` to completion on a thread of its own; answers its exit status.
    public static func run(_ arguments: [String]) async throws -> Int32 {
        let pgctl = URL(fileURLWithPath: try binDirectory() + "/pg_ctl")
        let user = getuid() == 0 ? "postgres" : nil
        return try await offPool {
            // AerieStore's spawn, not Foundation's Process: a restarted postmaster keeps every
            // inherited descriptor, and Process would wait for them to close.
            try Subprocess.run(pgctl, arguments, as: user, in: URL(fileURLWithPath: "/tmp")).status
        }
    }

    static func binDirectory() throws -> String {
        let root = "/usr/lib/postgresql"
        let versions = (try? FileManager.default.contentsOfDirectory(atPath: root)) ?? []
        for version in versions.sorted(by: { (Int($0) ?? 0) > (Int($1) ?? 0) }) {
            let bin = "\(root)/\(version)/bin"
            if FileManager.default.isExecutableFile(atPath: bin + "/pg_ctl") { return bin }
        }
        throw ServerProcess.Unavailable(description: "no PostgreSQL server binaries under \(root)")
    }
}

extension ServerProcess {
    /// A server process (not started) on a fresh database with `environment`, and a runtime-role
    /// pool on that database, for `body`. Afterwards, whether `body` returned or threw (then with
    /// the server's log printed), the server is stopped, the pool closed and the database dropped.
    public static func onFreshDatabase<T>(
        environment: [String: String] = [:], _ body: (ServerProcess, AerieDatabase) async throws -> T
    ) async throws -> T {
        let database = try await TestPostgres.shared.freshDatabase()
        let server = try ServerProcess(database: database, environment: environment)
        let runtime = database.runtime()
        do {
            let result = try await body(server, runtime)
            await server.cleanUp()
            await runtime.shutdown()
            try? await database.drop()
            return result
        } catch {
            print("server log:\n\(server.log().suffix(4000))")
            await server.cleanUp()
            await runtime.shutdown()
            try? await database.drop()
            throw error
        }
    }
}
