import AerieClient
import AerieCore
import AerieStore
import AerieTesting
import Foundation
import Logging
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// `aerie-bench connections`: the same ACA-Py 1.2.7 inviter; 50 connections accepted by Aerie
/// (a separate `aerie-server` process) and 50 by an ACA-Py 1.2.7 invitee, one after another and
/// then 10 at a time. Prints wall time and the CPU seconds each invitee process used, with
/// Aerie's PostgreSQL shown separately (ACA-Py keeps its wallet in-process).
///
/// The two invitees take turns (`rounds` rounds, each a share of the connections by one, then
/// by the other, who goes first alternating), so both are measured over the same minutes: this
/// host's speed drifts by up to 1.6x within minutes (docs/BENCHMARKS.md), and each invitee had
/// a half of its own before. The ratio's spread stayed (0.107-0.147 either way): ACA-Py's own
/// figure moves from run to run by more than the drift.
struct ConnectionsBench {
    var count: Int
    var concurrency: Int
    /// Connections made by each invitee, `concurrency` at a time, before anything is measured.
    var warmup: Int = 0
    /// ANALYZE Aerie's database after the warm-up (what autovacuum does within a minute of a
    /// deployment's tables filling).
    var analyze: Bool = false
    /// Aerie's connections go to this many tenants in turn (ACA-Py's invitee is one wallet).
    var tenants: Int = 1
    /// Aerie's tenants are a backend's, which write the durable event log (schema/0033), rather
    /// than the operator's.
    var backendTenants = false
    /// Aerie's accepts ask the inviter to answer on the Request's own HTTP response
    /// (`returnRoute`, `~transport.return_route: all`) instead of POSTing the Response.
    var returnRoute = false
    /// ACA-Py's invitee keeps its wallet in a sqlite file (its deployed form) instead of in memory
    /// (`--wallet-test`, the anchor issue 16's figures were taken with).
    var acapyWalletFile = false
    /// Turns each invitee takes per mode (see the type's comment).
    var rounds: Int = 5
    /// After each turn, before its CPU is read: the work a turn started and has not finished
    /// (the trust ping still being sent, the peer's last answer) is counted in that turn.
    static let settle: Duration = .milliseconds(300)

    struct Run {
        var invitee: String
        var mode: String
        /// Seconds the turns' connections took (the settles after them not included).
        var wall: Double = 0
        var cpu: Double = 0
        var databaseCPU: Double?
        /// Aerie only: database round trips of the whole run (its `aerie_db_round_trips_total`).
        var roundTrips: Double?
    }

    func run() async throws -> String {
        // Each process is stopped whatever fails after its start (the next one's start included):
        // the agents are not killed with this process when it exits.
        let runs = try await Self.stopping(
            try await ACAPyAgent.start(label: "Bench Inviter", extraArguments: ["--auto-respond-messages"]), stop: { await $0.stop() }
        ) { inviter in
            try await Self.stopping(
                try await ACAPyAgent.start(
                    label: "Bench Invitee", extraArguments: ["--auto-accept-invites"], wallet: acapyWalletFile ? .file : .versionDefault),
                stop: { await $0.stop() }
            ) { invitee in
                try await Self.stopping(try await AerieProcess.start(), stop: { await $0.stop() }) { aerie in
                    try await measureAll(inviter: inviter, invitee: invitee, aerie: aerie)
                }
            }
        }
        return report(runs)
    }

    /// `body` with `resource`, stopped after it whether `body` returned or threw.
    private static func stopping<Resource, T>(
        _ resource: Resource, stop: (Resource) async -> Void, _ body: (Resource) async throws -> T
    ) async throws -> T {
        let value: T
        do {
            value = try await body(resource)
        } catch {
            await stop(resource)
            throw error
        }
        await stop(resource)
        return value
    }

