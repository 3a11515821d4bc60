import Foundation
import Logging
import NIOPosix

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The zero-configuration default: a private PostgreSQL cluster for `<home>`, created on first
/// start and reused afterwards (see `clusterDirectory(forHome:)` for where it lives).
///
/// The server listens on no TCP port (`listen_addresses = ''`), only on a Unix socket in the
/// cluster's `run` directory, of mode 0700. Authentication is `trust`, which is acceptable only
/// because of that: no other OS user can reach the socket (root aside). When we run as root, the
/// cluster runs as the `postgres` OS user (PostgreSQL refuses root) and its directories are
/// chowned to it.
///
/// Roles: `aerie_owner` owns database `aerie` and runs migrations; `aerie_app`, member of the
/// NOLOGIN group `aerie_runtime`, is what the server connects as.
public struct EmbeddedPostgres: Sendable {
    /// Connection strings for the started cluster.
    public struct Connection: Sendable, Hashable {
        /// The owner role on database `aerie`: for `Migrator`.
        public var ownerConninfo: String
        /// The runtime login on database `aerie`: for `AerieDatabase`.
        public var runtimeConninfo: String
        /// The bootstrap superuser on database `postgres`: for tests and maintenance only.
        public var superuserConninfo: String
        /// The directory holding the cluster's Unix socket.
        public var socketDirectory: URL
    }

    public let home: URL
    /// Extra `postgresql.conf` settings, e.g. `["fsync": "off"]` for a throwaway test cluster.
    public var settings: [String: String]
    public var databaseName: String
    public var logger: Logger

    public static let port = 5432
    /// What an operator must keep for acknowledged commits to survive a crash (docs/OPERATIONS.md,
    /// "Restarts and durability").
    public static let durabilitySettings: [(String, String)] = [
        ("fsync", "on"), ("synchronous_commit", "on"), ("full_page_writes", "on"),
    ]
    /// What an idle cluster wakes for: with the default one-minute naptime the autovacuum
    /// launcher starts a worker for each database every minute (a fork, a connection and a
    /// catalog read each, most of an idle cluster's CPU). Five minutes delays a busy table's
    /// vacuum by at most that much; durability is untouched.
    public static let idleSettings: [(String, String)] = [("autovacuum_naptime", "'5min'")]
    private static let superuser = "postgres"
    private static let osUser = "postgres"

    public init(
        home: URL, settings: [String: String] = [:], databaseName: String = "aerie",
        logger: Logger = Logger(label: "aerie.embedded-postgres")
    ) {
        self.home = home.standardizedFileURL
        self.clusterDirectory = Self.clusterDirectory(forHome: self.home)
        self.settings = settings
        self.databaseName = databaseName
        self.logger = logger
    }

    /// The cluster's directory (data, socket, log): see `clusterDirectory(forHome:)`.
    public let clusterDirectory: URL

    /// Where the cluster of `home` lives: `<home>/pg`, unless we run as root and the `postgres`
    /// OS user, which runs it, cannot reach that (a home inside root's mode-0700 home directory):
    /// then `<postgres's home>/aerie/<hash of home's absolute path>`, owned by that user, mode
    /// 0700. An existing cluster is found where it is (`<home>/pg` first), so data survives
    /// restarts and an existing `<home>/pg` is used in place; a new one goes to `<home>/pg` when
    /// it can be reached. Only stat calls: cheap enough for every caller.
    public static func clusterDirectory(forHome home: URL) -> URL {
        let home = home.standardizedFileURL
        let local = home.appendingPathComponent("pg")
        guard geteuid() == 0, let entry = getpwnam(osUser) else { return local }
        let owner = ClusterOwner(name: osUser, uid: entry.pointee.pw_uid, gid: entry.pointee.pw_gid)
        let system = URL(fileURLWithPath: String(cString: entry.pointee.pw_dir))
            .appendingPathComponent("aerie").appendingPathComponent(homeDigest(home.path))
        let files = FileManager.default
        if files.fileExists(atPath: local.appendingPathComponent("data/PG_VERSION").path) { return local }
        if files.fileExists(atPath: system.appendingPathComponent("data/PG_VERSION").path) { return system }
        return canSearch(home.deletingLastPathComponent(), as: owner) ? local : system
    }

