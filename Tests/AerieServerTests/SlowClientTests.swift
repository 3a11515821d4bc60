import AerieClient
import AerieCore
import AerieTesting
import Foundation
import Testing

/// Inbound limits (issue 13 item 3): slowloris sockets on both ports are closed by their
/// deadlines while real clients keep getting answers; HTTP connection cap, body and request
/// deadlines, keep-alive limits; the RPC server's authentication deadline, its separate cap for
/// unauthenticated sessions, and blank lines that do not keep a session alive.
@Suite(.timeLimit(.minutes(10))) struct SlowClientTests {
    struct TimedOut: Error {}

    /// `body`, or `TimedOut` after `seconds` (so a broken server fails the test, never hangs it).
    static func within<T: Sendable>(_ seconds: Double, _ body: @escaping @Sendable () async throws -> T) async throws -> T {
        try await withThrowingTaskGroup(of: T.self) { group in
            group.addTask { try await body() }
            group.addTask {
                try await Task.sleep(for: .milliseconds(Int(seconds * 1000)))
                throw TimedOut()
            }
            defer { group.cancelAll() }
            return try await group.next()!
        }
    }

    static let ping = #"{"jsonrpc":"2.0","id":1,"method":"system.ping"}"# + "\n"

    /// A raw HTTP POST on a fresh connection; the status line.
    static func rawPost(_ body: String, port: Int) async throws -> String? {
        let client = try await RawLineClient.connect(port: port)
        try await client.send("POST / HTTP/1.1\r\nHost: x\r\nContent-Length: \(body.utf8.count)\r\nConnection: close\r\n\r\n\(body)")
        let status = try await client.readLine()
        await client.close()
        return status
    }

    @Test func slowlorisOnBothPortsWhileRealClientsAnswer() async throws {
        let count = 1000  // the fd limit here is far above the 4,000 sockets this needs (both ends)
        try await LiveServer.with(
            rpc: { $0.authTimeoutSeconds = 4 },
            server: { $0.didcomm.limits.headerTimeout = .seconds(4) }
        ) { server in
            let (tenant, _) = try await server.tenantClient(label: "real")
            defer { Task { await tenant.close() } }

            var slow: [RawLineClient] = []
            for index in 0..<count {
                let http = try await RawLineClient.connect(port: server.didcommPort)
                try await http.send("POST / HTTP/1.1\r\nHost: x\r\nX-Slow-\(index): ")
                let rpc = try await RawLineClient.connect(port: server.port)
                try await rpc.send(#"{"jsonrpc":"2.0","#)
                slow += [http, rpc]
            }
            let trickled = slow
            let trickle = Task {
                while !Task.isCancelled {
                    for client in trickled { try? await client.send("a") }
                    try? await Task.sleep(for: .milliseconds(500))
                }
            }
            defer { trickle.cancel() }

            // A session authenticated before the attack, a new one, and a real POST all answer.
            _ = try await Self.within(30) { try await tenant.call("settings.list", params: [:]) }
            let fresh = try await server.client()
            _ = try await Self.within(30) { try await fresh.call("system.ping") }
            await fresh.close()
            let (newTenant, _) = try await Self.within(30) { try await server.tenantClient(label: "during") }
            _ = try await Self.within(30) { try await newTenant.call("settings.list", params: [:]) }
            await newTenant.close()
            let status = try await Self.within(30) { try await Self.rawPost("not an envelope", port: server.didcommPort) }
            #expect(status?.hasPrefix("HTTP/1.1 4") == true, "\(status ?? "nil")")

            // Every slow socket is closed by its deadline, trickling or not.
            let closed = try await Self.within(60) {
                await withTaskGroup(of: Bool.self) { group in
                    for client in trickled { group.addTask { await client.waitForClose(timeout: .seconds(55)) } }
                    return await group.reduce(0) { $0 + ($1 ? 1 : 0) }
                }
            }
            #expect(closed == 2 * count)
            for client in slow { await client.close() }
            _ = try await Self.within(30) { try await tenant.call("settings.list", params: [:]) }
        }
    }

    @Test func httpConnectionCapAndDeadlines() async throws {
        try await LiveServer.with(server: { $0.didcomm.limits.maxConnections = 3 }) { server in
            // Three connections, each admitted (one request answered) and then idle, kept alive.
            let request = "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\n\r\nabc"
            var idle: [RawLineClient] = []
            for _ in 0..<3 {
                let client = try await RawLineClient.connect(port: server.didcommPort)
                try await client.send(request)
                let answer = try await Self.within(30) { try await Self.readResponse(client) }
                #expect(answer.headers.contains("connection: keep-alive"), "\(answer)")
                idle.append(client)
            }
            // A fourth is over the cap: closed with its request unanswered.
            let extra = try await RawLineClient.connect(port: server.didcommPort)
            try? await extra.send(request)
            #expect(try await Self.within(30) { try await extra.readLine() } == nil)
            await extra.close()
            for client in idle { await client.close() }
            // The server frees their places once it sees them closed: a request is answered again.
            var admitted = false
            for _ in 0..<1500 where !admitted {
                let probe = try await RawLineClient.connect(port: server.didcommPort)
                try? await probe.send("POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\nConnection: close\r\n\r\nabc")
                admitted = try await Self.within(30) { try? await probe.readLine() } != nil
                await probe.close()
                if !admitted { try await Task.sleep(for: .milliseconds(20)) }
            }
            #expect(admitted, "the closed connections' places were never freed")
        }
        // A body slower than the request deadline: 503 (retry later), then closed. (A server of
        // its own: with a 1 s deadline, the requests above could meet it on a loaded machine.)
        try await LiveServer.with(server: {
            $0.didcomm.limits.bodyTimeout = .seconds(10)
            $0.didcomm.limits.requestTimeout = .seconds(1)
        }) { server in
            let slowBody = try await RawLineClient.connect(port: server.didcommPort)
            try await slowBody.send("POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n0123456789")
            let status = try await Self.within(30) { try await slowBody.readLine() }
            #expect(status?.hasPrefix("HTTP/1.1 503") == true, "\(status ?? "nil")")
            #expect(try await Self.within(30) { await slowBody.waitForClose(timeout: .seconds(29)) })
            await slowBody.close()
        }
    }

    @Test func keepAliveIsLimited() async throws {
        let request = "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\n\r\nabc"
        try await LiveServer.with(server: { $0.didcomm.limits.maxRequestsPerConnection = 2 }) { server in
            let client = try await RawLineClient.connect(port: server.didcommPort)
            try await client.send(request)
            let first = try await Self.within(30) { try await Self.readResponse(client) }
            #expect(first.status.hasPrefix("HTTP/1.1 4") && first.headers.contains("connection: keep-alive"), "\(first)")
            try await client.send(request)
            let second = try await Self.within(30) { try await Self.readResponse(client) }
            #expect(second.status.hasPrefix("HTTP/1.1 4") && second.headers.contains("connection: close"), "\(second)")
            #expect(try await Self.within(30) { await client.waitForClose(timeout: .seconds(29)) })
            await client.close()
        }
        // Idle past the keep-alive timeout: closed.
        try await LiveServer.with(server: { $0.didcomm.limits.keepAliveTimeout = .seconds(1) }) { server in
            let idle = try await RawLineClient.connect(port: server.didcommPort)
            try await idle.send(request)
            _ = try await Self.within(30) { try await Self.readResponse(idle) }
            #expect(try await Self.within(30) { await idle.waitForClose(timeout: .seconds(29)) })
            await idle.close()
        }
    }

    static func linesUntilClose(_ client: RawLineClient) async throws -> [String] {
        var lines: [String] = []
        while let line = try await client.readLine() { lines.append(line) }
        return lines
    }

    static func readResponse(_ client: RawLineClient) async throws -> (status: String, headers: [String]) {
        let status = try await client.readLine() ?? ""
        var headers: [String] = []
        while let line = try await client.readLine(), line != "\r", !line.isEmpty {
            headers.append(line.lowercased().trimmingCharacters(in: .whitespacesAndNewlines))
        }
        return (status, headers)
    }

    @Test func unauthenticatedSessionsHaveTheirOwnCap() async throws {
        try await LiveServer.with(rpc: { $0.maxUnauthenticatedSessions = 3 }) { server in
            var anonymous: [RawLineClient] = []
            for _ in 0..<3 {
                let client = try await RawLineClient.connect(port: server.port)
                try await client.send(Self.ping)
                #expect(try await Self.within(30) { try await client.readLine() }?.contains(#""result""#) == true)
                anonymous.append(client)
            }
            let fourth = try await RawLineClient.connect(port: server.port)
            let refusal = try await Self.within(30) { try await fourth.readLine() }
            #expect(refusal?.contains(#""busy""#) == true, "\(refusal ?? "nil")")
            await fourth.close()

            // One of them authenticates: it no longer holds an anonymous place.
            let first = anonymous[0]
            try await first.send(
                #"{"jsonrpc":"2.0","id":2,"method":"session.authenticate","params":{"token":"\#(server.adminToken)"}}"# + "\n")
            #expect(try await Self.within(30) { try await first.readLine() }?.contains(#""role":"admin""#) == true)
            let fifth = try await RawLineClient.connect(port: server.port)
            try await fifth.send(Self.ping)
            #expect(try await Self.within(30) { try await fifth.readLine() }?.contains(#""result""#) == true)
            for client in anonymous + [fifth] { await client.close() }
        }
    }

    @Test func unauthenticatedSessionsMustAuthenticateInTime() async throws {
        // (That an authenticated session outlives the deadline: the slowloris test's tenant.)
        try await LiveServer.with(rpc: { $0.authTimeoutSeconds = 1 }) { server in
            let client = try await RawLineClient.connect(port: server.port)
            try? await client.send(Self.ping)
            // Told why, then closed, whatever it sent meanwhile.
            let lines = try await Self.within(30) { try await Self.linesUntilClose(client) }
            #expect(lines.contains { $0.contains(#""unauthenticated""#) }, "\(lines)")
            await client.close()
        }
    }

    @Test func blankLinesDoNotKeepASessionAlive() async throws {
        // Only the idle timeout can close this session within the wait: it authenticates, and
        // the authentication deadline is LiveServer's (minutes).
        try await LiveServer.with(rpc: { $0.idleTimeoutSeconds = 2 }) { server in
            let client = try await RawLineClient.connect(port: server.port)
            try await client.send(
                #"{"jsonrpc":"2.0","id":1,"method":"session.authenticate","params":{"token":"\#(server.adminToken)"}}"# + "\n")
            let feeder = Task {
                while !Task.isCancelled {
                    try? await client.send("\n  \n")
                    try? await Task.sleep(for: .milliseconds(100))
                }
            }
            #expect(try await Self.within(60) { await client.waitForClose(timeout: .seconds(59)) })
            feeder.cancel()
            await client.close()
        }
    }
}
