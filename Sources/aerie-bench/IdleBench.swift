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
            try await Task.sleep(for: .seconds(seconds))
            let server = (ProcessCPU.seconds(pid: aerie.pid) - serverBefore) * 1000 / seconds
            let database = (ProcessCPU.postgresSeconds(postmaster: postmaster) - databaseBefore) * 1000 / seconds
            return [
                String(format: "idle: aerie-server with its embedded cluster, one tenant, %.0f s after a %.0f s warm-up", seconds, warmup),
                postmaster == nil ? "  (its cluster's postmaster was not found: PostgreSQL is not counted)" : nil,
                String(
                    format: "  CPU ms per second: server %.2f + PostgreSQL %.2f = %.2f (target < 0.5)", server, database, server + database),
            ].compactMap { $0 }.joined(separator: "\n")
        }
    }
}
