import AerieClient
import AerieCore
import AerieCrypto
import AerieServer
import AerieTesting
import Foundation
import NIOCore

/// `aerie-bench scale-writes` (issue 41 goal 3): one tenant's writes in a database holding only
/// it ("one tenant") and in one seeded by SQL up to `tenants` tenants and `connections`
/// connections ("at scale"), each database with a server of its own:
/// - inbound: POSTs of basic messages to the DIDComm endpoint, packed before the timing by the
///   peers of the tenant's connections (one connection per poster);
/// - send: `messages.sendText` on the tenant's connections, delivered to a loopback endpoint
///   that takes every POST;
/// - accept: `connections.accept` of out-of-band invitations made beforehand (each its own
///   inviter key; the Requests go to the same loopback endpoint).
/// Closed loop over `sessions` sessions each. The two databases take turns in every round (who
/// goes first alternating, as `connections` does), so both are measured over the same minutes;
/// the goal's figures are the medians of the rounds' ratios (throughput at scale / at one
/// tenant >= 0.9, p99 <= 1.2x).
struct ScaleWritesBench {
    var tenants: Int
    var connections: Int
    var sessions: Int
    var seconds: Double
    var rounds: Int

    static let warmup = 1.0
    static let throughputTarget = 0.9
    static let p99Target = 1.2
    /// Envelopes packed and invitations made per session and second of a turn: above what a
    /// session of this machine answers, so the runs do not use them up (the report says if they did).
    static let inboundPerSecond = 600
    static let acceptsPerSecond = 300

    enum Target: String, CaseIterable {
        case inbound = "inbound POST (stored)"
        case send = "messages.sendText"
        case accept = "connections.accept"
    }

    /// One database with its server, the bench tenant and what its runs use.
    private final class Side: @unchecked Sendable {
        let name: String
        let server: LiveServer
        let token: String
        let peers: [HandMadePeer]
        /// Packed inbound messages, used once each (`nextEnvelope`).
        let envelopes: [[UInt8]]
        let nextEnvelope = Counter()
        /// `connections.accept` lines per session, each sent once.
        let invitations: [[String]]
        var acceptsSent: [Int]
        var runs: [Target: [RPCBench.Outcome]] = [:]

        init(name: String, server: LiveServer, token: String, peers: [HandMadePeer], envelopes: [[UInt8]], invitations: [[String]]) {
            self.name = name
            self.server = server
            self.token = token
            self.peers = peers
            self.envelopes = envelopes
            self.invitations = invitations
            acceptsSent = Array(repeating: 0, count: invitations.count)
        }
    }

    func run() async throws -> String {
        let inbox = try await CountingInbox()
        defer { Task { await inbox.stop() } }
        return try await Turns.stopping(try await LiveServer.start(rpc: { $0.authTimeoutSeconds = 3600 }, server: Self.server), stop: { try? await $0.stop() }) {
            one in
            try await Turns.stopping(try await LiveServer.start(rpc: { $0.authTimeoutSeconds = 3600 }, server: Self.server), stop: { try? await $0.stop() }) {
                many in
                try await measureAll(one: one, many: many, inbox: inbox)
            }
        }
    }

    private static func server(_ configuration: inout AerieConfiguration) {
        configuration.database.poolSize = AerieConfiguration().database.poolSize
        // The seeded rows are in the clear form under placeholder keys: the background sealing
        // would try (and fail) to seal every seeded tenant during the runs.
        configuration.secrets.sealingSweepInterval = nil
    }

