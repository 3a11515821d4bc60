import AerieClient
import AerieCore
import AerieTesting
import Foundation
import Testing

/// Sessions are shared fairly: one credential holds at most its cap, admin sessions have a lane
/// of their own, `AERIE_RPC_MAX_SESSIONS` admits exactly that many, and a batch that
/// authenticates stays within the in-flight limit. Against the real `aerie-server` executable
/// where the limits come from its environment.
@Suite(.serialized, .timeLimit(.minutes(10))) struct SessionFairnessTests {
    /// `data.code` of the error `session.authenticate` with `token` answers on a new session (nil
    /// when it succeeds), and whether the server then closed that session.
    static func authenticate(port: Int, token: String) async throws -> (code: String?, closed: Bool, raw: RawLineClient) {
        let raw = try await RawLineClient.connect(port: port)
        try await raw.send(#"{"jsonrpc":"2.0","id":1,"method":"session.authenticate","params":{"token":"\#(token)"}}"# + "\n")
        let reply = try JSONValue(parsing: try #require(await raw.readLine()))
        #expect(reply["id"] == 1)
        guard let code = reply["error"]?["data"]?["code"]?.stringValue else {
            #expect(reply["result"] != nil)
            return (nil, false, raw)
        }
        return (code, await raw.waitForClose(), raw)
    }

    /// The issue's case: one tenant token opens as many sessions as it may and the rest of the
    /// server's; another tenant still authenticates, so does the admin, and the admin suspends
    /// the first tenant, whose open sessions then stop.
    @Test func oneTokenAtItsCapLeavesRoomForOthersAndTheAdmin() async throws {
        try await OperatorEndpointTests.withServer(environment: [
            "AERIE_RPC_MAX_SESSIONS": "8", "AERIE_RPC_MAX_SESSIONS_PER_CREDENTIAL": "5",
        ]) { server in
            let greedy = try await server.createTenant(label: "greedy")
            let other = try await server.createTenant(label: "other")
            var held: [AerieClient] = []
            for _ in 0..<5 { held.append(try await server.tenantClient(token: greedy.token)) }
            let refused = try await Self.authenticate(port: server.rpcPort, token: greedy.token)
            #expect(refused.code == "busy")
            #expect(refused.closed, "a session refused for want of a place is closed")

            let otherClient = try await server.tenantClient(token: other.token)
            #expect(try await otherClient.call("system.ping") == "pong")

            let admin = try await server.client()
            try await admin.authenticate(token: try server.adminToken)
            _ = try await admin.call("admin.tenants.suspend", params: ["tenantId": .string(greedy.id)])
            do {
                _ = try await held[0].call("connections.list")
                Issue.record("a suspended tenant's session still answers")
            } catch let error as AerieClientError {
                #expect(error.data?["code"]?.stringValue == "unauthenticated")
            }
            // The other tenant is unaffected.
            _ = try await otherClient.call("connections.list")
            for client in held { await client.close() }
            await otherClient.close()
            await admin.close()
        }
    }

    /// Admin sessions are not counted in `AERIE_RPC_MAX_SESSIONS`: with every shared place
    /// taken, the admin authenticates; its own lane is bounded too.
    @Test func theAdminLaneIsReservedAndBounded() async throws {
        try await OperatorEndpointTests.withServer(environment: [
            "AERIE_RPC_MAX_SESSIONS": "3", "AERIE_RPC_MAX_SESSIONS_PER_CREDENTIAL": "3", "AERIE_RPC_MAX_ADMIN_SESSIONS": "2",
        ]) { server in
            let tenants = [try await server.createTenant(label: "a"), try await server.createTenant(label: "b")]
            var held: [AerieClient] = []
            // Exactly AERIE_RPC_MAX_SESSIONS sessions are admitted, from two credentials.
            for index in 0..<3 { held.append(try await server.tenantClient(token: tenants[index % 2].token)) }
            let fourth = try await Self.authenticate(port: server.rpcPort, token: tenants[1].token)
            #expect(fourth.code == "busy")
            #expect(fourth.closed)

            let adminToken = try server.adminToken
            let first = try await Self.authenticate(port: server.rpcPort, token: adminToken)
            #expect(first.code == nil, "the admin authenticates while tenants hold every shared place")
            let second = try await Self.authenticate(port: server.rpcPort, token: adminToken)
            #expect(second.code == nil)
            let third = try await Self.authenticate(port: server.rpcPort, token: adminToken)
            #expect(third.code == "busy", "the admin lane is bounded by AERIE_RPC_MAX_ADMIN_SESSIONS")

            // A place freed is a place taken again.
            await held.removeLast().close()
            var admitted: String? = "busy"
            for _ in 0..<50 where admitted != nil {
                let attempt = try await Self.authenticate(port: server.rpcPort, token: tenants[1].token)
                admitted = attempt.code
                if admitted == nil { await attempt.raw.close() } else { try await Task.sleep(for: .milliseconds(100)) }
            }
            #expect(admitted == nil)
            for client in held { await client.close() }
            for raw in [first.raw, second.raw, third.raw, fourth.raw] { await raw.close() }
        }
    }

    /// A batch that contains `session.authenticate` is held to the session's in-flight limit
    /// like any other batch.
    @Test func aBatchThatAuthenticatesStaysWithinTheInFlightLimit() async throws {
        let probe = ProbePlugin()
        try await LiveServer.with(extraPlugins: [probe], rpc: { $0.maxInFlightPerSession = 3 }) { server in
            let raw = try await RawLineClient.connect(port: server.port)
            defer { Task { await raw.close() } }
            let entries = [#"{"jsonrpc":"2.0","id":0,"method":"session.authenticate","params":{"token":"\#(server.adminToken)"}}"#]
                + (1...30).map { #"{"jsonrpc":"2.0","id":\#($0),"method":"probe.track","params":{"milliseconds":20,"tag":\#($0)}}"# }
            try await raw.send("[" + entries.joined(separator: ",") + "]\n")
            guard case .array(let answers) = try JSONValue(parsing: try #require(await raw.readLine())) else {
                Issue.record("the batch answer is not an array")
                return
            }
            #expect(answers.count == 31)
            #expect(answers.contains { $0["id"] == 0 && $0["result"]?["role"] == "admin" })
            #expect(probe.concurrency.most <= 3, "\(probe.concurrency.most) calls ran at once")
            #expect(probe.concurrency.most >= 2)
        }
    }
}
