import AerieClient
import AerieCore
import AerieTesting
import Testing

@Suite(.timeLimit(.minutes(10))) struct GracefulShutdownTests {
    @Test func inFlightCallsFinishAndNewSessionsAreRefused() async throws {
        let server = try await LiveServer.start(extraPlugins: [ProbePlugin()])
        let raw = try await RawLineClient.connect(port: server.port)
        try await raw.send(
            #"{"jsonrpc":"2.0","id":1,"method":"probe.sleep","params":{"milliseconds":800,"tag":42}}"# + "\n"
                + #"{"jsonrpc":"2.0","id":2,"method":"system.ping"}"# + "\n")
        // The ping's answer means the line before it was read and its call started (even on a
        // loaded machine, where a fixed sleep was not enough).
        let ping = try JSONValue(parsing: try #require(await raw.readLine()))
        #expect(ping["id"] == 2)

        async let stopped: Void = server.stop()
        let reply = try JSONValue(parsing: try #require(await raw.readLine()))
        #expect(reply["result"] == 42, "the running call must finish and be answered")
        try await stopped
        #expect(await raw.waitForClose())
        await #expect(throws: (any Error).self) {
            let late = try await AerieClient.connect(host: "127.0.0.1", port: server.port)
            _ = try await late.call("system.ping")
        }
    }
}
