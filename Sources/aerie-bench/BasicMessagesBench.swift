import AerieClient
import AerieCore
import AerieTesting
import Foundation
import Synchronization

/// `aerie-bench basic-messages`: basic messages (RFC 0095) between one ACA-Py 1.2.7 peer and, in
/// the same run, an Aerie tenant (`aerie-server` in its own process) and an ACA-Py 1.2.7 agent
/// (the anchor), each over `concurrency` connections with the peer.
/// - inbound: the peer sends (`/connections/{id}/send-message`); done when the message is stored:
///   Aerie's `messages.received` push on a subscribed session, the anchor's `basicmessages`
///   webhook.
/// - outbound: Aerie's `messages.sendText`, the anchor's `send-message`; done when the peer has
///   it (its `basicmessages` webhook).
/// One at a time (each message done before the next) and `concurrency` at a time over the
/// connections. CPU is the whole system's: Aerie's server and its PostgreSQL, the anchor's one
/// process (its wallet is in it); the peer's is not counted. The two take turns as `connections`
/// does (`Turns`), so both are measured over the same minutes.
struct BasicMessagesBench {
    var count: Int
    var concurrency: Int
    var rounds: Int
    /// Messages each side exchanges, `concurrency` at a time, before anything is measured.
    var warmup: Int
    /// The anchor keeps its wallet in a sqlite file (its deployed form) instead of in memory.
    var acapyWalletFile = false

    /// After each turn, before its CPU is read: the delivery marks and webhooks still on their
    /// way belong to the turn.
    static let settle: Duration = .milliseconds(300)
    static let content = "Hello from the benchmark: a basic message of about the size people type."

    struct Run {
        var side: String
        var mode: String
        var wall: Double = 0
        var cpu: Double = 0
        var databaseCPU: Double?
        var roundTrips: Double?
        var commits: Double?
    }

    /// One side's ends of the connections with the peer.
    struct Side: Sendable {
        /// The side's connection ids, and the peer's ids of the same connections.
        var mine: [String]
        var peers: [String]
    }

    func run() async throws -> String {
        let peerHooks = try await ACAPyWebhooks()
        let anchorHooks = try await ACAPyWebhooks()
        defer { Task { await peerHooks.stop(); await anchorHooks.stop() } }
        let runs = try await Turns.stopping(
            try await ACAPyAgent.start(label: "Bench Peer", extraArguments: ["--webhook-url", peerHooks.url]), stop: { await $0.stop() }
        ) { peer in
            try await Turns.stopping(
                try await ACAPyAgent.start(
                    label: "Bench Anchor", extraArguments: ["--auto-accept-invites", "--webhook-url", anchorHooks.url],
                    wallet: acapyWalletFile ? .file : .versionDefault),
                stop: { await $0.stop() }
            ) { anchor in
                try await Turns.stopping(try await AerieProcess.start(), stop: { await $0.stop() }) { aerie in
                    try await measureAll(peer: peer, peerHooks: peerHooks, anchor: anchor, anchorHooks: anchorHooks, aerie: aerie)
                }
            }
        }
        return report(runs)
    }

