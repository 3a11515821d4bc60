import AerieClient
import AerieCore
import AerieTesting
import Testing

@Suite(.timeLimit(.minutes(10))) struct AuthenticationTests {
    @Test func noTokenWrongTokenAndCrossedRoles() async throws {
        try await LiveServer.with { server in
            let anonymous = try await AerieClient.connect(host: "127.0.0.1", port: server.port)
            defer { Task { await anonymous.close() } }
            // No token: tenant and admin methods refuse; ping works.
            #expect(try await anonymous.call("system.ping") == "pong")
            await expectCode("unauthenticated") { try await anonymous.call("settings.list") }
            await expectCode("unauthenticated") { try await anonymous.call("admin.tenants.list") }
            // Wrong token.
            await expectCode("unauthenticated") { try await anonymous.authenticate(token: "aerie_t_" + String(repeating: "A", count: 43)) }
            await expectCode("unauthenticated") { try await anonymous.call("settings.list") }

            // Admin token on tenant methods.
            let admin = try await server.adminClient()
            defer { Task { await admin.close() } }
            await expectCode("forbidden") { try await admin.call("settings.list") }

            // Tenant token on admin methods.
            let (tenant, _) = try await server.tenantClient(label: "alice")
            defer { Task { await tenant.close() } }
            await expectCode("forbidden") { try await tenant.call("admin.tenants.list") }
            #expect(try await tenant.call("settings.list")["items"] == [])
        }
    }

    @Test func suspendedTenantStopsOnItsNextCall() async throws {
        try await LiveServer.with { server in
            let admin = try await server.adminClient()
            defer { Task { await admin.close() } }
            let (tenant, id) = try await server.tenantClient(label: "bob")
            defer { Task { await tenant.close() } }
            _ = try await tenant.call("settings.set", params: ["key": "k", "value": 1])

            _ = try await admin.call("admin.tenants.suspend", params: ["tenantId": .string(id.rawValue)])
            await expectCode("unauthenticated") { try await tenant.call("settings.get", params: ["key": "k"]) }
            // The session lost its credential: even after resume it must authenticate again.
            _ = try await admin.call("admin.tenants.resume", params: ["tenantId": .string(id.rawValue)])
            await expectCode("unauthenticated") { try await tenant.call("settings.get", params: ["key": "k"]) }
        }
    }

    @Test func rotatedTokenStopsTheOldOneAndDeletedTenantCannotLogIn() async throws {
        try await LiveServer.with { server in
            let admin = try await server.adminClient()
            defer { Task { await admin.close() } }
            let created = try await admin.call("admin.tenants.create", params: ["label": "carol"])
            let id = try #require(created["tenantId"]?.stringValue)
            let oldToken = try #require(created["token"]?.stringValue)
            let session = try await AerieClient.connect(host: "127.0.0.1", port: server.port)
            defer { Task { await session.close() } }
            try await session.authenticate(token: oldToken)

            let rotated = try await admin.call("admin.tenants.rotateToken", params: ["tenantId": .string(id)])
            let newToken = try #require(rotated["token"]?.stringValue)
            #expect(newToken != oldToken)
            await expectCode("unauthenticated") { try await session.call("settings.list") }
            await expectCode("unauthenticated") { try await session.authenticate(token: oldToken) }
            try await session.authenticate(token: newToken)
            _ = try await session.call("settings.list")

            _ = try await admin.call("admin.tenants.delete", params: ["tenantId": .string(id)])
            await expectCode("unauthenticated") { try await session.call("settings.list") }
            await expectCode("unauthenticated") { try await session.authenticate(token: newToken) }
        }
    }
}

func expectCode(_ code: String, sourceLocation: SourceLocation = #_sourceLocation, _ body: () async throws -> Any) async {
    do {
        _ = try await body()
        Issue.record("expected \(code), got success", sourceLocation: sourceLocation)
    } catch let error as AerieClientError {
        #expect(error.stableCode == code, "\(error)", sourceLocation: sourceLocation)
    } catch {
        Issue.record("expected \(code), got \(error)", sourceLocation: sourceLocation)
    }
}

@Suite(.timeLimit(.minutes(10))) struct PipelinedAuthenticationTests {
    @Test func callsPipelinedBehindAuthenticateSeeTheNewSession() async throws {
        try await LiveServer.with { server in
            let admin = try await server.adminClient()
            defer { Task { await admin.close() } }
            let created = try await admin.call("admin.tenants.create", params: ["label": "pipeliner"])
            let token = try #require(created["token"]?.stringValue)
            let raw = try await RawLineClient.connect(port: server.port)
            defer { Task { await raw.close() } }
            try await raw.send(
                #"{"jsonrpc":"2.0","id":1,"method":"session.authenticate","params":{"token":"\#(token)"}}"# + "\n"
                    + #"{"jsonrpc":"2.0","id":2,"method":"settings.set","params":{"key":"k","value":1}}"# + "\n"
                    + #"{"jsonrpc":"2.0","id":3,"method":"settings.list"}"# + "\n")
            var replies: [JSONValue] = []
            for _ in 0..<3 { replies.append(try JSONValue(parsing: try #require(await raw.readLine()))) }
            for reply in replies {
                #expect(reply["error"] == nil, "\(reply.jsonString)")
            }
        }
    }
}
