import Foundation

/// `aerie-bench idle`: `aerie-server` with its embedded cluster (a default deployment), one
/// tenant, nothing to do: the CPU it and every process of its cluster burn per second over
/// `seconds`, after `warmup` seconds for start-up's work to end.
struct IdleBench {
    var seconds: Double
    var warmup: Double

    func run() async throws -> String {
        try await Turns.stopping(try await AerieProcess.start(embedded: true), stop: { await $0.stop() }) { aerie in
            let (client, _) = try await aerie.tenantClient()
            await client.close()
            try await Task.sleep(for: .seconds(warmup))
            let postmaster = aerie.postmaster
            let serverBefore = ProcessCPU.seconds(pid: aerie.pid)
            let databaseBefore = ProcessCPU.postgresSeconds(postmaster: postmaster)
            let processesBefore = Self.clusterProcesses(postmaster)
            try await Task.sleep(for: .seconds(seconds))
            let server = (ProcessCPU.seconds(pid: aerie.pid) - serverBefore) * 1000 / seconds
            let database = (ProcessCPU.postgresSeconds(postmaster: postmaster) - databaseBefore) * 1000 / seconds
            // Which of the cluster's processes it was (the postmaster's line includes the
            // children it reaped: autovacuum workers, closed backends).
            let shares = Self.clusterProcesses(postmaster).compactMap { pid, now -> (String, Double)? in
                let used = (now.cpu - (processesBefore[pid]?.cpu ?? 0)) * 1000 / seconds
                return used > 0 ? (now.title, used) : nil
            }.sorted { $0.1 > $1.1 }
            return [
                String(format: "idle: aerie-server with its embedded cluster, one tenant, %.0f s after a %.0f s warm-up", seconds, warmup),
                postmaster == nil ? "  (its cluster's postmaster was not found: PostgreSQL is not counted)" : nil,
                String(
                    format: "  CPU ms per second: server %.2f + PostgreSQL %.2f = %.2f (target < 0.5)", server, database, server + database),
                shares.isEmpty ? nil : "  PostgreSQL by process: " + shares.map { String(format: "%@ %.2f", $0.0, $0.1) }.joined(separator: ", "),
            ].compactMap { $0 }.joined(separator: "\n")
        }
    }

    /// The cluster's processes (the postmaster and its children) by pid: title and CPU seconds.
    static func clusterProcesses(_ postmaster: Int32?) -> [Int32: (title: String, cpu: Double)] {
        guard let postmaster, let entries = try? FileManager.default.contentsOfDirectory(atPath: "/proc") else { return [:] }
        var found: [Int32: (title: String, cpu: Double)] = [:]
        for entry in entries {
            guard let pid = Int32(entry), pid == postmaster || ProcessCPU.parent(of: pid) == postmaster else { continue }
            let command = (try? Data(contentsOf: URL(fileURLWithPath: "/proc/\(pid)/cmdline"))).map {
                String(decoding: $0.split(separator: 0).first ?? Data(), as: UTF8.self)
            } ?? "?"
            let title = pid == postmaster ? "postmaster (+ exited children)" : command.replacingOccurrences(of: "postgres: ", with: "")
            found[pid] = (title, ProcessCPU.seconds(pid: pid, reapedChildren: pid == postmaster))
        }
        return found
    }
}
