import AerieClient
import AerieCore
import AerieTesting
import Testing

/// The public client library against a live server: typed calls, batches, errors.
@Suite(.timeLimit(.minutes(10))) struct AerieClientTests {
    struct SetParams: Codable { var key: String; var value: JSONValue }
    struct Setting: Codable, Equatable { var key: String; var value: JSONValue }

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
