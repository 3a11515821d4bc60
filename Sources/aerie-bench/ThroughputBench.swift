import AerieClient
import AerieCore
import AerieTesting
import Foundation

/// `aerie-bench throughput` (issue 41 goal 2): messages under load.
/// - inbound: `connections` connections, spread over `peers` ACA-Py 1.2.7 peer processes, all
///   sending at once (one message in flight per connection) to an Aerie tenant (`aerie-server`
///   in its own process) and, in the same run, to an ACA-Py 1.2.7 anchor, taking turns as
///   `basic-messages` does (`Turns`); done when stored (Aerie's `messages.received` push, the
///   anchor's `basicmessages` webhook). Messages stored per second of wall time and per CPU
///   second of the whole system: Aerie's server and its PostgreSQL, the anchor's one process.
/// - outbound: Aerie's `messages.sendText`, `connections` at a time, to one peer and spread over
///   100 peers (hand-made didexchange peers, each a `CountingInbox` endpoint on a loopback
///   address of its own), until every message has reached its endpoint: deliveries per second.
struct ThroughputBench {
    var count: Int
    var peers: Int
    var connections: Int
    var rounds: Int
    var warmup: Int

    static let manyPeers = 100

    func run() async throws -> String {
        let anchorHooks = try await ACAPyWebhooks()
        defer { Task { await anchorHooks.stop() } }
        var agents: [ACAPyAgent] = []
        do {
            for index in 0..<max(1, peers) { agents.append(try await ACAPyAgent.start(label: "Bench Peer \(index)")) }
        } catch {
            for agent in agents { await agent.stop() }
            throw error
        }
        let lines = try await Turns.stopping(agents, stop: { for agent in $0 { await agent.stop() } }) { agents in
            try await Turns.stopping(
                try await ACAPyAgent.start(
                    label: "Bench Anchor", extraArguments: ["--auto-accept-invites", "--webhook-url", anchorHooks.url]),
                stop: { await $0.stop() }
            ) { anchor in
                try await Turns.stopping(try await AerieProcess.start(), stop: { await $0.stop() }) { aerie in
                    let inbound = try await inbound(agents: agents, anchor: anchor, anchorHooks: anchorHooks, aerie: aerie)
                    return inbound + (try await outbound(aerie))
                }
            }
        }
        return lines.joined(separator: "\n")
    }

    /// Connection `n` is with peer `n % peers`.
    private func inbound(agents: [ACAPyAgent], anchor: ACAPyAgent, anchorHooks: ACAPyWebhooks, aerie: AerieProcess) async throws -> [String] {
        let width = max(1, connections)
        let (client, _) = try await aerie.tenantClient()
        defer { Task { await client.close() } }
        var aerieSide = BasicMessagesBench.Side(mine: [], peers: [])
        var anchorSide = BasicMessagesBench.Side(mine: [], peers: [])
        for index in 0..<width {
            let agent = agents[index % agents.count]
            let mine = try await BasicMessagesBench.connectAerie(client, to: agent, count: 1)
            let anchors = try await BasicMessagesBench.connectAnchor(anchor, to: agent, count: 1)
            aerieSide.mine += mine.mine
            aerieSide.peers += mine.peers
            anchorSide.mine += anchors.mine
            anchorSide.peers += anchors.peers
        }
        let stored = Counter()
        _ = try await client.call("messages.subscribe", params: ["types": "basicMessage"])
        let pushes = Task {
            for await notification in client.notifications where notification.method == "messages.received" { stored.add() }
        }
        defer { pushes.cancel() }
        let sent = Counter()
        let content = JSONValue.string(BasicMessagesBench.content)
        let (aerieSent, anchorSent) = (aerieSide, anchorSide)
        let aerieSend = BasicMessagesBench.sending(count: { stored.value }) { index in
            _ = try await agents[index % width % agents.count].admin(
                "POST", "/connections/\(aerieSent.peers[index % width])/send-message", body: ["content": content])
        }
        let anchorSend = BasicMessagesBench.sending(count: { anchorHooks.count("basicmessages") }) { index in
            _ = try await agents[index % width % agents.count].admin(
                "POST", "/connections/\(anchorSent.peers[index % width])/send-message", body: ["content": content])
        }
        if warmup > 0 {
            try await aerieSend(warmup, width, sent)
            try await anchorSend(warmup, width, sent)
        }
        var aerieRun = BasicMessagesBench.Run(side: "Aerie", mode: "inbound")
        var anchorRun = BasicMessagesBench.Run(side: "ACA-Py 1.2.7", mode: "inbound")
        for (round, share) in Turns.shares(of: count, in: rounds).enumerated() {
            for aerieTurn in round.isMultiple(of: 2) ? [true, false] : [false, true] {
                if aerieTurn {
                    try await BasicMessagesBench.measure(pid: aerie.pid, aerie: aerie, into: &aerieRun) { try await aerieSend(share, width, sent) }
                } else {
                    try await BasicMessagesBench.measure(pid: anchor.processIdentifier, into: &anchorRun) {
                        try await anchorSend(share, width, sent)
                    }
                }
            }
        }
        var lines = [
            "throughput: \(count) basic messages per side from \(width) connections at once, spread over \(agents.count) ACA-Py 1.2.7 "
                + "peer processes, to Aerie (aerie-server and its PostgreSQL) and to an ACA-Py 1.2.7 anchor; \(rounds) turns each",
            TestPostgres.usesServerDefaults
                ? "  Aerie's PostgreSQL: aerie-server's embedded settings (fsync, synchronous_commit, full_page_writes on)"
                : "  Aerie's PostgreSQL: throwaway test settings (durability off; --durable for the server's own)",
            "  side          stored/s   CPU s (of it PostgreSQL)   stored per CPU-core-second",
        ]
        for run in [aerieRun, anchorRun] {
            let cpu = run.cpu + (run.databaseCPU ?? 0)
            lines.append(
                "  " + run.side.padding(toLength: 13, withPad: " ", startingAt: 0)
                    + String(format: " %8.1f   %6.2f (%.2f)             %8.0f", Double(count) / run.wall, cpu, run.databaseCPU ?? 0, Double(count) / cpu))
        }
        let aeriePerCore = Double(count) / (aerieRun.cpu + (aerieRun.databaseCPU ?? 0))
        let anchorPerCore = Double(count) / anchorRun.cpu
        lines.append(String(format: "  stored per CPU-core-second: Aerie %.1fx ACA-Py's (target >= 5)", aeriePerCore / anchorPerCore))
        return lines
    }

