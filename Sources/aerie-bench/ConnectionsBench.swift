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
        let runs = try await Turns.stopping(
            try await ACAPyAgent.start(label: "Bench Inviter", extraArguments: ["--auto-respond-messages"]), stop: { await $0.stop() }
        ) { inviter in
            try await Turns.stopping(
                try await ACAPyAgent.start(
                    label: "Bench Invitee", extraArguments: ["--auto-accept-invites"], wallet: acapyWalletFile ? .file : .versionDefault),
                stop: { await $0.stop() }
            ) { invitee in
                try await Turns.stopping(try await AerieProcess.start(), stop: { await $0.stop() }) { aerie in
                    try await measureAll(inviter: inviter, invitee: invitee, aerie: aerie)
                }
            }
        }
        return report(runs)
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
            try await Turns.launch(warmup, width: concurrency, aerieConnection)
            try await Turns.launch(warmup, width: concurrency, acapyConnection)
        }
        if analyze { try await aerie.analyze() }
        for (mode, width) in [("sequential", 1), ("\(concurrency) at a time", concurrency)] {
            var aerieRun = Run(invitee: "Aerie", mode: mode)
            var acapyRun = Run(invitee: "ACA-Py 1.2.7", mode: mode)
            for (round, share) in Turns.shares(of: count, in: rounds).enumerated() {
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
        try await Turns.launch(count, width: width, one)
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
