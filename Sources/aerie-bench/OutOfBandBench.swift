import AerieClient
import AerieCore
import AerieCrypto
import AerieTesting
import Foundation

/// `aerie-bench oob`: `outOfBand.accept` closed loop over `sessions` sessions (one tenant each),
/// for three rows of the table that need no peer: row 4 (attachment only: a new pairwise key, the
/// connection, the mailbox entry and the record in one transaction), the same invitation scanned
/// again (answered from the stored record), and row 7 (a new attachment from an inviter already
/// connected: match, mailbox entry, record). Then with a real peer (ACA-Py 1.2.7): row 3 over
/// connections/1.0 and `reuses` sequential row-6 reuses, each from the call to `reused`.
struct OutOfBandBench {
    var sessions: Int
    var seconds: Double
    var reuses: Int

    func run() async throws -> String {
        let server = try await LiveServer.start(server: { $0.delivery.enabled = false })
        var report: String
        do {
            report = try await measure(server)
            try await server.stop()
        } catch {
            try? await server.stop()
            throw error
        }
        let agent = try await ACAPyAgent.start(label: "Bench Inviter")
        do {
            let live = try await LiveServer.start(server: { $0.outbound.allowPrivateURLs = true })
            do {
                report += "\n" + (try await measureWithPeer(live, agent))
                try await live.stop()
            } catch {
                try? await live.stop()
                throw error
            }
        } catch {
            await agent.stop()
            throw error
        }
        await agent.stop()
        return report
    }

    /// Row 3 once, then `reuses` invitations from the same did:peer:2, each answered by reuse.
    private func measureWithPeer(_ server: LiveServer, _ agent: ACAPyAgent) async throws -> String {
        let (client, _) = try await server.tenantClient(label: "oob-bench-peer")
        defer { Task { await client.close() } }
        let body: JSONValue = ["handshake_protocols": ["https://didcomm.org/connections/1.0"], "use_did_method": "did:peer:2"]
        let first = try await agent.admin("POST", "/out-of-band/create-invitation", body: body)
        let t0 = ContinuousClock.now
        _ = try Self.check(
            try await client.call("outOfBand.accept", params: ["invitation": first["invitation"] ?? .null, "timeoutSeconds": 30]),
            row: 3)
        let handshake = MessagesBench.seconds(ContinuousClock.now - t0) * 1e3
        var latencies: [Double] = []
        for _ in 0..<reuses {
            let invitation = try await agent.admin("POST", "/out-of-band/create-invitation", body: body)
            let start = ContinuousClock.now
            let answer = try Self.check(
                try await client.call("outOfBand.accept", params: ["invitation": invitation["invitation"] ?? .null]), row: 6)
            guard answer["state"] == "reused" else { throw BenchError("reuse not accepted: \(answer.jsonString.prefix(300))") }
            latencies.append(MessagesBench.seconds(ContinuousClock.now - start) * 1e3)
        }
        return String(
            format: "  with ACA-Py 1.2.7: row 3 (connections/1.0, until state 4) %.0f ms; row 6 reuse until reused, %d sequential: p50 %.0f ms, p99 %.0f ms",
            handshake, reuses, MessagesBench.percentile(latencies, 0.5), MessagesBench.percentile(latencies, 0.99))
    }

    /// One session's tenant and its inviter (a key whose invitations it accepts).
    private struct Session: Sendable {
        let client: AerieClient
        let inviter: String
    }

    private func measure(_ server: LiveServer) async throws -> String {
        var runs: [Session] = []
        for index in 0..<sessions {
            let (client, _) = try await server.tenantClient(label: "oob-bench-\(index)")
            runs.append(Session(client: client, inviter: try Ed25519KeyPair(seed: Random.bytes(32)).verkeyBase58))
        }
        defer { for run in runs { Task { await run.client.close() } } }
        var lines = ["oob: outOfBand.accept, \(sessions) sessions (one tenant each), \(Int(seconds)) s per row, delivery off"]

        let row4 = try await load(runs) { run, _ in
            let key = try Ed25519KeyPair(seed: Random.bytes(32)).verkeyBase58
            return try Self.check(try await run.client.call("outOfBand.accept", params: ["invitation": Self.invitation(key: key)]), row: 4)
        }
        lines.append(row4.line("row 4, attachment only (new key + connection + mailbox + record)"))

        // One invitation per session, accepted once, then scanned again and again.
        var stored: [JSONValue] = []
        for run in runs {
            let invitation = Self.invitation(key: run.inviter)
            _ = try Self.check(try await run.client.call("outOfBand.accept", params: ["invitation": invitation]), row: 4)
            stored.append(invitation)
        }
        let invitations = stored
        let same = try await load(runs) { run, index in
            let answer = try await run.client.call("outOfBand.accept", params: ["invitation": invitations[index]])
            guard answer["sameInvitation"] == true else { throw BenchError("expected sameInvitation: \(answer.jsonString)") }
            return answer
        }
        lines.append(same.line("same invitation again (answered from the record)"))

        let row7 = try await load(runs) { run, _ in
            try Self.check(try await run.client.call("outOfBand.accept", params: ["invitation": Self.invitation(key: run.inviter)]), row: 7)
        }
        lines.append(row7.line("row 7, attachment over the existing connection"))
        return lines.joined(separator: "\n")
    }

    static func invitation(key: String) -> JSONValue {
        [
            "@type": "https://didcomm.org/out-of-band/1.1/invitation", "@id": .string(UUID().uuidString), "label": "Bench",
            "services": [
                [
                    "id": "#inline", "type": "did-communication", "recipientKeys": .array([.string(key)]),
                    "serviceEndpoint": "http://127.0.0.1:9/",
                ]
            ],
            "requests~attach": [
                [
                    "@id": "request-0", "mime-type": "application/json",
                    "data": [
                        "json": [
                            "@type": "https://didcomm.org/questionanswer/1.0/question", "@id": .string(UUID().uuidString),
                            "question_text": "Ready?",
                        ]
                    ],
                ]
            ],
        ]
    }

    static func check(_ answer: JSONValue, row: Int64) throws -> JSONValue {
        guard answer["row"]?.intValue == row else { throw BenchError("expected row \(row): \(answer.jsonString.prefix(300))") }
        return answer
    }

    private struct Load {
        var rate: Double
        var p50: Double
        var p99: Double
        func line(_ what: String) -> String {
            String(format: "  %@: %.0f accepts/s, p50 %.0f µs, p99 %.0f µs", what, rate, p50, p99)
        }
    }

    private func load(_ runs: [Session], _ call: @escaping @Sendable (Session, Int) async throws -> JSONValue) async throws -> Load {
        let deadline = ContinuousClock.now + .milliseconds(Int(seconds * 1000))
        let start = ContinuousClock.now
        let latencies = try await withThrowingTaskGroup(of: [Double].self) { group in
            for (index, run) in runs.enumerated() {
                group.addTask {
                    var own: [Double] = []
                    while ContinuousClock.now < deadline {
                        let t0 = ContinuousClock.now
                        _ = try await call(run, index)
                        own.append(MessagesBench.seconds(ContinuousClock.now - t0) * 1e6)
                    }
                    return own
                }
            }
            return try await group.reduce(into: [Double]()) { $0 += $1 }
        }
        let elapsed = MessagesBench.seconds(ContinuousClock.now - start)
        return Load(
            rate: Double(latencies.count) / elapsed, p50: MessagesBench.percentile(latencies, 0.5),
            p99: MessagesBench.percentile(latencies, 0.99))
    }
}
