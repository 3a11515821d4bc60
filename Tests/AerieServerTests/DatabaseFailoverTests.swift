import AerieClient
import AerieCore
import AerieTesting
import Foundation
import Synchronization
import Testing

/// Issue 18: the database machine lost under load. The real `aerie-server` on a Patroni-managed
/// PostgreSQL pair with synchronous replication (`deploy/patroni-cluster`), connected by a
/// multi-host conninfo with `target_session_attrs=read-write`. Writers run; the primary is
/// killed (`kill -9` of its Patroni and PostgreSQL); the standby is promoted; the server finds
/// the new primary by itself, and every write it acknowledged is there.
@Suite(.serialized, .timeLimit(.minutes(10))) struct DatabaseFailoverTests {
    final class Ledger: Sendable {
        let acknowledged = Mutex<[String]>([])
        let failed = Mutex(0)
        let firstAfterKill = Mutex<ContinuousClock.Instant?>(nil)
        let killedAt = Mutex<ContinuousClock.Instant?>(nil)
        let stop = Mutex(false)
    }

    @Test func primaryKilledUnderLoadLosesNoAcknowledgedWrite() async throws {
        let cluster = try PatroniCluster()
        do {
            try await cluster.start()
        } catch {
            await cluster.stopAndRemove()
            throw error
        }
        let server = try ServerProcess(
            database: nil,
            environment: [
                "AERIE_DATABASE_URL": try await cluster.conninfo(role: "aerie_app"),
                "AERIE_OWNER_DATABASE_URL": try await cluster.conninfo(role: "aerie_owner"),
            ])
        do {
            try await server.start()
            let tenant = try await server.createTenant(label: "failover")
            let first = try #require(await cluster.primary())
            let ledger = Ledger()
            let token = tenant.token

            let writers = Task {
                await withTaskGroup(of: Void.self) { group in
                    for writer in 0..<4 {
                        group.addTask {
                            guard let client = try? await server.tenantClient(token: token) else { return }
                            var n = 0
                            while !ledger.stop.withLock({ $0 }) {
                                n += 1
                                let key = "w\(writer)-\(n)"
                                // Started after the primary was gone: its success shows the new primary.
                                let startedAfterKill = ledger.killedAt.withLock { $0 } != nil
                                do {
                                    _ = try await client.call("settings.set", params: ["key": .string(key), "value": .int(Int64(n))])
                                    ledger.acknowledged.withLock { $0.append(key) }
                                    if startedAfterKill { ledger.firstAfterKill.withLock { $0 = $0 ?? .now } }
                                } catch {
                                    ledger.failed.withLock { $0 += 1 }
                                    try? await Task.sleep(for: .milliseconds(100))
                                }
                            }
                            await client.close()
                        }
                    }
                }
            }
            // Load first, then the primary goes.
            while ledger.acknowledged.withLock({ $0.count }) < 200 { try await Task.sleep(for: .milliseconds(20)) }
            try await cluster.kill(first)
            ledger.killedAt.withLock { $0 = .now }
            let ackedBeforeKill = ledger.acknowledged.withLock { $0.count }

            // The standby is promoted and the server writes again without being touched.
            let deadline = ContinuousClock.now + .seconds(90)
            while ledger.firstAfterKill.withLock({ $0 }) == nil, ContinuousClock.now < deadline {
                try await Task.sleep(for: .milliseconds(100))
            }
            let resumed = try #require(ledger.firstAfterKill.withLock { $0 }, "no write succeeded within 90 s of the kill")
            let promoted = await cluster.primary()
            #expect(promoted != nil && promoted != first, "node \(first) killed; primary now \(String(describing: promoted))")
            let resumeAt = ledger.acknowledged.withLock { $0.count }
            while ledger.acknowledged.withLock({ $0.count }) < resumeAt + 100, ContinuousClock.now < deadline {
                try await Task.sleep(for: .milliseconds(20))
            }
            ledger.stop.withLock { $0 = true }
            await writers.value

            // Readiness is back too: database reachable, LISTEN reconnected.
            var ready = try await RawLineClient.httpGet(port: server.metricsPort, path: "/readyz")
            for _ in 0..<100 where ready.status != 200 {
                try await Task.sleep(for: .milliseconds(100))
                ready = try await RawLineClient.httpGet(port: server.metricsPort, path: "/readyz")
            }
            #expect(ready.status == 200, "\(ready)")

            // Every acknowledged write is on the new primary.
            let acknowledged = ledger.acknowledged.withLock { $0 }
            let reader = try await server.tenantClient(token: tenant.token)
            var missing: [String] = []
            for key in acknowledged {
                do {
                    _ = try await reader.call("settings.get", params: ["key": .string(key)])
                } catch {
                    missing.append(key)
                }
            }
            await reader.close()
            #expect(missing.isEmpty, "\(missing.count) of \(acknowledged.count) acknowledged writes lost: \(missing.prefix(10))")
            let killedAt = try #require(ledger.killedAt.withLock { $0 })
            print(
                "failover: \(acknowledged.count) writes acknowledged (\(ackedBeforeKill) before the kill), "
                    + "\(ledger.failed.withLock { $0 }) failed during the failover, 0 lost; writes resumed "
                    + "\(resumed - killedAt) after kill -9 of the primary (node \(first) -> node \(promoted ?? 0))")
        } catch {
            print("server log:\n\(server.log().suffix(3000))\nnode logs:\n\(cluster.log(node: 1).suffix(1500))\n\(cluster.log(node: 2).suffix(1500))")
            await server.cleanUp()
            await cluster.stopAndRemove()
            throw error
        }
        await server.cleanUp()
        await cluster.stopAndRemove()
    }
}