    /// Deliveries per second of `count` sends, `connections` at a time, to one peer and to 100.
    private func outbound(_ aerie: AerieProcess) async throws -> [String] {
        var lines = ["  outbound: messages.sendText, \(max(1, connections)) at a time, until the peer's endpoint took each (one POST per message)"]
        for peerCount in [1, Self.manyPeers] {
            let inbox = try await CountingInbox(hosts: peerCount)
            let (client, _) = try await aerie.tenantClient()
            do {
                var connectionIds: [String] = []
                for url in inbox.urls { connectionIds.append(try await HandMadePeer.connect(client, endpoint: url, invitationEndpoint: url).connectionId) }
                // What the handshakes sent (Requests, completes) is in before anything is counted.
                try await settle(inbox)
                let ids = connectionIds
                let send = { (total: Int) in
                    let base = inbox.count
                    let next = Counter()
                    try await Turns.launch(total, width: max(1, connections)) {
                        let index = next.add()
                        _ = try await client.call(
                            "messages.sendText",
                            params: ["connectionId": .string(ids[index % ids.count]), "content": .string(BasicMessagesBench.content)])
                    }
                    try await waitUntil { inbox.count - base >= total }
                }
                if warmup > 0 { try await send(warmup) }
                var run = BasicMessagesBench.Run(side: "Aerie", mode: "outbound")
                try await BasicMessagesBench.measure(pid: aerie.pid, aerie: aerie, into: &run) { try await send(count) }
                let cpu = run.cpu + (run.databaseCPU ?? 0)
                lines.append(
                    String(
                        format: "  to %3d peer%@: %7.1f deliveries/s, %.2f CPU ms per message (of it PostgreSQL %.2f)", peerCount,
                        peerCount == 1 ? " " : "s", Double(count) / run.wall, cpu * 1000 / Double(count),
                        (run.databaseCPU ?? 0) * 1000 / Double(count)))
            } catch {
                await client.close()
                await inbox.stop()
                throw error
            }
            await client.close()
            await inbox.stop()
        }
        return lines
    }

    /// Until `inbox` has taken nothing more for half a second.
    private func settle(_ inbox: CountingInbox) async throws {
        var last = -1
        while inbox.count != last {
            last = inbox.count
            try await Task.sleep(for: .milliseconds(500))
        }
    }

    private func waitUntil(timeout: Duration = .seconds(120), _ done: @Sendable () -> Bool) async throws {
        let deadline = ContinuousClock.now + timeout
        while !done() {
            guard ContinuousClock.now < deadline else { throw BenchFailure("the deliveries were not all in within \(timeout)") }
            try await Task.sleep(for: .milliseconds(5))
        }
    }
}
