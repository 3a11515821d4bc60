import AerieClient
import AerieCore
import AerieStore
import AerieTesting
import Foundation
import Testing

/// Issue 12: the embedded default (fsync and synchronous_commit on) restarted under load, by
/// `pg_ctl restart -m fast` and then `-m immediate` (a crash of PostgreSQL): every write the
/// server acknowledged is there afterwards, and the server serves again without a restart of its own.
@Suite(.serialized, .timeLimit(.minutes(10))) struct DatabaseRestartTests {
    @Test func everyAcknowledgedWriteSurvivesRestarts() async throws {
        let server = try ServerProcess(database: nil)
        do {
            try await server.start(timeout: .seconds(120))
            let tenant = try await server.createTenant(label: "writer")
            let acknowledged = Acknowledged()
            let stop = Flag()
            let writers = Task {
                await withTaskGroup(of: Void.self) { group in
                    for session in 0..<20 {
                        group.addTask {
                            var i = 0
                            var client: AerieClient?
                            while !stop.isSet {
                                i += 1
                                do {
                                    if client == nil { client = try await server.tenantClient(token: tenant.token) }
                                    let key = "s\(session)-\(i)"
                                    _ = try await client!.call("settings.set", params: ["key": .string(key), "value": .int(Int64(i))])
                                    acknowledged.add(key, i)
                                } catch {
                                    // Not acknowledged: the database was going down; a new session next time.
                                    if let dead = client { await dead.close() }
                                    client = nil
                                    try? await Task.sleep(for: .milliseconds(50))
                                }
                            }
                            if let client { await client.close() }
                        }
                    }
                }
            }
            let data = EmbeddedPostgres.clusterDirectory(forHome: server.home).appendingPathComponent("data").path
            // Each restart comes once writes flow (again): markers, not fixed sleeps.
            try await acknowledged.grow(past: 0, by: 200)
            let beforeFast = acknowledged.count
            print("restart -m fast after \(beforeFast) writes")
            #expect(try await PostgresControl.run(["restart", "-D", data, "-m", "fast", "-w"]) == 0)
            try await acknowledged.grow(past: acknowledged.count, by: 200)
            let beforeImmediate = acknowledged.count
            print("restart -m immediate after \(beforeImmediate) writes")
            #expect(try await PostgresControl.run(["restart", "-D", data, "-m", "immediate", "-w"]) == 0)
            try await acknowledged.grow(past: acknowledged.count, by: 200)
            stop.set()
            print("stopping writers")
            await writers.value
            let afterImmediate = acknowledged.count - beforeImmediate

            // Every acknowledged write reads back, through a new session of the same server.
            let reader = try await server.tenantClient(token: tenant.token)
            var lost: [String] = []
            for (key, value) in acknowledged.all {
                let read = try? await reader.call("settings.get", params: ["key": .string(key)])
                if read?["value"] != .int(Int64(value)) { lost.append(key) }
            }
            await reader.close()
            print(
                "database restarts: \(acknowledged.count) acknowledged writes (\(beforeFast) before -m fast, \(beforeImmediate) before -m immediate, \(afterImmediate) after), lost \(lost.count)"
            )
            #expect(lost.isEmpty, "lost: \(lost.prefix(20))")
            #expect(afterImmediate > 0, "the server did not serve writes again after the restart")
        } catch {
            print("server log:\n\(server.log().suffix(4000))")
            await server.cleanUp()
            throw error
        }
        await server.cleanUp()
    }
}

/// Writes the server acknowledged, by key (test bookkeeping shared by the writer tasks).
private final class Acknowledged: @unchecked Sendable {
    private let lock = NSLock()
    private var values: [String: Int] = [:]
    func add(_ key: String, _ value: Int) { lock.withLock { values[key] = value } }
    var count: Int { lock.withLock { values.count } }
    var all: [(String, Int)] { lock.withLock { values.map { ($0.key, $0.value) } } }

    /// Returns once `more` writes beyond `count` are acknowledged; records an issue after 60 s.
    func grow(past count: Int, by more: Int, sourceLocation: SourceLocation = #_sourceLocation) async throws {
        let deadline = ContinuousClock.now + .seconds(60)
        while self.count < count + more {
            guard ContinuousClock.now < deadline else {
                Issue.record("\(self.count - count) of \(more) writes acknowledged within 60 s", sourceLocation: sourceLocation)
                return
            }
            try await Task.sleep(for: .milliseconds(10))
        }
    }
}

private final class Flag: @unchecked Sendable {
    private let lock = NSLock()
    private var value = false
    func set() { lock.withLock { value = true } }
    var isSet: Bool { lock.withLock { value } }
}
