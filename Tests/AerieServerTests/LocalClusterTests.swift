import AerieClient
import AerieCore
import AerieTesting
import Foundation
import Testing

/// Issue 18: three `aerie-server` processes on one PostgreSQL behind HAProxy
/// (`deploy/local-cluster`), with a real ACA-Py 1.2.7 inviter: sessions spread over the servers;
/// one server killed with SIGKILL while connections are being made; clients reconnect through
/// HAProxy and every flow completes; pushes reach a session on one server for messages that
/// another server received (LISTEN/NOTIFY across processes).
@Suite(.serialized, .timeLimit(.minutes(10))) struct LocalClusterTests {
    @Test func flowsSurviveAServerKillBehindHAProxy() async throws {
        // A Request the killed server had leased is sent by another once the lease ends: 16 s
        // here (just above the longest send), so the repeated accepts see it within their wait.
        let cluster = try LocalCluster(
            servers: 3,
            serverEnvironment: ["AERIE_ALLOW_PRIVATE_URLS": "1", "AERIE_LOG_LEVEL": "info", "AERIE_DELIVERY_LEASE_SECONDS": "16"])
        let agent = try await ACAPyAgent.start()
        do {
            try await cluster.start()
            let admin = try await cluster.client()
            try await admin.authenticate(token: try cluster.adminToken)
            let token = try #require(try await admin.call("admin.tenants.create", params: ["label": "cluster"])["token"]?.stringValue)
            await admin.close()

            // Six sessions, spread by HAProxy (leastconn) over the three servers.
            var sessions: [AerieClient] = []
            for _ in 0..<6 {
                let client = try await cluster.client()
                try await client.authenticate(token: token)
                sessions.append(client)
            }
            let spread = try await cluster.rpcSessionsPerServer()
            #expect(spread.count == 3 && spread.values.allSatisfy { $0 >= 1 }, "sessions per server: \(spread)")

            var flows: [(url: String, acapy: String)] = []
            for _ in 0..<6 {
                let created = try await agent.admin("POST", "/connections/create-invitation", body: [:])
                flows.append((try #require(created["invitation_url"]?.stringValue), try #require(created["connection_id"]?.stringValue)))
            }
            let pairs = Array(zip(sessions, flows))
            let inFlight = Task {
                await withTaskGroup(of: Void.self) { group in
                    for (session, flow) in pairs {
                        group.addTask {
                            _ = try? await session.call(
                                "connections.accept", params: ["url": .string(flow.url), "wait": true, "timeoutSeconds": 20])
                        }
                    }
                }
            }
            // Logged so a failure can be replayed with the same delay.
            let killDelay = Int.random(in: 20...200)
            print("local cluster: kill -9 of server 2 after \(killDelay) ms")
            try await Task.sleep(for: .milliseconds(killDelay))
            try await cluster.run(["kill", "2"])
            await inFlight.value
            for session in sessions { await session.close() }

            // The backend reconnects (HAProxy sends it to a live server) and repeats every accept.
            let again = try await cluster.client()
            try await again.authenticate(token: token)
            var completed = 0
            for flow in flows {
                let state = try await CrashSafetyTests.acceptUntilEstablished(again, url: flow.url)
                if state == 4 { completed += 1 }
            }
            #expect(completed == flows.count, "\(completed) of \(flows.count) flows established\n\(cluster.log(1).suffix(2000))")
            let list = try await again.call("connections.list", params: [:])
            let connections = list["connections"]?.arrayValue ?? []
            #expect(connections.count == flows.count)
            for flow in flows {
                _ = try await agent.waitForConnection(flow.acapy, states: ["active", "completed"])
            }

            // Pushes: one subscribed session; ACA-Py's messages reach the servers round robin.
            try #require(try await again.call("messages.subscribe") == ["subscribed": true])
            let seen = MessagesPushTests.Collector(again)
            for flow in flows {
                _ = try await agent.admin("POST", "/connections/\(flow.acapy)/send-message", body: ["content": "via haproxy"])
            }
            let pushed = try await seen.wait(for: "messages.received", count: flows.count)
            #expect(pushed.count == flows.count)
            await again.close()
            print("local cluster: 3 servers, sessions per server \(spread), flows \(completed)/\(flows.count) after kill -9 of server 2, pushes \(pushed.count)/\(flows.count)")
        } catch {
            print("server 1 log:\n\(cluster.log(1).suffix(3000))\nACA-Py log:\n\(agent.log().suffix(2000))")
            await cluster.stopAndRemove()
            await agent.stop()
            throw error
        }
        await cluster.stopAndRemove()
        await agent.stop()
    }
}