    private func measureAll(one oneServer: LiveServer, many manyServer: LiveServer, inbox: CountingInbox) async throws -> String {
        let perTenant = max(1, connections / max(1, tenants))
        var lines = [
            "scale-writes: one tenant's writes, \(sessions) sessions closed loop, \(rounds) rounds of \(Int(seconds)) s per target "
                + "(after \(Int(Self.warmup)) s warm-up) on each database, taking turns; a database of that one tenant vs one "
                + "of \(tenants) tenants with \(perTenant) connections each",
        ]
        let one = try await side("one tenant", oneServer, inbox: inbox)
        let many = try await side("at scale", manyServer, inbox: inbox)
        // Seeded after the bench tenant, whose master-key fingerprint the seeded tenants carry.
        let seedOne = try await ScaleSeed.seed(0, perTenant: perTenant, oneServer)
        let seedMany = try await ScaleSeed.seed(max(0, tenants - 1), perTenant: perTenant, manyServer)
        let counts = try await ScaleSeed.counts(manyServer)
        let (size, settings) = try await ScaleSeed.withSuperuser(manyServer) { superuser in
            try await superuser.withSession { session in
                (
                    try session.query("SELECT pg_size_pretty(pg_database_size(current_database()))").string(0, 0) ?? "?",
                    try session.query(
                        """
                        SELECT string_agg(name || '=' || current_setting(name), ', ' ORDER BY name) FROM pg_settings
                        WHERE name IN ('fsync', 'synchronous_commit', 'full_page_writes', 'shared_buffers', 'max_wal_size')
                        """
                    ).string(0, 0) ?? "?"
                )
            }
        }
        lines.append("  PostgreSQL: \(settings)")
        lines.append(
            String(
                format: "  seeded by SQL, vacuumed, analyzed and checkpointed in %.1f s and %.1f s: %d tenants, %d connections, %@",
                seedOne, seedMany, counts.tenants, counts.connections, size))
        for round in 0..<rounds {
            for target in Target.allCases {
                for side in round.isMultiple(of: 2) ? [one, many] : [many, one] {
                    side.runs[target, default: []].append(try await measure(target, side))
                }
            }
        }
        lines += report(one: one, many: many)
        return lines.joined(separator: "\n")
    }

    /// The bench tenant of `server` with a connection per session to a hand-made peer reached
    /// at `inbox`, the peers' messages packed and the invitations made.
    private func side(_ name: String, _ server: LiveServer, inbox: CountingInbox) async throws -> Side {
        let admin = try await server.adminClient()
        let created = try await admin.call("admin.tenants.create", params: ["label": "bench"])
        await admin.close()
        guard let token = created["token"]?.stringValue else { throw BenchFailure("admin.tenants.create answered \(created.jsonString)") }
        let client = try await server.client()
        try await client.authenticate(token: token)
        var peers: [HandMadePeer] = []
        for _ in 0..<sessions { peers.append(try await HandMadePeer.connect(client, endpoint: inbox.urls[0], invitationEndpoint: inbox.urls[0])) }
        await client.close()
        let turn = seconds + Self.warmup
        let envelopeCount = rounds * sessions * Int(turn * Double(Self.inboundPerSecond))
        var envelopes: [[UInt8]] = []
        envelopes.reserveCapacity(envelopeCount)
        for index in 0..<envelopeCount {
            let message: JSONValue = [
                "@type": "https://didcomm.org/basicmessage/1.0/message", "@id": .string(UUID().uuidString),
                "sent_time": "2026-01-01 00:00:00.000000Z", "content": .string(BasicMessagesBench.content),
            ]
            envelopes.append(try peers[index % peers.count].pack(message))
        }
        let perSession = rounds * Int(turn * Double(Self.acceptsPerSecond))
        let invitations = try (0..<sessions).map { _ in
            try (0..<perSession).map { _ in
                let invitation = try HandMadeHandshake.invitation(
                    inviter: .generate(), id: UUID().uuidString, endpoint: inbox.urls[0])
                let params: JSONValue = ["invitation": invitation]
                return #"{"jsonrpc":"2.0","id":1,"method":"connections.accept","params":"# + params.jsonString + "}"
            }
        }
        return Side(name: name, server: server, token: token, peers: peers, envelopes: envelopes, invitations: invitations)
    }

    private func measure(_ target: Target, _ side: Side) async throws -> RPCBench.Outcome {
        let rpc = RPCBench(sessions: sessions, seconds: seconds, warmup: Self.warmup, pacedRatePerSession: 0)
        let auth = #"{"jsonrpc":"2.0","id":0,"method":"session.authenticate","params":{"token":"\#(side.token)"}}"#
        switch target {
        case .inbound:
            return try await inbound(side)
        case .send:
            let lines = side.peers.map { peer in
                #"{"jsonrpc":"2.0","id":1,"method":"messages.sendText","params":{"connectionId":"\#(peer.connectionId)","content":"\#(BasicMessagesBench.content)"}}"#
            }
            return try await rpc.measure(name: target.rawValue, port: side.server.port, setup: auth, line: "", sessionLines: { [lines[$0]] })
        case .accept:
            // Each session goes on with its invitations where its previous turn stopped.
            let offsets = side.acceptsSent
            let outcome = try await rpc.measure(
                name: target.rawValue, port: side.server.port, setup: auth, line: "",
                sessionLines: { session in Array(side.invitations[session].dropFirst(offsets[session])) })
            for (session, sent) in outcome.sent.enumerated() { side.acceptsSent[session] += sent }
            return outcome
        }
    }