    private func measureAll(
        peer: ACAPyAgent, peerHooks: ACAPyWebhooks, anchor: ACAPyAgent, anchorHooks: ACAPyWebhooks, aerie: AerieProcess
    ) async throws -> [Run] {
        let width = max(1, concurrency)
        let (client, _) = try await aerie.tenantClient()
        defer { Task { await client.close() } }
        let aerieSide = try await Self.connectAerie(client, to: peer, count: width)
        let anchorSide = try await Self.connectAnchor(anchor, to: peer, count: width)
        // Aerie's stored messages, counted from its pushes.
        let stored = Counter()
        _ = try await client.call("messages.subscribe", params: ["types": "basicMessage"])
        let pushes = Task {
            for await notification in client.notifications where notification.method == "messages.received" { stored.add() }
        }
        defer { pushes.cancel() }
        let sent = Counter()

        let aerieInbound = Self.sending(count: { stored.value }) { index in
            _ = try await peer.admin(
                "POST", "/connections/\(aerieSide.peers[index % width])/send-message", body: ["content": .string(Self.content)])
        }
        let anchorInbound = Self.sending(count: { anchorHooks.count("basicmessages") }) { index in
            _ = try await peer.admin(
                "POST", "/connections/\(anchorSide.peers[index % width])/send-message", body: ["content": .string(Self.content)])
        }
        let aerieOutbound = Self.sending(count: { peerHooks.count("basicmessages") }) { index in
            _ = try await client.call(
                "messages.sendText", params: ["connectionId": .string(aerieSide.mine[index % width]), "content": .string(Self.content)])
        }
        let anchorOutbound = Self.sending(count: { peerHooks.count("basicmessages") }) { index in
            _ = try await anchor.admin(
                "POST", "/connections/\(anchorSide.mine[index % width])/send-message", body: ["content": .string(Self.content)])
        }
        if warmup > 0 {
            for send in [aerieInbound, anchorInbound, aerieOutbound, anchorOutbound] {
                try await send(warmup, width, sent)
            }
        }
        var runs: [Run] = []
        for (direction, aerieSend, anchorSend) in [("inbound", aerieInbound, anchorInbound), ("outbound", aerieOutbound, anchorOutbound)] {
            for (mode, turnWidth) in [("one at a time", 1), ("\(width) at a time", width)] {
                var aerieRun = Run(side: "Aerie", mode: "\(direction), \(mode)")
                var anchorRun = Run(side: "ACA-Py 1.2.7", mode: "\(direction), \(mode)")
                for (round, share) in Turns.shares(of: count, in: rounds).enumerated() {
                    for aerieTurn in round.isMultiple(of: 2) ? [true, false] : [false, true] {
                        if aerieTurn {
                            try await Self.measure(pid: aerie.pid, aerie: aerie, into: &aerieRun) { try await aerieSend(share, turnWidth, sent) }
                        } else {
                            try await Self.measure(pid: anchor.processIdentifier, into: &anchorRun) {
                                try await anchorSend(share, turnWidth, sent)
                            }
                        }
                    }
                }
                runs += [aerieRun, anchorRun]
            }
        }
        return runs
    }

    /// A turn of `count` messages, `width` at a time: `send(index)` sends one, and each is done
    /// once `received()` has grown by as many as were sent up to it since the turn began; the
    /// turn ends when all of them are.
    static func sending(
        count received: @escaping @Sendable () -> Int, _ send: @escaping @Sendable (Int) async throws -> Void
    ) -> @Sendable (Int, Int, Counter) async throws -> Void {
        { count, width, sent in
            let base = received()
            let started = Counter()
            try await Turns.launch(count, width: width) {
                let index = started.add()
                try await send(sent.add())
                try await waitUntil { received() - base >= index }
            }
            try await waitUntil { received() - base >= count }
        }
    }

    private static func waitUntil(timeout: Duration = .seconds(60), _ done: @Sendable () -> Bool) async throws {
        let deadline = ContinuousClock.now + timeout
        while !done() {
            guard ContinuousClock.now < deadline else { throw BenchFailure("a message was not done within \(timeout)") }
            try await Task.sleep(for: .milliseconds(1))
        }
    }

    /// One turn by the side whose process is `pid` (with its database's processes, round trips
    /// and commits for Aerie's server), added to `run`.
    static func measure(pid: Int32, aerie: AerieProcess? = nil, into run: inout Run, _ turn: () async throws -> Void) async throws {
        let roundTripsBefore = try await aerie?.roundTrips()
        let transactionBefore = try await aerie?.nextTransactionID()
        let postmaster = aerie?.postmaster
        let cpuBefore = ProcessCPU.seconds(pid: pid)
        let databaseBefore = aerie != nil ? ProcessCPU.postgresSeconds(postmaster: postmaster) : 0
        let started = ContinuousClock.now
        try await turn()
        let elapsed = ContinuousClock.now - started
        try await Task.sleep(for: Self.settle)
        run.cpu += ProcessCPU.seconds(pid: pid) - cpuBefore
        run.wall += Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
        guard let aerie, let roundTripsBefore, let transactionBefore else { return }
        run.databaseCPU = (run.databaseCPU ?? 0) + ProcessCPU.postgresSeconds(postmaster: postmaster) - databaseBefore
        // Read after the CPU figures (they cost CPU too).
        run.roundTrips = (run.roundTrips ?? 0) + (try await aerie.roundTrips()) - roundTripsBefore
        run.commits = (run.commits ?? 0) + Double(try await aerie.nextTransactionID() - transactionBefore)
    }

