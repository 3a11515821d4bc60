import AerieCrypto
import AerieServer
import AerieTesting
import Foundation
import NIOCore
import NIOPosix

/// `aerie-bench hostile`: what unauthenticated ~1 MiB POSTs cost (issue 13 item 2).
///   - CPU per `DIDCommEnvelope(parsing:)` of each hostile body (this thread's CPU time), the
///     whole of the work done before a recipient lookup;
///   - a live server: `--posters N` curl loops POST the bodies for `--seconds S` while one
///     session sends `system.ping` every 10 ms; this process's CPU per request (the server's,
///     plus the small ping client) and ping p50/p99, against ping with no attack;
///   - the same with the same kinds of body at `InboundParsing.inlineLimit` (16 KiB), which the
///     server parses in place, on the Swift pool, rather than on its parsing thread.
struct HostileBench {
    var iterations: Int
    var posters: Int
    var seconds: Double

    func run() async throws -> String {
        var lines = ["hostile: DIDCommEnvelope(parsing:) CPU per body (\(iterations) iterations each)"]
        let small = HostileEnvelopes.bodies(size: InboundParsing.inlineLimit - 256, label: "16KiB")
        for body in HostileEnvelopes.all + small {
            var cpu = Duration.zero
            for _ in 0..<iterations {
                let before = threadCPU()
                _ = try? DIDCommEnvelope(parsing: body.bytes)
                cpu += threadCPU() - before
            }
            lines.append(
                "  " + body.name.padding(toLength: 24, withPad: " ", startingAt: 0)
                    + String(format: "%8d bytes  %8.3f ms CPU", body.bytes.count, milliseconds(cpu / iterations)))
        }

        let server = try await LiveServer.start()
        defer { Task { try? await server.stop() } }
        let idle = try await pings(port: server.port, for: 2, attack: nil)
        let before = processCPU()
        let attacked = try await pings(port: server.port, for: seconds, attack: (server.didcommPort, HostileEnvelopes.all))
        let cpu = processCPU() - before
        let beforeSmall = processCPU()
        let attackedSmall = try await pings(port: server.port, for: seconds, attack: (server.didcommPort, small))
        let cpuSmall = processCPU() - beforeSmall
        try await server.stop()
        lines.append("hostile: live server, \(posters) posters for \(Int(seconds)) s, ping every 10 ms on one session")
        lines.append("  ping idle:         " + summary(idle.latencies))
        for (name, run, cpu) in [("~1 MiB bodies", attacked, cpu), ("16 KiB bodies", attackedSmall, cpuSmall)] {
            lines.append(String(format: "  %@: requests: %d (all 4xx: %@), server process CPU per request: %.2f ms",
                name, run.requests, run.all4xx ? "yes" : "NO", milliseconds(cpu / max(1, run.requests))))
            lines.append("  ping under attack: " + summary(run.latencies))
        }
        return lines.joined(separator: "\n")
    }

    struct Run {
        var latencies: [Duration]
        var requests: Int
        var all4xx: Bool
    }

    /// Pings for `seconds`, while `attack`'s bodies are posted to its port (nil: no attack).
    private func pings(port: Int, for seconds: Double, attack: (didcommPort: Int, bodies: [HostileEnvelopes.Body])?) async throws -> Run {
        let deadline = ContinuousClock.now + .milliseconds(Int(seconds * 1000))
        let client = try await RawLineClient.connect(port: port)
        // Posters are curl processes, so this process's CPU time is the server's (and the ping
        // client's), not the HTTP client's.
        var posters: [(Process, Pipe)] = []
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("aerie-hostile-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: directory) }
        if let (didcommPort, bodies) = attack {
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
            var files: [String] = []
            for body in bodies {
                let file = directory.appendingPathComponent(body.name)
                try Data(body.bytes).write(to: file)
                files.append(file.path)
            }
            let end = Int(Date().timeIntervalSince1970 + seconds)
            let script = """
                while [ "$(date +%s)" -lt \(end) ]; do for f in \(files.joined(separator: " ")); do \
                curl -s -o /dev/null -w '%{http_code}\\n' -H 'Content-Type: application/didcomm-envelope-enc' \
                --data-binary @"$f" http://127.0.0.1:\(didcommPort)/; done; done
                """
            for _ in 0..<self.posters {
                let process = Process()
                process.executableURL = URL(fileURLWithPath: "/bin/sh")
                process.arguments = ["-c", script]
                let pipe = Pipe()
                process.standardOutput = pipe
                try process.run()
                posters.append((process, pipe))
            }
        }
        var run = Run(latencies: [], requests: 0, all4xx: true)
        var id = 0
        while ContinuousClock.now < deadline {
            id += 1
            let sent = ContinuousClock.now
            try await client.send(#"{"jsonrpc":"2.0","id":\#(id),"method":"system.ping"}"# + "\n")
            guard try await client.readLine() != nil else { break }
            run.latencies.append(ContinuousClock.now - sent)
            try await Task.sleep(for: .milliseconds(10))
        }
        await client.close()
        for (process, pipe) in posters {
            let output = String(decoding: pipe.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
            process.waitUntilExit()
            for status in output.split(separator: "\n") {
                run.requests += 1
                run.all4xx = run.all4xx && status.hasPrefix("4")
            }
        }
        return run
    }

    private func summary(_ latencies: [Duration]) -> String {
        guard !latencies.isEmpty else { return "no answers" }
        let sorted = latencies.sorted()
        return String(
            format: "%d pings, p50 %.2f ms, p99 %.2f ms, max %.2f ms", sorted.count, milliseconds(sorted[sorted.count / 2]),
            milliseconds(sorted[min(sorted.count - 1, sorted.count * 99 / 100)]), milliseconds(sorted.last!))
    }
}

private func milliseconds(_ duration: Duration) -> Double {
    Double(duration.components.seconds) * 1e3 + Double(duration.components.attoseconds) / 1e15
}

private func cpuClock(_ clock: clockid_t) -> Duration {
    var spec = timespec()
    clock_gettime(clock, &spec)
    return .seconds(spec.tv_sec) + .nanoseconds(spec.tv_nsec)
}

private func threadCPU() -> Duration { cpuClock(CLOCK_THREAD_CPUTIME_ID) }
private func processCPU() -> Duration { cpuClock(CLOCK_PROCESS_CPUTIME_ID) }