    /// Whether `owner` can search `directory` and each of its parents (mode bits only; the
    /// `test -w` run as that user in `prepareDirectories` is the final word). A directory not
    /// created yet counts as searchable: it will be created with the usual umask.
    private static func canSearch(_ directory: URL, as owner: ClusterOwner) -> Bool {
        var path = directory.path
        while true {
            var info = stat()
            if stat(path, &info) == 0 {
                let mode = info.st_mode
                let allowed =
                    info.st_uid == owner.uid ? mode & 0o100 != 0 : info.st_gid == owner.gid ? mode & 0o010 != 0 : mode & 0o001 != 0
                if !allowed { return false }
            }
            if path == "/" || path.isEmpty { return true }
            path = (path as NSString).deletingLastPathComponent
        }
    }

    /// 16 hex digits (FNV-1a, 64 bits) naming a home's cluster under the system location; the
    /// cluster's `home` file holds the full path, checked on every start.
    static func homeDigest(_ path: String) -> String {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in path.utf8 {
            hash ^= UInt64(byte)
            hash &*= 0x0000_0100_0000_01b3
        }
        let hex = String(hash, radix: 16)
        return String(repeating: "0", count: 16 - hex.count) + hex
    }

    /// Whether the cluster lives outside `<home>` (the system location for root).
    var isOutsideHome: Bool { clusterDirectory != home.appendingPathComponent("pg") }
    var homeRecord: URL { clusterDirectory.appendingPathComponent("home") }
    var dataDirectory: URL { clusterDirectory.appendingPathComponent("data") }
    var socketDirectory: URL { clusterDirectory.appendingPathComponent("run") }
    var logFile: URL { clusterDirectory.appendingPathComponent("postgres.log") }

    /// Creates the cluster if needed, starts it unless it is already running, and makes sure
    /// the roles and database exist. Blocking work runs on NIO's blocking thread pool.
    public func start() async throws -> Connection {
        try await NIOThreadPool.singleton.runIfActive { [self] in try startBlocking() }
    }

    /// Stops the cluster (`pg_ctl stop -m fast`): sessions are disconnected, nothing is lost.
    /// Stopping a cluster that is not running is not an error.
    public func stop() async throws {
        try await NIOThreadPool.singleton.runIfActive { [self] in try stopBlocking() }
    }

    /// Whether the cluster under `home` is running: its socket accepts a connection.
    public func isRunning() async throws -> Bool {
        try await NIOThreadPool.singleton.runIfActive { [self] in
            (try? PostgresConnection(conninfo: connectionStrings().superuserConninfo)) != nil
        }
    }

    // MARK: - Blocking implementation

    func startBlocking() throws -> Connection {
        let binaries = try PostgresBinaries.locate()
        let owner = try clusterOwner()
        try prepareDirectories(owner: owner)

        if !FileManager.default.fileExists(atPath: dataDirectory.appendingPathComponent("PG_VERSION").path) {
            try initializeCluster(binaries, owner: owner)
        }
        try writeConfiguration(owner: owner)

        // A server that answers is reused (e.g. the one a killed aerie-server left running); one
        // still starting or recovering is waited for; anything else gets `pg_ctl start`, after
        // a lock file whose PID now belongs to another program is cleared (see `clearStaleLock`).
        let connection = connectionStrings()
        var running = try? PostgresConnection(conninfo: connection.superuserConninfo)
        if running == nil, try clearStaleLock() {
            running = waitForConnection(connection.superuserConninfo, seconds: 60)
            guard running != nil else {
                throw DatabaseSetupError(
                    "the embedded PostgreSQL in \(dataDirectory.path) is running but does not accept connections\n\(logTail())")
            }
        }
        if running != nil {
            logger.info("reusing running embedded PostgreSQL", metadata: ["data": "\(dataDirectory.path)"])
        } else {
            let started = try pgCtl(
                binaries,
                ["start", "-D", dataDirectory.path, "-l", logFile.path, "-w", "-t", "60", "-s"],
                owner: owner)
            guard started.status == 0 else {
                throw DatabaseSetupError(
                    "embedded PostgreSQL did not start: \(started.output.trimmed)\n\(logTail())")
            }
            logger.info("started embedded PostgreSQL", metadata: ["socket": "\(socketDirectory.path)"])
        }
        do {
            let superuser = try running ?? PostgresConnection(conninfo: connection.superuserConninfo)
            defer { superuser.close() }
            try DatabaseProvisioner.ensureRoles(superuser, password: nil)
            try DatabaseProvisioner.ensureDatabase(superuser, name: databaseName)
        } catch let error as PostgresError {
            throw DatabaseSetupError("cannot set up roles in the embedded PostgreSQL: \(error)")
        }
        return connection
    }

