import AerieClient
import AerieCore
import AerieTesting
import Foundation
import Testing

/// Issue 12: nothing lost, nothing twice. The real `aerie-server` executable against a real
/// ACA-Py 1.2.7 inviter, killed with SIGKILL while flows run, then started again by the same
/// command; the client sends the same URLs again, as a backend must when answers were lost.
@Suite(.serialized, .timeLimit(.minutes(15))) struct CrashSafetyTests {
    static let rounds = 10
    static let flowsPerRound = 5

    /// Several accepts in flight, `kill -9` at a random moment, restart, the same URLs again:
    /// every flow ends established on both sides, one connection per invitation on each side.
    @Test func killNineWhileAcceptsAreInFlight() async throws {
        try await Self.withServerAndACAPy { server, agent in
            try await server.start()
            let tenant = try await server.createTenant(label: "crash")
            var started = 0
            var completed = 0
            var acapyIds: [String] = []
            for round in 0..<Self.rounds {
                var urls: [(url: String, acapy: String)] = []
                for _ in 0..<Self.flowsPerRound {
                    let created = try await agent.admin("POST", "/connections/create-invitation", body: [:])
                    urls.append(
                        (try #require(created["invitation_url"]?.stringValue), try #require(created["connection_id"]?.stringValue)))
                }
                started += urls.count
                acapyIds += urls.map(\.acapy)
                // In flight: each accept on its own session; answers may be lost with the process.
                let flows = urls
                let token = tenant.token
                let inFlight = Task {
                    await withTaskGroup(of: Void.self) { group in
                        for flow in flows {
                            group.addTask {
                                guard let client = try? await server.tenantClient(token: token) else { return }
                                _ = try? await client.call(
                                    "connections.accept", params: ["url": .string(flow.url), "wait": true, "timeoutSeconds": 20])
                                await client.close()
                            }
                        }
                    }
                }
                // Logged, and named in a failure, so a failing round can be replayed with its delay.
                let killDelay = Int.random(in: 0...400)
                print("crash safety round \(round): kill -9 after \(killDelay) ms")
                try await Task.sleep(for: .milliseconds(killDelay))
                await server.kill9()
                await inFlight.value
                try await server.start()

                // The backend sends every URL again and waits for the connection.
                let client = try await server.tenantClient(token: tenant.token)
                for flow in urls {
                    let state = try await Self.acceptUntilEstablished(client, url: flow.url)
                    if state == 4 { completed += 1 }
                    #expect(state == 4, "round \(round) (killed after \(killDelay) ms): \(flow.url.suffix(20)) ended in state \(state)\n\(server.log().suffix(3000))")
                }
                await client.close()
            }
            // Both sides: one connection per invitation, every one established.
            let client = try await server.tenantClient(token: tenant.token)
            let list = try await client.call("connections.list", params: ["limit": 500])
            let connections = list["connections"]?.arrayValue ?? []
            let invitationIds = connections.compactMap { $0["invitationId"]?.stringValue }
            let duplicates = invitationIds.count - Set(invitationIds).count
            await client.close()
            var active = 0
            for id in acapyIds {
                let record = try await agent.waitForConnection(id, states: ["active", "completed"], timeout: .seconds(20))
                if record["state"]?.stringValue == "active" || record["state"]?.stringValue == "completed" { active += 1 }
            }
            print("crash loop: \(Self.rounds) rounds, flows completed \(completed)/\(started), duplicates \(duplicates), ACA-Py active \(active)/\(started)")
            #expect(completed == started)
            #expect(connections.count == started, "\(connections.count) connections for \(started) invitations")
            #expect(duplicates == 0)
            #expect(active == started)
        }
    }

    /// The real aerie-server on a fresh database, next to an ACA-Py 1.2.7 inviter; both stopped
    /// afterwards (their logs printed when `body` throws).
    static func withServerAndACAPy(_ body: (ServerProcess, ACAPyAgent) async throws -> Void) async throws {
        let agent = try await ACAPyAgent.start()
        let database = try await TestPostgres.shared.freshDatabase()
        let server = try ServerProcess(database: database)
        do {
            try await body(server, agent)
        } catch {
            print("server log:\n\(server.log().suffix(4000))\nACA-Py log:\n\(agent.log().suffix(2000))")
            await server.cleanUp()
            await agent.stop()
            try? await database.drop()
            throw error
        }
        await server.cleanUp()
        await agent.stop()
        try? await database.drop()
    }

    /// `connections.accept {url, wait: true}` until the connection is established or 30 s passed;
    /// answers the last state seen.
    static func acceptUntilEstablished(_ client: AerieClient, url: String, method: String = "connections.accept")
        async throws -> Int
    {
        let deadline = ContinuousClock.now + .seconds(30)
        var state = -1
        while ContinuousClock.now < deadline {
            do {
                var answer = try await client.call(method, params: ["url": .string(url), "wait": true, "timeoutSeconds": 10])
                if let connection = answer["connection"], case .object = connection { answer = connection }
                state = Int(answer["state"]?.intValue ?? -1)
                if state == 4 { return state }
                if let id = answer["connectionId"]?.stringValue {
                    let current = try await client.call("connections.get", params: ["connectionId": .string(id)])
                    state = Int(current["state"]?.intValue ?? -1)
                    if state == 4 { return state }
                }
            } catch let error as AerieClientError where error.message.contains("did not answer") {
                // timeout: ask again
            }
            try await Task.sleep(for: .milliseconds(200))
        }
        return state
    }
}

extension CrashSafetyTests {
    /// One invitation, one connection: 10 sessions of one tenant accept the same (multi-use, so
    /// ACA-Py would answer every Request) invitation at once, each twice pipelined on its session.
    /// Every caller gets the same connection, established, and ACA-Py saw one Request.
    @Test func concurrentAcceptsOfOneInvitationMakeOneConnection() async throws {
        try await ACAPyConnectionTests.withAerieAndACAPy { server, agent in
            let created = try await agent.admin("POST", "/connections/create-invitation?multi_use=true", body: [:])
            let url = try #require(created["invitation_url"]?.stringValue)
            let admin = try await server.adminClient()
            let token = try #require(
                try await admin.call("admin.tenants.create", params: ["label": "racer"])["token"]?.stringValue)
            await admin.close()
            let label = "Racer-\(UUID().uuidString.prefix(6))"
            let answers = try await withThrowingTaskGroup(of: [JSONValue].self) { group in
                for _ in 0..<10 {
                    group.addTask {
                        let client = try await server.client()
                        defer { Task { await client.close() } }
                        try await client.authenticate(token: token)
                        async let a = client.call(
                            "connections.accept", params: ["url": .string(url), "wait": true, "timeoutSeconds": 30, "label": .string(label)])
                        async let b = client.call(
                            "connections.accept", params: ["url": .string(url), "wait": true, "timeoutSeconds": 30, "label": .string(label)])
                        return try await [a, b]
                    }
                }
                return try await group.reduce(into: []) { $0 += $1 }
            }
            let ids = Set(answers.compactMap { $0["connectionId"]?.stringValue })
            #expect(answers.count == 20)
            #expect(ids.count == 1, "\(ids.count) connections for one invitation")
            #expect(answers.allSatisfy { $0["state"] == 4 }, "\(answers.map { $0["state"] ?? .null })")

            let client = try await server.client()
            try await client.authenticate(token: token)
            let list = try await client.call("connections.list", params: [:])
            #expect(list["connections"]?.arrayValue?.count == 1)
            await client.close()
            // ACA-Py makes one connection record per Request it receives on a multi-use invitation.
            let records = try await agent.admin("GET", "/connections")["results"]?.arrayValue ?? []
            let requests = records.filter { $0["their_label"]?.stringValue == label }
            #expect(requests.count == 1, "ACA-Py received \(requests.count) Requests")
        }
    }
}

extension CrashSafetyTests {
    /// A crash at each named window of a connection flow (`AERIE_FAULT_POINT`, debug builds):
    /// after restart, the backend repeating its call ends with the connection established on
    /// both sides and exactly one connection on each.
    @Test(arguments: ["inbound.beforeCommit", "inbound.afterStore", "outbox.afterPost", "accept.afterRecord", "oob.afterRecord"])
    func crashAtFaultPointThenTheFlowCompletes(point: String) async throws {
        #expect(FaultPoint.names.contains(point))
        try await Self.withServerAndACAPy { server, agent in
            try await server.start(extra: ["AERIE_FAULT_POINT": point])
            let tenant = try await server.createTenant(label: "fault")
            let outOfBand = point.hasPrefix("oob.")
            let created =
                outOfBand
                ? try await agent.admin(
                    "POST", "/out-of-band/create-invitation",
                    body: ["handshake_protocols": ["https://didcomm.org/connections/1.0"], "use_public_did": false])
                : try await agent.admin("POST", "/connections/create-invitation", body: [:])
            let url = try #require(created["invitation_url"]?.stringValue)
            let method = outOfBand ? "outOfBand.accept" : "connections.accept"

            let client = try await server.tenantClient(token: tenant.token)
            _ = try? await client.call(method, params: ["url": .string(url), "wait": true, "timeoutSeconds": 20])
            await client.close()
            try #require(await server.waitForExit(timeout: .seconds(30)), "fault point \(point) was never reached")
            try await server.start()

            let again = try await server.tenantClient(token: tenant.token)
            let state = try await Self.acceptUntilEstablished(again, url: url, method: method)
            #expect(state == 4, "after a crash at \(point): state \(state)\n\(server.log().suffix(3000))")
            let list = try await again.call("connections.list", params: [:])
            #expect(list["connections"]?.arrayValue?.count == 1, "\(list)")
            await again.close()
            // ACA-Py moves to active on our trust ping, delivered after our state 4.
            var acapyStates: [JSONValue] = []
            let deadline = ContinuousClock.now + .seconds(30)
            while ContinuousClock.now < deadline {
                acapyStates = (try await agent.admin("GET", "/connections")["results"]?.arrayValue ?? []).map { $0["state"] ?? .null }
                if acapyStates.contains("active") || acapyStates.contains("completed") { break }
                try await Task.sleep(for: .milliseconds(200))
            }
            let active = acapyStates.filter { $0 == "active" || $0 == "completed" }
            #expect(active.count == 1, "ACA-Py: \(acapyStates)")
        }
    }

    /// The inviter side (issue 17): a crash while the Request is being handled (before its
    /// transaction commits) or after it committed but before ACA-Py got its 202; ACA-Py 1.2.7
    /// sends the Request again, and after the restart it reaches `active` with the one
    /// connection Aerie made (the Response queued in the same transaction as the state).
    @Test(arguments: ["inbound.beforeCommit", "inbound.afterStore"])
    func inviterCrashAtFaultPointThenTheInviteeConnects(point: String) async throws {
        try await Self.withServerAndACAPy { server, agent in
            try await server.start(extra: ["AERIE_FAULT_POINT": point])
            let tenant = try await server.createTenant(label: "inviter")
            let client = try await server.tenantClient(token: tenant.token)
            let created = try await client.call("connections.createInvitation", params: ["label": "Crashing Aerie"])
            let connectionId = try #require(created["connectionId"]?.stringValue)
            await client.close()
            let theirs = try await agent.admin(
                "POST", "/connections/receive-invitation?auto_accept=true", body: created["invitation"])
            let acapyConnection = try #require(theirs["connection_id"]?.stringValue)
            try #require(await server.waitForExit(timeout: .seconds(30)), "fault point \(point) was never reached")
            try await server.start()

            let active = try await agent.waitForConnection(acapyConnection, states: ["active", "completed"], timeout: .seconds(60))
            #expect(active["their_label"] == "Crashing Aerie")
            let again = try await server.tenantClient(token: tenant.token)
            var ours = JSONValue.null
            for _ in 0..<300 {
                ours = try await again.call("connections.get", params: ["connectionId": .string(connectionId)])
                if ours["state"] == 4 { break }
                try await Task.sleep(for: .milliseconds(100))
            }
            #expect(ours["state"] == 4, "after a crash at \(point): \(ours)\n\(server.log().suffix(3000))")
            #expect(ours["theirDid"]?.stringValue == active["my_did"]?.stringValue)
            let list = try await again.call("connections.list")
            #expect(list["connections"]?.arrayValue?.count == 1, "\(list)")
            await again.close()
        }
    }
}
