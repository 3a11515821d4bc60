import AerieClient
import AerieCore
import AerieTesting
import Testing

/// The public client library against a live server: typed calls, batches, errors.
@Suite(.timeLimit(.minutes(10))) struct AerieClientTests {
    struct SetParams: Codable { var key: String; var value: JSONValue }
    struct Setting: Codable, Equatable { var key: String; var value: JSONValue }

    /// A cancelled call ends its wait with `CancellationError` whether or not the server ever
    /// answers (its late answer is dropped), and the session goes on serving other calls.
    @Test func aCancelledCallEndsItsWaitAndTheSessionGoesOn() async throws {
        try await LiveServer.with(extraPlugins: [ProbePlugin()]) { server in
            let client = try await server.client()
            let call = Task { try await client.call("probe.sleep", params: ["milliseconds": 3_000, "tag": 7]) }
            try await Task.sleep(for: .milliseconds(100))
            call.cancel()
            await #expect(throws: CancellationError.self) { try await call.value }
            #expect(try await client.call("probe.sleep", params: ["milliseconds": 0, "tag": 8]) == 8)
            // Cancelled before it is sent: it fails the same way.
            let early = Task {
                withUnsafeCurrentTask { $0?.cancel() }
                return try await client.call("probe.sleep", params: ["milliseconds": 0, "tag": 9])
            }
            await #expect(throws: CancellationError.self) { try await early.value }
            #expect(try await client.call("system.ping") != .null)
            await client.close()
        }
    }

    /// A server that accepts the event stream's connection and never answers does not hold the
    /// stream forever: each session is given up after `setupTimeout` and another is tried.
    @Test func theEventStreamGivesUpASilentServerAndTriesAgain() async throws {
        let silent = try await LoopbackListener.start(closingAccepted: false)
        defer { Task { await silent.stop() } }
        let follower = Task {
            for try await _ in AerieEventStream.follow(
                host: "127.0.0.1", port: silent.port, token: "aerie_b_x", after: 0,
                reconnectDelay: .milliseconds(50), setupTimeout: .milliseconds(300))
            {}
        }
        defer { follower.cancel() }
        for _ in 0..<600 where silent.connections < 3 { try await Task.sleep(for: .milliseconds(50)) }
        #expect(silent.connections >= 3, "the stream waited on its first silent session")
    }

    @Test func codableCallsAndBatches() async throws {
        try await LiveServer.with { server in
            let (client, _) = try await server.tenantClient(label: "client")
            defer { Task { await client.close() } }
            let stored: Setting = try await client.call("settings.set", params: SetParams(key: "colour", value: "blue"))
            #expect(stored == Setting(key: "colour", value: "blue"))

            let results = try await client.batch([
                ("settings.get", ["key": "colour"]),
                ("settings.get", ["key": "missing"]),
                ("system.ping", nil),
            ])
            #expect(results.count == 3)
            #expect(try results[0].get()["value"] == "blue")
            if case .failure(let error) = results[1] {
                #expect(error.stableCode == "not_found")
                #expect(error.code == -32004)
            } else {
                Issue.record("expected not_found")
            }
            #expect(try results[2].get() == "pong")
        }
    }

    @Test func connectionFailureIsAClearError() async throws {
        await #expect {
            _ = try await AerieClient.connect(host: "127.0.0.1", port: 1)
        } throws: { error in
            (error as? AerieClientError)?.stableCode == "connection"
        }
    }
}