    /// Before `pg_ctl start` when nothing answers on the socket. Returns true when the cluster's
    /// own postmaster is alive (starting up, or recovering after a crash): the caller waits for it.
    ///
    /// PostgreSQL itself ignores a postmaster.pid whose process is gone, but refuses to start
    /// while that PID is alive, whatever program holds it now: after a crash and a reboot or in
    /// a container, PIDs are reused. So when no process at all runs in the data directory (every
    /// PostgreSQL process has it as its working directory: postmaster, backends, orphans of a
    /// killed postmaster), a lock file naming a live PID is stale and removed, with the socket's
    /// lock file. Orphaned backends of a killed postmaster are given time to exit first, since
    /// they still hold the shared memory a new postmaster must not share.
    func clearStaleLock() throws -> Bool {
        #if os(Linux)
        let pidFile = dataDirectory.appendingPathComponent("postmaster.pid")
        guard let text = try? String(contentsOf: pidFile, encoding: .utf8),
            let pid = text.split(separator: "\n").first.flatMap({ pid_t($0.trimmingCharacters(in: .whitespaces)) }), pid > 0
        else { return false }
        var inDirectory = processesInDataDirectory()
        if inDirectory.contains(pid) { return true }
        var waited = 0
        while !inDirectory.isEmpty, waited < 100 {
            Thread.sleep(forTimeInterval: 0.1)
            waited += 1
            inDirectory = processesInDataDirectory()
        }
        guard inDirectory.isEmpty else {
            throw DatabaseSetupError(
                "processes \(inDirectory.sorted()) of an earlier embedded PostgreSQL still run in \(dataDirectory.path) "
                    + "without their postmaster; stop them, then start again")
        }
        let alive = kill(pid, 0) == 0 || errno == EPERM
        if alive {
            logger.warning(
                "removing a stale postmaster.pid whose PID now belongs to another process",
                metadata: ["pid": "\(pid)", "data": "\(dataDirectory.path)"])
            try? FileManager.default.removeItem(at: pidFile)
            try? FileManager.default.removeItem(at: socketDirectory.appendingPathComponent(".s.PGSQL.\(Self.port).lock"))
        }
        return false
        #else
        return false
        #endif
    }

    /// PIDs of the processes whose working directory is the data directory (Linux /proc).
    func processesInDataDirectory() -> Set<pid_t> {
        let target = dataDirectory.resolvingSymlinksInPath().path
        guard let entries = try? FileManager.default.contentsOfDirectory(atPath: "/proc") else { return [] }
        var found: Set<pid_t> = []
        for entry in entries {
            guard let pid = pid_t(entry), pid != getpid(),
                let cwd = try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/\(entry)/cwd")
            else { continue }
            if cwd == target { found.insert(pid) }
        }
        return found
    }

    private func waitForConnection(_ conninfo: String, seconds: Int) -> PostgresConnection? {
        for _ in 0..<(seconds * 10) {
            if let connection = try? PostgresConnection(conninfo: conninfo) { return connection }
            Thread.sleep(forTimeInterval: 0.1)
        }
        return nil
    }

    func stopBlocking() throws {
        guard FileManager.default.fileExists(atPath: dataDirectory.appendingPathComponent("PG_VERSION").path) else {
            return
        }
        let binaries = try PostgresBinaries.locate()
        let owner = try clusterOwner()
        let status = try pgCtl(binaries, ["status", "-D", dataDirectory.path], owner: owner)
        guard status.status == 0 else { return }
        let stopped = try pgCtl(binaries, ["stop", "-D", dataDirectory.path, "-m", "fast", "-w", "-t", "60", "-s"], owner: owner)
        guard stopped.status == 0 else {
            throw DatabaseSetupError("embedded PostgreSQL did not stop: \(stopped.output.trimmed)")
        }
        // `pg_ctl stop -w` returns once postmaster.pid is gone, which the postmaster removes just
        // before it exits: wait for its last processes, so that whoever starts the cluster next
        // (a supervisor restarting us at once) finds none of them.
        var waited = 0
        while !processesInDataDirectory().isEmpty, waited < 100 {
            Thread.sleep(forTimeInterval: 0.05)
            waited += 1
        }
        let left = processesInDataDirectory()
        if !left.isEmpty {
            logger.warning(
                "embedded PostgreSQL stopped but processes still run in its data directory",
                metadata: ["pids": "\(left.sorted())", "data": "\(dataDirectory.path)"])
        }
        logger.info("stopped embedded PostgreSQL")
    }