    /// Both invitees' turns, sequentially and `concurrency` at a time.
    private func measureAll(inviter: ACAPyAgent, invitee: ACAPyAgent, aerie: AerieProcess) async throws -> [Run] {
        var runs: [Run] = []
        var clients: [AerieClient] = []
        for _ in 0..<max(1, tenants) { clients.append(try await aerie.tenantClient(backend: backendTenants).0) }
        let tenantClients = clients
        let next = Mutex(0)
        let aerieConnection: @Sendable () async throws -> Void = {
            let invitation = try await inviter.admin("POST", "/connections/create-invitation", body: [:])
            let url = invitation["invitation_url"] ?? .null
            let tenant = tenantClients[next.withLock { n in defer { n += 1 }; return n % tenantClients.count }]
            let result = try await tenant.call(
                "connections.accept", params: ["url": url, "wait": true, "returnRoute": .bool(returnRoute)])
            guard result["state"]?.intValue == 4 else { throw BenchFailure("Aerie ended in \(result.jsonString)") }
        }
        let acapyConnection: @Sendable () async throws -> Void = {
            let invitation = try await inviter.admin("POST", "/connections/create-invitation", body: [:])
            let received = try await invitee.admin(
                "POST", "/connections/receive-invitation?auto_accept=true", body: invitation["invitation"] ?? .null)
            guard let id = received["connection_id"]?.stringValue else { throw BenchFailure("no connection_id") }
            _ = try await invitee.waitForConnection(id, states: ["response", "active", "completed"])
        }
        if warmup > 0 {
            try await Self.launch(warmup, width: concurrency, aerieConnection)
            try await Self.launch(warmup, width: concurrency, acapyConnection)
        }
        if analyze { try await aerie.analyze() }
        for (mode, width) in [("sequential", 1), ("\(concurrency) at a time", concurrency)] {
            var aerieRun = Run(invitee: "Aerie", mode: mode)
            var acapyRun = Run(invitee: "ACA-Py 1.2.7", mode: mode)
            for (round, share) in Self.shares(of: count, in: rounds).enumerated() {
                for aerieTurn in round.isMultiple(of: 2) ? [true, false] : [false, true] {
                    if aerieTurn {
                        try await measure(share, width: width, pid: aerie.pid, aerie: aerie, into: &aerieRun, aerieConnection)
                    } else {
                        try await measure(share, width: width, pid: invitee.processIdentifier, into: &acapyRun, acapyConnection)
                    }
                }
            }
            runs += [aerieRun, acapyRun]
        }
        for client in tenantClients { await client.close() }
        return runs
    }

    private func report(_ runs: [Run]) -> String {
        var lines = ["connections: \(count) connections per run accepted from one ACA-Py 1.2.7 inviter (RFC 0160)"]
        lines.append(
            TestPostgres.usesServerDefaults
                ? "  Aerie's PostgreSQL: aerie-server's embedded settings (fsync, synchronous_commit, full_page_writes on)"
                : "  Aerie's PostgreSQL: throwaway test settings (fsync, synchronous_commit, full_page_writes off; --durable for the server's own)")
        lines.append(
            "  the two invitees took turns: \(rounds) turns each per mode, who goes first alternating"
                + (tenants > 1 ? "; Aerie's connections went to \(tenants) tenants in turn" : "")
                + (backendTenants ? "; Aerie's tenants are a backend's (their events logged)" : "")
                + (returnRoute ? "; Aerie's accepts ask for the Response on the return route" : ""))
        lines.append(
            acapyWalletFile
                ? "  ACA-Py's invitee keeps its wallet in a sqlite file (its deployed form; --acapy-wallet-file)"
                : "  ACA-Py's invitee keeps its wallet in memory (--wallet-test: the anchor issue 16's figures were taken with)")
        lines.append("  invitee        mode           wall s   conn/s   CPU s   CPU ms/conn   (+ PostgreSQL CPU s)   DB round trips/conn")
        for run in runs {
            lines.append(
                "  " + run.invitee.padding(toLength: 14, withPad: " ", startingAt: 0) + " "
                    + run.mode.padding(toLength: 14, withPad: " ", startingAt: 0)
                    + String(format: " %6.2f  %7.1f  %6.2f  %11.1f", run.wall, Double(count) / run.wall, run.cpu, run.cpu * 1000 / Double(count))
                    + (run.databaseCPU.map { String(format: "   (+ %.2f)", $0) } ?? "")
                    + (run.roundTrips.map { String(format: "              %.1f", $0 / Double(count)) } ?? ""))
        }
        for mode in Set(runs.map(\.mode)).sorted() {
            guard let a = runs.first(where: { $0.invitee == "Aerie" && $0.mode == mode }),
                let b = runs.first(where: { $0.invitee != "Aerie" && $0.mode == mode })
            else { continue }
            lines.append(
                String(
                    format: "  %@: Aerie CPU/conn = %.3f of ACA-Py's (%.3f with its PostgreSQL); wall %.2fx faster (target CPU <= 0.100); %.1f database round trips per connection (target <= 8)",
                    mode, a.cpu / b.cpu, (a.cpu + (a.databaseCPU ?? 0)) / b.cpu, b.wall / a.wall, (a.roundTrips ?? .nan) / Double(count)))
        }
        return lines.joined(separator: "\n")
    }

