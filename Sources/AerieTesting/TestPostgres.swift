import AerieStore
import Foundation
import Logging
import Synchronization

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A PostgreSQL cluster for tests, shared by the whole test process, with one fresh database
/// per test so tests can run in parallel.
///
/// With `AERIE_TEST_PG` set (a superuser connection string; `scripts/test` starts a throwaway
/// cluster and sets it), that cluster is used. Otherwise the first caller starts an
/// `EmbeddedPostgres` in a temporary directory with durability off (fsync, full-page writes),
/// which is stopped and deleted when the process exits.
public final class TestPostgres: Sendable {
    /// The one instance per test process.
    public static let shared = TestPostgres()

    private init() {}

    /// Makes the embedded cluster (when this process starts one) run with exactly the settings
    /// `aerie-server`'s embedded PostgreSQL runs with, durability on (fsync, synchronous commit,
    /// full-page writes), instead of the tests' throwaway settings: for benchmarks that count the
    /// database's CPU as part of the system (`aerie-bench connections --durable`). Call it before
    /// the first database is asked for; it changes nothing with `AERIE_TEST_PG` set.
    public static func useServerDefaults() {
        SharedCluster.serverDefaults.withLock { $0 = true }
    }

    /// Whether the cluster runs with the server's own settings (see `useServerDefaults`).
    public static var usesServerDefaults: Bool {
        SharedCluster.serverDefaults.withLock { $0 } && ProcessInfo.processInfo.environment["AERIE_TEST_PG"].map(\.isEmpty) ?? true
    }

    /// The superuser connection string of the shared cluster (starting it if needed).
    public func superuserConninfo() async throws -> String {
        try await SharedCluster.shared.cluster().superuserConninfo
    }

    /// Creates a uniquely named database owned by `aerie_owner` and, unless `migrate` is false,
    /// applies the repository's migrations to it as the owner.
    public func freshDatabase(migrate: Bool = true) async throws -> TestDatabase {
        let cluster = try await SharedCluster.shared.cluster()
        let name = "aerie_test_" + UUID().uuidString.prefix(13).lowercased().replacingOccurrences(of: "-", with: "")
        let database = try TestDatabase(name: name, cluster: cluster)
        try await database.create()
        if migrate { try await database.migrator().migrate() }
        return database
    }

    /// A fresh migrated database and a runtime-role handle on it, both torn down after `body`
    /// (also when it throws).
    public func withFreshRuntime(
        maxConnections: Int = 4, acquireTimeout: Duration = .seconds(10),
        configure: (inout DatabaseConfiguration) -> Void = { _ in },
        _ body: (TestDatabase, AerieDatabase) async throws -> Void
    ) async throws {
        let database = try await freshDatabase()
        let runtime = database.runtime(maxConnections: maxConnections, acquireTimeout: acquireTimeout, configure: configure)
        do {
            try await body(database, runtime)
        } catch {
            await runtime.shutdown()
            try? await database.drop()
            throw error
        }
        await runtime.shutdown()
        try await database.drop()
    }
}

/// The cluster every test database lives in.
struct TestCluster: Sendable {
    var superuserConninfo: String
    /// Set on the aerie roles of an external cluster, in case it wants passwords.
    var password: String?
}

/// Starts (or adopts) the cluster once per process, whichever test asks first.
private actor SharedCluster {
    static let shared = SharedCluster()
    static let serverDefaults = Mutex(false)
    private var starting: Task<TestCluster, any Error>?

    func cluster() async throws -> TestCluster {
        if let starting { return try await starting.value }
        let task = Task { try await Self.start() }
        starting = task
        return try await task.value
    }

    private static func start() async throws -> TestCluster {
        if let external = ProcessInfo.processInfo.environment["AERIE_TEST_PG"], !external.isEmpty {
            let password = "aerie-test"
            try await TestDatabase.ensureRoles(superuserConninfo: external, password: password)
            return TestCluster(superuserConninfo: external, password: password)
        }
        ExitCleanup.sweepAbandoned()
        // Short path: the socket path must stay under the Unix limit.
        let home = URL(fileURLWithPath: "\(ExitCleanup.prefix)\(getpid())-\(UUID().uuidString.prefix(6))")
        let throwaway = [
            "fsync": "off", "synchronous_commit": "off", "full_page_writes": "off",
            "max_connections": "400", "shared_buffers": "64MB",
        ]
        let embedded = EmbeddedPostgres(
            home: home, settings: serverDefaults.withLock { $0 } ? [:] : throwaway,
            logger: quietLogger("aerie.test.postgres"))
        ExitCleanup.register(clusterDirectory: embedded.clusterDirectory, home: home)
        let connection = try await embedded.start()
        return TestCluster(superuserConninfo: connection.superuserConninfo, password: nil)
    }
}

/// Stops the embedded test cluster when the test process exits, and the clusters of earlier
/// test processes that died without running their exit handlers (killed by a signal).
private enum ExitCleanup {
    static let prefix = "/tmp/aerie-test-"
    private static let paths = Mutex<(cluster: String, home: String)?>(nil)

    static func register(clusterDirectory: URL, home: URL) {
        let first = paths.withLock { paths in
            defer { paths = (clusterDirectory.path, home.path) }
            return paths == nil
        }
        if first { atexit { ExitCleanup.run() } }
    }

    /// Removes `/tmp/aerie-test-<pid>-*` directories whose test process is gone.
    static func sweepAbandoned() {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: "/tmp")) ?? []
        for name in names where name.hasPrefix("aerie-test-") {
            let owner = name.dropFirst("aerie-test-".count).prefix { $0.isNumber }
            guard let pid = pid_t(owner), pid != getpid(), kill(pid, 0) == -1, errno == ESRCH else { continue }
            let cluster = EmbeddedPostgres.clusterDirectory(forHome: URL(fileURLWithPath: "/tmp/\(name)"))
            stopCluster(in: cluster.path, thenRemove: "/tmp/\(name)")
        }
    }

    /// Runs in `atexit`: no processes to spawn, just SIGQUIT (immediate shutdown) to the
    /// postmaster named in postmaster.pid, a bounded wait, and removal of the directory.
    private static func run() {
        guard let (cluster, home) = paths.withLock({ $0 }) else { return }
        stopCluster(in: cluster, thenRemove: home)
    }

    private static func stopCluster(in cluster: String, thenRemove home: String) {
        let pidFile = cluster + "/data/postmaster.pid"
        if let text = try? String(contentsOfFile: pidFile, encoding: .utf8),
            let pid = text.split(separator: "\n").first.flatMap({ pid_t($0) }), pid > 0
        {
            kill(pid, SIGQUIT)
            // The postmaster removes its pid file on the way out. (A zombie still answers
            // kill(pid, 0) where PID 1 does not reap, so that alone cannot be the test.)
            for _ in 0..<100 where FileManager.default.fileExists(atPath: pidFile) && kill(pid, 0) == 0 {
                usleep(50_000)
            }
        }
        try? FileManager.default.removeItem(atPath: cluster)
        try? FileManager.default.removeItem(atPath: home)
    }
}