    func connectionStrings() -> Connection {
        let host = socketDirectory.path
        let port = String(Self.port)
        return Connection(
            ownerConninfo: ConnectionString.make([
                "host": host, "port": port, "dbname": databaseName, "user": DatabaseProvisioner.ownerRole,
            ]),
            runtimeConninfo: ConnectionString.make([
                "host": host, "port": port, "dbname": databaseName, "user": DatabaseProvisioner.runtimeLoginRole,
            ]),
            superuserConninfo: ConnectionString.make([
                "host": host, "port": port, "dbname": "postgres", "user": Self.superuser,
            ]),
            socketDirectory: socketDirectory)
    }

    /// The OS user to run the cluster as: `postgres` when we are root, else ourselves (nil).
    private struct ClusterOwner {
        var name: String
        var uid: uid_t
        var gid: gid_t
    }

    private func clusterOwner() throws -> ClusterOwner? {
        guard geteuid() == 0 else { return nil }
        guard let entry = getpwnam(Self.osUser) else {
            throw DatabaseSetupError(
                "running as root, the embedded PostgreSQL needs an OS user '\(Self.osUser)' (apt-get install postgresql creates it)")
        }
        return ClusterOwner(name: Self.osUser, uid: entry.pointee.pw_uid, gid: entry.pointee.pw_gid)
    }

    private func prepareDirectories(owner: ClusterOwner?) throws {
        let socketPath = socketDirectory.appendingPathComponent(".s.PGSQL.\(Self.port)").path
        guard socketPath.utf8.count < 108 else {
            throw DatabaseSetupError(
                "the embedded PostgreSQL socket path \(socketPath) is too long for a Unix socket; use a shorter AERIE_HOME")
        }
        let files = FileManager.default
        let parent = clusterDirectory.deletingLastPathComponent()
        do {
            try files.createDirectory(at: home, withIntermediateDirectories: true)
            try files.createDirectory(at: parent, withIntermediateDirectories: true)
            try files.createDirectory(at: clusterDirectory, withIntermediateDirectories: true)
            try files.createDirectory(at: socketDirectory, withIntermediateDirectories: true)
        } catch {
            throw DatabaseSetupError("cannot create \(socketDirectory.path): \(error)")
        }
        try setMode(0o700, clusterDirectory)
        try setMode(0o700, socketDirectory)
        try checkHomeRecord()
        guard let owner else { return }
        var cluster = [clusterDirectory, socketDirectory]
        if isOutsideHome {
            // <postgres's home>/aerie: the clusters of homes that user cannot reach, its alone.
            try setMode(0o700, parent)
            cluster.insert(parent, at: 0)
        } else {
            // The postgres user must be able to reach <home>/pg: give <home> search (not read) permission.
            var info = stat()
            if stat(home.path, &info) == 0, info.st_mode & 0o011 != 0o011 {
                try setMode(mode_t(info.st_mode & 0o7777) | 0o011, home)
            }
        }
        for directory in cluster {
            guard chown(directory.path, owner.uid, owner.gid) == 0 else {
                throw DatabaseSetupError("cannot chown \(directory.path) to \(owner.name): \(String(cString: strerror(errno)))")
            }
        }
        let reachable = try Subprocess.run(
            URL(fileURLWithPath: "/usr/bin/test"), ["-w", clusterDirectory.path], as: owner.name, in: URL(fileURLWithPath: "/"))
        guard reachable.status == 0 else {
            throw DatabaseSetupError(
                "the '\(owner.name)' OS user cannot reach \(clusterDirectory.path): every parent directory needs search "
                    + "permission for it; choose another AERIE_HOME")
        }
    }