    /// One turn: `count` connections, `width` at a time, by the invitee whose process is `pid`
    /// (with its database's processes and round trips for Aerie's server), added to `run`.
    private func measure(
        _ count: Int, width: Int, pid: Int32, aerie: AerieProcess? = nil, into run: inout Run,
        _ one: @escaping @Sendable () async throws -> Void
    ) async throws {
        let roundTripsBefore = try await aerie?.roundTrips()
        let postmaster = aerie?.postmaster
        let cpuBefore = ProcessCPU.seconds(pid: pid)
        let databaseBefore = aerie != nil ? ProcessCPU.postgresSeconds(postmaster: postmaster) : 0
        let started = ContinuousClock.now
        try await Self.launch(count, width: width, one)
        let elapsed = ContinuousClock.now - started
        try await Task.sleep(for: Self.settle)
        run.cpu += ProcessCPU.seconds(pid: pid) - cpuBefore
        run.wall += Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
        guard let aerie, let roundTripsBefore else { return }
        run.databaseCPU = (run.databaseCPU ?? 0) + ProcessCPU.postgresSeconds(postmaster: postmaster) - databaseBefore
        // Read after the CPU figures (a scrape costs CPU too); the settle let the trust pings
        // still being sent in.
        run.roundTrips = (run.roundTrips ?? 0) + (try await aerie.roundTrips()) - roundTripsBefore
    }
}

extension ConnectionsBench {
    /// `count` split into `rounds` shares as even as they go (the first ones larger by one).
    static func shares(of count: Int, in rounds: Int) -> [Int] {
        let rounds = max(1, min(rounds, count))
        return (0..<rounds).map { count / rounds + ($0 < count % rounds ? 1 : 0) }
    }

    /// `count` calls of `one`, at most `width` at a time.
    static func launch(_ count: Int, width: Int, _ one: @escaping @Sendable () async throws -> Void) async throws {
        try await withThrowingTaskGroup(of: Void.self) { group in
            var launched = 0
            while launched < min(width, count) {
                group.addTask { try await one() }
                launched += 1
            }
            while try await group.next() != nil {
                if launched < count {
                    group.addTask { try await one() }
                    launched += 1
                }
            }
        }
    }
}

struct BenchFailure: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

/// CPU time from /proc (user + system), in seconds.
enum ProcessCPU {
    static let ticks = Double(sysconf(Int32(_SC_CLK_TCK)))

    static func seconds(pid: Int32) -> Double {
        guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
            let close = stat.lastIndex(of: ")")
        else { return 0 }
        // Fields after the command name: state is field 3; utime and stime are fields 14 and 15.
        let fields = stat[stat.index(after: close)...].split(separator: " ")
        guard fields.count > 12, let user = Double(fields[11]), let system = Double(fields[12]) else { return 0 }
        return (user + system) / ticks
    }