    /// `sessions` posters, each POSTing the next packed message and waiting for its answer
    /// (202: stored), for the warm-up and then `seconds` measured.
    private func inbound(_ side: Side) async throws -> RPCBench.Outcome {
        let port = side.server.didcommPort
        let phase = LoadPhase()
        let refused = Counter()
        let sessions = self.sessions
        let seconds = self.seconds
        let outcome = try await withThrowingTaskGroup(of: [UInt64].self) { group in
            for _ in 0..<sessions {
                group.addTask {
                    var own: [UInt64] = []
                    while phase.value.load(ordering: .relaxed) < 2 {
                        let index = side.nextEnvelope.add() - 1
                        guard index < side.envelopes.count else { break }
                        let started = DispatchTime.now().uptimeNanoseconds
                        let status = try await MessagesBench.post(side.envelopes[index], port: port)
                        if status != 202 { refused.add() }
                        if phase.value.load(ordering: .relaxed) == 1 { own.append(DispatchTime.now().uptimeNanoseconds - started) }
                    }
                    return own
                }
            }
            try await Task.sleep(for: .seconds(Self.warmup))
            phase.value.store(1, ordering: .relaxed)
            let started = ContinuousClock.now
            try await Task.sleep(for: .seconds(seconds))
            phase.value.store(2, ordering: .relaxed)
            let elapsed = MessagesBench.seconds(ContinuousClock.now - started)
            let latencies = try await group.reduce(into: [UInt64]()) { $0 += $1 }.sorted()
            return RPCBench.Outcome(
                name: Target.inbound.rawValue, requests: latencies.count, seconds: elapsed,
                p50: RPCBench.Outcome.percentile(0.5, of: latencies), p99: RPCBench.Outcome.percentile(0.99, of: latencies),
                latencies: latencies)
        }
        guard refused.value == 0 else { throw BenchFailure("\(side.name): \(refused.value) inbound POSTs were not answered 202") }
        return outcome
    }

    /// Per target: throughput and p99 on each side (all rounds pooled), and the medians (with
    /// min-max) of the rounds' ratios, at scale / one tenant.
    private func report(one: Side, many: Side) -> [String] {
        var lines = [
            "  target                   one tenant: req/s   p50 µs   p99 µs   at scale: req/s   p50 µs   p99 µs"
                + "   throughput ratio: median (min-max)   p99 ratio: median (min-max)"
        ]
        var met = 0
        for target in Target.allCases {
            let oneRuns = one.runs[target] ?? []
            let manyRuns = many.runs[target] ?? []
            let rate = { (runs: [RPCBench.Outcome]) in
                Double(runs.map(\.requests).reduce(0, +)) / runs.map(\.seconds).reduce(0, +)
            }
            let pooled = { (runs: [RPCBench.Outcome], p: Double) in
                RPCBench.Outcome.percentile(p, of: runs.flatMap(\.latencies).sorted())
            }
            let throughput = Turns.spread(zip(oneRuns, manyRuns).map { $1.rate / $0.rate })
            let p99 = Turns.spread(zip(oneRuns, manyRuns).map { $1.p99 / $0.p99 })
            if throughput.median >= Self.throughputTarget && p99.median <= Self.p99Target { met += 1 }
            lines.append(
                "  " + target.rawValue.padding(toLength: 24, withPad: " ", startingAt: 0)
                    + String(
                        format: " %18.0f %8.0f %8.0f %17.0f %8.0f %8.0f   %10.2f (%.2f-%.2f)            %8.2f (%.2f-%.2f)",
                        rate(oneRuns), pooled(oneRuns, 0.5), pooled(oneRuns, 0.99), rate(manyRuns), pooled(manyRuns, 0.5),
                        pooled(manyRuns, 0.99), throughput.median, throughput.min, throughput.max, p99.median, p99.min, p99.max))
        }
        for side in [one, many] {
            let invitations = side.invitations.first?.count ?? 0
            if side.acceptsSent.contains(where: { $0 > invitations }) {
                lines.append("  \(side.name): the accepts used up their \(invitations) invitations per session and accepted some again")
            }
            if side.nextEnvelope.value > side.envelopes.count {
                lines.append("  \(side.name): the posters used up the \(side.envelopes.count) packed messages before a turn ended")
            }
        }
        lines.append(
            "  goal 3 (each target's median throughput ratio >= \(Self.throughputTarget), p99 ratio <= \(Self.p99Target)): "
                + "\(met == Target.allCases.count ? "met" : "not met") (\(met) of \(Target.allCases.count))")
        return lines
    }
}
