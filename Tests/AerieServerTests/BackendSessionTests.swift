import AerieClient
import AerieCore
import AerieTesting
import Foundation
import Testing

/// Issue 14, items 1-2: a backend holds one service credential and acts for many tenants over
/// one session, naming the tenant of each call in `params._meta.tenantId`, with exactly a tenant
/// session's isolation; it can act only for the tenants it owns.
@Suite(.timeLimit(.minutes(10))) struct BackendSessionTests {
    struct Backend {
        let id: String
        let token: String
    }

    static func createBackend(_ admin: AerieClient, _ label: String) async throws -> Backend {
        let created = try await admin.call("admin.backends.create", params: ["label": .string(label)])
        #expect(created["token"]?.stringValue?.hasPrefix("aerie_b_") == true)
        return Backend(id: try #require(created["backendId"]?.stringValue), token: try #require(created["token"]?.stringValue))
    }

    static func session(_ server: LiveServer, token: String) async throws -> AerieClient {
        let client = try await server.client()
        try await client.authenticate(token: token)
        return client
    }

    static func code(_ body: () async throws -> JSONValue) async -> (code: String?, message: String) {
        do {
            _ = try await body()
            return (nil, "")
        } catch let error as AerieClientError {
            return (error.stableCode, error.message)
        } catch {
            return ("unexpected", "\(error)")
        }
    }

    @Test func oneSessionActsForManyTenantsWithTheirIsolation() async throws {
        try await LiveServer.with { server in
            let admin = try await server.adminClient()
            let alpha = try await Self.createBackend(admin, "alpha wallet")
            let beta = try await Self.createBackend(admin, "beta wallet")

            // alpha creates two tenants on its own session; the admin creates one for beta.
            let a = try await Self.session(server, token: alpha.token)
            let authenticated = try await a.call("system.version")
            #expect(authenticated["name"] != nil)
            var alphaTenants: [(id: TenantID, token: String)] = []
            for label in ["ann", "bob"] {
                let created = try await a.call("admin.tenants.create", params: ["label": .string(label)])
                #expect(created["backendId"]?.stringValue == alpha.id)
                alphaTenants.append((try #require(TenantID(created["tenantId"]?.stringValue ?? "")), try #require(created["token"]?.stringValue)))
            }
            let carolCreated = try await admin.call("admin.tenants.create", params: ["label": "carol", "backendId": .string(beta.id)])
            let carol = try #require(TenantID(carolCreated["tenantId"]?.stringValue ?? ""))
            let (loneClient, lone) = try await server.tenantClient(label: "lone")
            await loneClient.close()
            let (ann, bob) = (alphaTenants[0].id, alphaTenants[1].id)

            // 60 calls pipelined on one session, for two tenants at once.
            try await withThrowingTaskGroup(of: Void.self) { group in
                for n in 0..<60 {
                    let tenant = n % 2 == 0 ? ann : bob
                    group.addTask {
                        _ = try await a.call(
                            "settings.set", params: ["key": .string("k\(n)"), "value": .string("\(tenant)")], tenant: tenant)
                    }
                }
                try await group.waitForAll()
            }
            for (tenant, parity) in [(ann, 0), (bob, 1)] {
                let listed = try await a.call("settings.list", params: ["limit": 100], tenant: tenant)
                let keys = (listed["items"]?.arrayValue ?? []).compactMap { $0["key"]?.stringValue }
                #expect(keys.count == 30, "\(tenant): \(keys.count) settings")
                #expect(keys.allSatisfy { Int($0.dropFirst())! % 2 == parity })
            }
            // The tenant's own token sees what its backend wrote, and nothing of the other tenant.
            let annOwn = try await Self.session(server, token: alphaTenants[0].token)
            #expect(try await annOwn.call("settings.get", params: ["key": "k0"])["value"] == .string(ann.rawValue))
            #expect(await Self.code { try await annOwn.call("settings.get", params: ["key": "k1"]) }.code == "not_found")
            // A tenant session may name itself, never another tenant.
            #expect(try await annOwn.call("settings.get", params: ["key": "k0"], tenant: ann)["value"] == .string(ann.rawValue))
            #expect(await Self.code { try await annOwn.call("settings.get", params: ["key": "k1"], tenant: bob) }.code == "forbidden")

            // Another backend's tenant and a tenant that does not exist get the same answer.
            let foreign = await Self.code { try await a.call("settings.list", tenant: carol) }
            let unknownID = TenantID.random()
            let unknown = await Self.code { try await a.call("settings.list", tenant: unknownID) }
            let ownerless = await Self.code { try await a.call("settings.list", tenant: lone) }
            #expect(foreign.code == "forbidden" && unknown.code == "forbidden" && ownerless.code == "forbidden")
            #expect(foreign.message.replacingOccurrences(of: carol.rawValue, with: "X")
                == unknown.message.replacingOccurrences(of: unknownID.rawValue, with: "X"))

            // What a backend may not do.
            let missing = await Self.code { try await a.call("settings.list") }
            #expect(missing.code == "invalid_params" && missing.message.contains("_meta.tenantId"), "\(missing)")
            #expect(await Self.code { try await a.call("admin.tenants.delete", params: ["tenantId": .string(ann.rawValue)]) }.code == "forbidden")
            #expect(await Self.code { try await a.call("admin.backends.list") }.code == "forbidden")
            #expect(
                await Self.code { try await a.call("admin.tenants.create", params: ["label": "x", "backendId": .string(beta.id)]) }.code
                    == "forbidden")
            #expect(await Self.code { try await a.call("admin.tenants.get", params: ["tenantId": .string(carol.rawValue)]) }.code == "not_found")
            #expect(
                await Self.code { try await a.call("messages.subscribe", params: [:], tenant: ann) }.code == "invalid_request")
            let page = try await a.call("admin.tenants.list")
            let listed = Set((page["items"]?.arrayValue ?? []).compactMap { $0["tenantId"]?.stringValue })
            #expect(listed == [ann.rawValue, bob.rawValue])
            #expect(await Self.code { try await a.call("settings.list", params: ["_meta": ["tenantId": "nope"]]) }.code == "invalid_params")
            #expect(await Self.code { try await a.call("settings.list", params: ["_meta": ["other": 1]]) }.code == "invalid_params")

            // A suspended tenant is out of reach; a suspended backend is out altogether.
            _ = try await admin.call("admin.tenants.suspend", params: ["tenantId": .string(bob.rawValue)])
            #expect(await Self.code { try await a.call("settings.list", tenant: bob) }.code == "forbidden")
            _ = try await a.call("settings.list", tenant: ann)
            _ = try await admin.call("admin.backends.suspend", params: ["backendId": .string(alpha.id)])
            #expect(await Self.code { try await a.call("settings.list", tenant: ann) }.code == "unauthenticated")
            _ = try await admin.call("admin.backends.resume", params: ["backendId": .string(alpha.id)])
            let rotated = try await admin.call("admin.backends.rotateToken", params: ["backendId": .string(alpha.id)])
            let again = try await Self.session(server, token: try #require(rotated["token"]?.stringValue))
            #expect(try await again.call("settings.get", params: ["key": "k0"], tenant: ann)["value"] == .string(ann.rawValue))
            #expect(await Self.code { try await Self.session(server, token: alpha.token).call("system.ping") }.code == "unauthenticated")

            // A backend that still owns tenants stays.
            #expect(await Self.code { try await admin.call("admin.backends.delete", params: ["backendId": .string(alpha.id)]) }.code == "conflict")
            let betaOwned = try await admin.call("admin.tenants.list", params: ["backendId": .string(beta.id)])
            #expect(betaOwned["items"]?.arrayValue?.count == 1)
            for client in [admin, a, annOwn, again] { await client.close() }
        }
    }

    /// Two backends on one server, each with its own session, create their tenants and drive
    /// pipelined calls for them at the same time: every call succeeds, neither can act for or
    /// list the other's tenants, and each event stream carries exactly its own tenants' events.
    @Test func twoBackendsActConcurrentlyWithTheirOwnIsolation() async throws {
        try await LiveServer.with { server in
            let admin = try await server.adminClient()
            let alpha = try await Self.createBackend(admin, "alpha concurrent")
            let beta = try await Self.createBackend(admin, "beta concurrent")
            let sessions = [try await Self.session(server, token: alpha.token), try await Self.session(server, token: beta.token)]
            let seen = sessions.map { EventLogTests.Events($0) }
            for session in sessions { _ = try await session.call("events.subscribe") }

            /// One backend's run: creates 3 tenants, then 60 pipelined calls (settings and
            /// invitations) for them; returns its tenants and the invitations' connection ids.
            @Sendable func drive(_ session: AerieClient, _ label: String) async throws -> (tenants: [TenantID], connections: Set<String>) {
                var tenants: [TenantID] = []
                for n in 0..<3 {
                    let created = try await session.call("admin.tenants.create", params: ["label": .string("\(label) \(n)")])
                    tenants.append(try #require(TenantID(created["tenantId"]?.stringValue ?? "")))
                }
                let fixed = tenants
                let connections = try await withThrowingTaskGroup(of: String?.self) { group in
                    for n in 0..<60 {
                        let tenant = fixed[n % 3]
                        group.addTask {
                            if n % 4 == 0 {
                                let created = try await session.call("connections.createInvitation", params: ["label": .string(label)], tenant: tenant)
                                return try #require(created["connectionId"]?.stringValue)
                            }
                            _ = try await session.call("settings.set", params: ["key": .string("k\(n)"), "value": .string(label)], tenant: tenant)
                            return nil
                        }
                    }
                    var ids = Set<String>()
                    for try await id in group { if let id { ids.insert(id) } }
                    return ids
                }
                return (fixed, connections)
            }
            async let alphaRun = drive(sessions[0], "alpha")
            async let betaRun = drive(sessions[1], "beta")
            let runs = try await [alphaRun, betaRun]
            #expect(runs.allSatisfy { $0.connections.count == 15 })

            for (own, other) in [(0, 1), (1, 0)] {
                let session = sessions[own]
                let label = own == 0 ? "alpha" : "beta"
                // Each tenant holds exactly the settings its backend wrote for it.
                for (index, tenant) in runs[own].tenants.enumerated() {
                    let listed = try await session.call("settings.list", params: ["limit": 100], tenant: tenant)
                    let items = listed["items"]?.arrayValue ?? []
                    let expected = Set((0..<60).filter { $0 % 3 == index && $0 % 4 != 0 }.map { "k\($0)" })
                    #expect(Set(items.compactMap { $0["key"]?.stringValue }) == expected, "\(label) \(tenant)")
                    #expect(items.allSatisfy { $0["value"] == .string(label) })
                }
                // It lists its own tenants only, and cannot act for the other's.
                let page = try await session.call("admin.tenants.list")
                let listed = Set((page["items"]?.arrayValue ?? []).compactMap { $0["tenantId"]?.stringValue })
                #expect(listed == Set(runs[own].tenants.map(\.rawValue)))
                for tenant in runs[other].tenants {
                    #expect(await Self.code { try await session.call("settings.list", tenant: tenant) }.code == "forbidden")
                    #expect(
                        await Self.code { try await session.call("connections.createInvitation", params: [:], tenant: tenant) }.code
                            == "forbidden")
                    #expect(
                        await Self.code { try await session.call("admin.tenants.get", params: ["tenantId": .string(tenant.rawValue)]) }
                            .code == "not_found")
                }
                // Its event stream carries its own tenants' new connections, all of them, and nothing else.
                for _ in 0..<3000 where !runs[own].connections.isSubset(of: EventLogTests.connectionIds(seen[own].events)) {
                    try await Task.sleep(for: .milliseconds(20))
                }
                let events = seen[own].events
                #expect(Set(EventLogTests.connectionIds(events)) == runs[own].connections, "\(label): \(events)")
                #expect(events.allSatisfy { event in runs[own].tenants.contains { event["tenantId"] == .string($0.rawValue) } })
            }
            for client in [admin] + sessions { await client.close() }
        }
    }

    /// A backend session acting for a tenant connects it to a real ACA-Py 1.2.7; the tenant's own
    /// session sees the connection, its sibling tenant does not.
    @Test func actingForATenantAgainstARealPeer() async throws {
        let agent = try await ACAPyAgent.start()
        do {
            try await LiveServer.with(server: { $0.outbound.allowPrivateURLs = true }) { server in
                let admin = try await server.adminClient()
                let backend = try await Self.createBackend(admin, "gamma wallet")
                let session = try await Self.session(server, token: backend.token)
                var tenants: [(TenantID, String)] = []
                for label in ["dee", "eve"] {
                    let created = try await session.call("admin.tenants.create", params: ["label": .string(label)])
                    tenants.append((try #require(TenantID(created["tenantId"]?.stringValue ?? "")), try #require(created["token"]?.stringValue)))
                }
                let invitation = try await agent.admin("POST", "/connections/create-invitation", body: [:])
                let url = try #require(invitation["invitation_url"]?.stringValue)
                let accepted = try await session.call(
                    "connections.accept", params: ["url": .string(url), "wait": true, "timeoutSeconds": 30], tenant: tenants[0].0)
                #expect(accepted["state"] == 4, "\(accepted)")
                let dee = try await Self.session(server, token: tenants[0].1)
                #expect(try await dee.call("connections.list")["connections"]?.arrayValue?.count == 1)
                #expect(try await session.call("connections.list", tenant: tenants[1].0)["connections"]?.arrayValue?.count == 0)
                for client in [admin, session, dee] { await client.close() }
            }
        } catch {
            print("ACA-Py log:\n\(agent.log().suffix(3000))")
            await agent.stop()
            throw error
        }
        await agent.stop()
    }
}