    /// The benchmark cluster's processes: its postmaster and every process it started (backends,
    /// checkpointer, WAL writer...), so other clusters on a shared machine do not count; with no
    /// postmaster known, every process named `postgres`. (A backend that exits during the run
    /// takes its CPU with it; the server's pooled connections stay.)
    static func postgresSeconds(postmaster: Int32?) -> Double {
        guard let entries = try? FileManager.default.contentsOfDirectory(atPath: "/proc") else { return 0 }
        var total = 0.0
        for entry in entries {
            guard let pid = Int32(entry),
                let comm = try? String(contentsOfFile: "/proc/\(pid)/comm", encoding: .utf8),
                comm.hasPrefix("postgres")
            else { continue }
            if let postmaster, pid != postmaster, parent(of: pid) != postmaster { continue }
            total += seconds(pid: pid)
        }
        return total
    }

    /// Field 4 of /proc/PID/stat.
    static func parent(of pid: Int32) -> Int32? {
        guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
            let close = stat.lastIndex(of: ")")
        else { return nil }
        let fields = stat[stat.index(after: close)...].split(separator: " ")
        return fields.count > 1 ? Int32(fields[1]) : nil
    }
}

/// `aerie-server` (release build, next to this binary) as its own process on a fresh database.
final class AerieProcess: @unchecked Sendable {
    let process: Process
    let port: Int
    /// Its operator endpoint (`/metrics`: the round-trip counter).
    let metricsPort: Int
    let home: URL
    let database: TestDatabase
    /// The postmaster of the database's cluster (its CPU and its children's is the database's).
    private(set) var postmaster: Int32?
    var pid: Int32 { process.processIdentifier }

    private init(process: Process, port: Int, metricsPort: Int, home: URL, database: TestDatabase) {
        self.process = process
        self.port = port
        self.metricsPort = metricsPort
        self.home = home
        self.database = database
    }

    static func start() async throws -> AerieProcess {
        let database = try await TestPostgres.shared.freshDatabase()
        let home = FileManager.default.temporaryDirectory.appendingPathComponent("aerie-bench-\(UUID().uuidString)")
        let rpcPort = try ACAPyAgent.freePort()
        let didcommPort = try ACAPyAgent.freePort()
        let metricsPort = try ACAPyAgent.freePort()
        let process = Process()
        process.executableURL = try BuiltProducts.executable("aerie-server")
        var environment = ProcessInfo.processInfo.environment
        environment["AERIE_HOME"] = home.path
        environment["AERIE_DATABASE_URL"] = database.runtimeConninfo
        environment["AERIE_OWNER_DATABASE_URL"] = database.ownerConninfo
        environment["AERIE_RPC_LISTEN"] = "127.0.0.1:\(rpcPort)"
        environment["AERIE_DIDCOMM_LISTEN"] = "127.0.0.1:\(didcommPort)"
        environment["AERIE_METRICS_LISTEN"] = "127.0.0.1:\(metricsPort)"
        environment["AERIE_ALLOW_PRIVATE_URLS"] = "1"
        environment["AERIE_LOG_LEVEL"] = "warning"
        process.environment = environment
        process.standardInput = FileHandle.nullDevice
        try process.run()
        let server = AerieProcess(process: process, port: rpcPort, metricsPort: metricsPort, home: home, database: database)
        server.postmaster = try? await Self.postmaster(of: database)
        let deadline = ContinuousClock.now + .seconds(30)
        while ContinuousClock.now < deadline {
            if let client = try? await AerieClient.connect(host: "127.0.0.1", port: rpcPort),
                (try? await client.call("system.ping")) == "pong"
            {
                await client.close()
                return server
            }
            try await Task.sleep(for: .milliseconds(200))
        }
        await server.stop()
        throw BenchFailure("aerie-server did not start within 30 s")
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
        try await Self.asSuperuser(of: database) { session in _ = try session.execute("ANALYZE", []) }
    }

    /// SIGTERM (graceful), waited for off the concurrency pool.
    func stop() async {
        let process = self.process
        await offPool {
            if process.isRunning { kill(process.processIdentifier, SIGTERM) }
            process.waitUntilExit()
        }
        try? FileManager.default.removeItem(at: home)
        try? await database.drop()
    }
}