    private func report(_ runs: [Run]) -> String {
        var lines = [
            "basic-messages: \(count) basic messages per run between one ACA-Py 1.2.7 peer and Aerie / an ACA-Py 1.2.7 anchor, "
                + "over \(max(1, concurrency)) connections each",
            TestPostgres.usesServerDefaults
                ? "  Aerie's PostgreSQL: aerie-server's embedded settings (fsync, synchronous_commit, full_page_writes on)"
                : "  Aerie's PostgreSQL: throwaway test settings (durability off; --durable for the server's own)",
            "  inbound: done when stored (Aerie: messages.received pushed; ACA-Py: its basicmessages webhook); outbound: done when "
                + "the peer has it (its webhook); \(rounds) turns each per mode, who goes first alternating",
            acapyWalletFile
                ? "  the anchor keeps its wallet in a sqlite file (its deployed form; --acapy-wallet-file)"
                : "  the anchor keeps its wallet in memory (--acapy-wallet-file: in a sqlite file, its deployed form)",
            "  side          mode                       wall s   msg/s   CPU ms/msg   (of it PostgreSQL)   msg per CPU s   round trips/msg   commits/msg",
        ]
        for run in runs {
            let total = run.cpu + (run.databaseCPU ?? 0)
            lines.append(
                "  " + run.side.padding(toLength: 13, withPad: " ", startingAt: 0) + " "
                    + run.mode.padding(toLength: 25, withPad: " ", startingAt: 0)
                    + String(format: " %7.2f  %6.1f  %11.2f", run.wall, Double(count) / run.wall, total * 1000 / Double(count))
                    + (run.databaseCPU.map { String(format: "   (%.2f)            ", $0 * 1000 / Double(count)) } ?? String(repeating: " ", count: 22))
                    + String(format: " %10.0f", Double(count) / total)
                    + (run.roundTrips.map { String(format: "   %12.1f", $0 / Double(count)) } ?? "")
                    + (run.commits.map { String(format: "   %11.2f", $0 / Double(count)) } ?? ""))
        }
        for (index, mode) in runs.map(\.mode).enumerated() where runs.firstIndex(where: { $0.mode == mode }) == index {
            guard let a = runs.first(where: { $0.side == "Aerie" && $0.mode == mode }),
                let b = runs.first(where: { $0.side != "Aerie" && $0.mode == mode })
            else { continue }
            lines.append(
                String(
                    format: "  %@: Aerie CPU/msg (with its PostgreSQL) = %.3f of ACA-Py's (target <= 0.100); messages per CPU second %.1fx ACA-Py's",
                    mode, (a.cpu + (a.databaseCPU ?? 0)) / b.cpu, b.cpu / (a.cpu + (a.databaseCPU ?? 0))))
        }
        return lines.joined(separator: "\n")
    }

    /// `count` connections accepted by an Aerie tenant from the peer's invitations, both ends
    /// established.
    static func connectAerie(_ client: AerieClient, to peer: ACAPyAgent, count: Int) async throws -> Side {
        var side = Side(mine: [], peers: [])
        for _ in 0..<count {
            let invitation = try await peer.admin("POST", "/connections/create-invitation", body: [:])
            guard let peerId = invitation["connection_id"]?.stringValue else { throw BenchFailure("no connection_id") }
            let accepted = try await client.call("connections.accept", params: ["url": invitation["invitation_url"] ?? .null, "wait": true])
            guard accepted["state"]?.intValue == 4, let id = accepted["connectionId"]?.stringValue else {
                throw BenchFailure("Aerie ended in \(accepted.jsonString)")
            }
            _ = try await peer.waitForConnection(peerId, states: ["active", "completed"])
            side.mine.append(id)
            side.peers.append(peerId)
        }
        return side
    }

    /// `count` connections the anchor accepts from the peer's invitations, both ends established.
    static func connectAnchor(_ anchor: ACAPyAgent, to peer: ACAPyAgent, count: Int) async throws -> Side {
        var side = Side(mine: [], peers: [])
        for _ in 0..<count {
            let invitation = try await peer.admin("POST", "/connections/create-invitation", body: [:])
            guard let peerId = invitation["connection_id"]?.stringValue else { throw BenchFailure("no connection_id") }
            let received = try await anchor.admin(
                "POST", "/connections/receive-invitation?auto_accept=true", body: invitation["invitation"] ?? .null)
            guard let id = received["connection_id"]?.stringValue else { throw BenchFailure("no connection_id") }
            _ = try await anchor.waitForConnection(id, states: ["active", "completed"])
            _ = try await peer.waitForConnection(peerId, states: ["active", "completed"])
            side.mine.append(id)
            side.peers.append(peerId)
        }
        return side
    }
}

/// A count shared by a benchmark's tasks.
final class Counter: Sendable {
    private let atomic = Atomic<Int>(0)

    /// Adds one; answers the count after it.
    @discardableResult
    func add() -> Int { atomic.add(1, ordering: .relaxed).newValue }

    var value: Int { atomic.load(ordering: .relaxed) }
}
