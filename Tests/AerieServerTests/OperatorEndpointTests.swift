import AerieClient
import AerieCore
import AerieServer
import AerieTesting
import Foundation
import Testing

/// Issue 18: the operator endpoint (`AERIE_METRICS_LISTEN`) of the real `aerie-server`
/// executable: metrics move with real calls and messages and name no tenant, health and
/// readiness answer, readiness turns 503 the moment a drain starts, JSON logs carry request ids.
@Suite(.serialized, .timeLimit(.minutes(10))) struct OperatorEndpointTests {
    /// The value of the series of `name` whose labels include every one of `labels`, or nil.
    static func value(_ metrics: String, _ name: String, _ labels: [String: String] = [:]) -> Double? {
        for line in metrics.split(separator: "\n") where line.hasPrefix(name + "{") || line.hasPrefix(name + " ") {
            let series = line.prefix(while: { $0 != " " })
            guard labels.allSatisfy({ series.contains("\($0.key)=\"\($0.value)\"") }) else { continue }
            if let value = line.split(separator: " ").last.flatMap({ Double($0) }) { return value }
        }
        return nil
    }

    /// `/readyz` polled until it answers `status` (10 s at most); the last answer.
    static func readyz(port: Int, until status: Int) async throws -> (status: Int, body: String) {
        var answer = try await RawLineClient.httpGet(port: port, path: "/readyz")
        for _ in 0..<100 where answer.status != status {
            try await Task.sleep(for: .milliseconds(100))
            answer = try await RawLineClient.httpGet(port: port, path: "/readyz")
        }
        return answer
    }

    static func withServer(
        environment: [String: String] = [:], _ body: (ServerProcess) async throws -> Void
    ) async throws {
        let database = try await TestPostgres.shared.freshDatabase()
        let server = try ServerProcess(database: database, environment: environment)
        do {
            try await server.start()
            try await body(server)
        } catch {
            print("server log:\n\(server.log().suffix(4000))")
            await server.cleanUp()
            try? await database.drop()
            throw error
        }
        await server.cleanUp()
        try? await database.drop()
    }

    @Test func metricsMoveWithRealCallsAndNameNoTenant() async throws {
        try await Self.withServer { server in
            let port = server.metricsPort
            _ = try await Self.readyz(port: port, until: 200)  // the LISTEN connection is up
            let alice = try await server.createTenant(label: "alice-metrics")
            let bob = try await server.createTenant(label: "bob-metrics")
            let aliceClient = try await server.tenantClient(token: alice.token)
            let bobClient = try await server.tenantClient(token: bob.token)
            defer { Task { await aliceClient.close(); await bobClient.close() } }

            let before = try await RawLineClient.httpGet(port: port, path: "/metrics")
            #expect(before.status == 200)
            let pingsBefore = Self.value(before.body, "aerie_rpc_calls_total", ["method": "system.ping", "outcome": "ok"]) ?? 0
            let refusedBefore = Self.value(before.body, "aerie_inbound_messages_total", ["outcome": "refused"]) ?? 0

            for _ in 0..<5 { _ = try await aliceClient.call("system.ping") }
            _ = try await bobClient.call("connections.list")
            await #expect(throws: AerieClientError.self) { _ = try await bobClient.call("no.such.method.\(bob.id)") }
            await #expect(throws: AerieClientError.self) {
                _ = try await aliceClient.call("connections.get", params: ["connectionId": .string(UUID().uuidString)])
            }
            // A packed message nobody here can open: refused at the DIDComm endpoint.
            let peer = try await RawLineClient.connect(port: server.didcommPort)
            try await peer.send("POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\nConnection: close\r\n\r\n{}")
            let status = try await peer.readLine()
            #expect(status?.hasPrefix("HTTP/1.1 400") == true, "\(status ?? "nil")")
            await peer.close()

            let after = try await RawLineClient.httpGet(port: port, path: "/metrics")
            let metrics = after.body
            #expect(Self.value(metrics, "aerie_rpc_calls_total", ["method": "system.ping", "outcome": "ok"]) == pingsBefore + 5)
            #expect(Self.value(metrics, "aerie_rpc_calls_total", ["method": "connections.list", "outcome": "ok"]) == 1)
            #expect(Self.value(metrics, "aerie_rpc_calls_total", ["method": "unknown", "outcome": "method_not_found"]) == 1)
            #expect(Self.value(metrics, "aerie_rpc_calls_total", ["method": "connections.get", "outcome": "not_found"]) == 1)
            #expect(Self.value(metrics, "aerie_rpc_call_duration_seconds_count", ["method": "system.ping"]).map { $0 >= 5 } == true)
            #expect(Self.value(metrics, "aerie_inbound_messages_total", ["outcome": "refused"]) == refusedBefore + 1)
            #expect(Self.value(metrics, "aerie_rpc_sessions", ["state": "authenticated"]).map { $0 >= 2 } == true)
            #expect(Self.value(metrics, "aerie_tenants", ["status": "active"]) == 2)
            #expect(Self.value(metrics, "aerie_tenants", ["status": "suspended"]) == 0)
            #expect(Self.value(metrics, "aerie_listen_up") == 1)
            #expect(Self.value(metrics, "aerie_database_up") == 1)
            #expect(Self.value(metrics, "aerie_outbox_pending") == 0)
            #expect(Self.value(metrics, "aerie_db_pool_size") == 4)
            #expect(Self.value(metrics, "aerie_db_pool_wait_seconds_count").map { $0 > 0 } == true)
            // Nothing that identifies a tenant or a credential: not the ids, labels or tokens, not
            // the unknown method name a client chose.
            for secret in [alice.id, bob.id, alice.token, bob.token, "alice-metrics", "no.such.method"] {
                #expect(!metrics.contains(secret), "metrics expose \(secret)")
            }

            let health = try await RawLineClient.httpGet(port: port, path: "/healthz")
            #expect(health.status == 200 && health.body == "ok")
            let ready = try await Self.readyz(port: port, until: 200)
            #expect(ready.status == 200 && ready.body.contains("\"ready\":true"), "\(ready)")
            #expect(try await RawLineClient.httpGet(port: port, path: "/nothing-here").status == 404)
        }
    }

    /// The database gone from under a running server: `/readyz` answers 503 naming it, while
    /// `/healthz` (the process itself) stays 200.
    @Test func readinessFailsWhenTheDatabaseIsGone() async throws {
        let database = try await TestPostgres.shared.freshDatabase()
        let server = try ServerProcess(database: database)
        defer { Task { await server.cleanUp() } }
        try await server.start()
        let ready = try await Self.readyz(port: server.metricsPort, until: 200)
        #expect(ready.status == 200, "\(ready)")
        // Drop the server's database from under it: the pool can no longer reach it.
        try await database.drop()
        // The database check's answer serves probes for up to a second: the LISTEN's loss may
        // be named first.
        var answer = try await Self.readyz(port: server.metricsPort, until: 503)
        for _ in 0..<50 where !answer.body.contains("database") {
            try await Task.sleep(for: .milliseconds(100))
            answer = try await RawLineClient.httpGet(port: server.metricsPort, path: "/readyz")
        }
        #expect(answer.status == 503 && answer.body.contains("database"), "\(answer)")
        // Liveness is about the process, not its dependencies.
        #expect(try await RawLineClient.httpGet(port: server.metricsPort, path: "/healthz").status == 200)
    }

    /// SIGTERM with a call still running: `/readyz` answers 503 "draining" while the call
    /// finishes, so a balancer stops sending work before the server is gone.
    @Test func readinessTurnsUnreadyTheMomentDrainStarts() async throws {
        try await LiveServer.with(
            extraPlugins: [ProbePlugin()],
            server: { $0.operations.metricsListen = AerieConfiguration.ListenAddress(host: "127.0.0.1", port: 0) }
        ) { server in
            let port = try #require(server.operatorPort)
            // Ready once the LISTEN connection is up (it opens in the background at start).
            let ready = try await Self.readyz(port: port, until: 200)
            #expect(ready.status == 200, "\(ready)")
            let client = try await server.client()
            let slow = Task { try await client.call("probe.sleep", params: ["milliseconds": 3000, "tag": 7]) }
            try await Task.sleep(for: .milliseconds(300))
            let stopping = Task { try await server.stop() }
            let answer = try await Self.readyz(port: port, until: 503)
            #expect(answer.status == 503 && answer.body.contains("draining"), "\(answer)")
            #expect(try await slow.value == .int(7), "the running call still finishes")
            try await stopping.value
        }
    }

    @Test func jsonLogsCarryARequestIdPerInboundMessage() async throws {
        try await Self.withServer(environment: ["AERIE_LOG_FORMAT": "json"]) { server in
            let peer = try await RawLineClient.connect(port: server.didcommPort)
            try await peer.send("POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 7\r\nConnection: close\r\n\r\ngarbage")
            _ = try await peer.readLine()
            await peer.close()
            var refused: [String: JSONValue]? = nil
            for _ in 0..<50 where refused == nil {
                for line in server.log().split(separator: "\n") where line.hasPrefix("{") {
                    guard case .object(let members)? = try? JSONValue(parsing: Array(line.utf8)) else {
                        Issue.record("a log line is not JSON: \(line)")
                        continue
                    }
                    #expect(members["time"] != nil && members["level"] != nil && members["message"] != nil)
                    if members["message"]?.stringValue == "inbound message refused" { refused = members }
                }
                if refused == nil { try await Task.sleep(for: .milliseconds(100)) }
            }
            let line = try #require(refused, "no 'inbound message refused' line in\n\(server.log().suffix(2000))")
            let request = try #require(line["request"]?.stringValue)
            #expect(request.count == 16 && request.allSatisfy(\.isHexDigit))
            #expect(line["status"]?.stringValue == "400")
        }
    }
}