    /// A cluster outside the home records the home's path, so a digest shared by two homes is
    /// refused instead of mixing their data, and an operator can tell whose cluster it is.
    private func checkHomeRecord() throws {
        guard isOutsideHome else { return }
        if let recorded = try? String(contentsOf: homeRecord, encoding: .utf8) {
            guard recorded.trimmed == home.path else {
                throw DatabaseSetupError(
                    "the embedded PostgreSQL in \(clusterDirectory.path) belongs to AERIE_HOME \(recorded.trimmed), "
                        + "not \(home.path); choose another AERIE_HOME")
            }
            return
        }
        do {
            try (home.path + "\n").write(to: homeRecord, atomically: true, encoding: .utf8)
        } catch {
            throw DatabaseSetupError("cannot write \(homeRecord.path): \(error)")
        }
    }

    private func initializeCluster(_ binaries: PostgresBinaries, owner: ClusterOwner?) throws {
        // A data directory without PG_VERSION is a half-finished initdb: start over.
        try? FileManager.default.removeItem(at: dataDirectory)
        logger.info("initialising embedded PostgreSQL cluster", metadata: ["data": "\(dataDirectory.path)"])
        var arguments = [
            "-D", dataDirectory.path, "-U", Self.superuser, "--auth=trust", "--encoding=UTF8", "--locale=C",
            "--no-instructions",
        ]
        // A cluster configured without fsync is a throwaway one: skip initdb's fsync too.
        if settings["fsync"] == "off" { arguments.append("--no-sync") }
        let result = try Subprocess.run(binaries.initdb, arguments, as: owner?.name, in: clusterDirectory)
        guard result.status == 0 else {
            throw DatabaseSetupError("initdb failed: \(result.output.trimmed)")
        }
    }

    /// Rewrites `aerie.conf` (included from `postgresql.conf`) on every start, so a moved home
    /// or changed settings take effect.
    private func writeConfiguration(owner: ClusterOwner?) throws {
        var lines = [
            "# Written by Aerie on every start; edit EmbeddedPostgres settings instead.",
            "listen_addresses = ''",
            "unix_socket_directories = \(Self.quoteSetting(socketDirectory.path))",
            "unix_socket_permissions = 0700",
            "port = \(Self.port)",
        ]
        // Durability: a commit acknowledged to a client survives a crash of PostgreSQL or of the
        // machine. Written explicitly so that an edited postgresql.conf cannot turn them off;
        // only `settings` (throwaway test clusters) may.
        for (key, value) in Self.durabilitySettings where settings[key] == nil {
            lines.append("\(key) = \(value)")
        }
        for (key, value) in Self.idleSettings where settings[key] == nil {
            lines.append("\(key) = \(value)")
        }
        for (key, value) in settings.sorted(by: { $0.key < $1.key }) {
            lines.append("\(key) = \(Self.quoteSetting(value))")
        }
        let include = dataDirectory.appendingPathComponent("aerie.conf")
        let main = dataDirectory.appendingPathComponent("postgresql.conf")
        do {
            try (lines.joined(separator: "\n") + "\n").write(to: include, atomically: false, encoding: .utf8)
            let existing = try String(contentsOf: main, encoding: .utf8)
            let directive = "include_if_exists = 'aerie.conf'"
            if !existing.contains(directive) {
                try (existing + "\n" + directive + "\n").write(to: main, atomically: false, encoding: .utf8)
            }
        } catch {
            throw DatabaseSetupError("cannot write the embedded PostgreSQL configuration: \(error)")
        }
        if let owner { _ = chown(include.path, owner.uid, owner.gid) }
    }

    private func pgCtl(_ binaries: PostgresBinaries, _ arguments: [String], owner: ClusterOwner?) throws -> Subprocess.Outcome {
        try Subprocess.run(binaries.pgCtl, arguments, as: owner?.name, in: clusterDirectory)
    }

    private func setMode(_ mode: mode_t, _ url: URL) throws {
        guard chmod(url.path, mode) == 0 else {
            throw DatabaseSetupError("cannot chmod \(url.path): \(String(cString: strerror(errno)))")
        }
    }

    private func logTail() -> String {
        guard let text = try? String(contentsOf: logFile, encoding: .utf8) else { return "" }
        return "last lines of \(logFile.path):\n" + text.split(separator: "\n").suffix(20).joined(separator: "\n")
    }

    private static func quoteSetting(_ value: String) -> String {
        "'" + value.replacingOccurrences(of: "'", with: "''") + "'"
    }
}

extension String {
    fileprivate var trimmed: String { trimmingCharacters(in: .whitespacesAndNewlines) }
}
