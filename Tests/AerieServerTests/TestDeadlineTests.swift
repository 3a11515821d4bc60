import AerieClient
import AerieCore
import AerieTesting
import Foundation
import Synchronization
import Testing

/// The test support fails instead of hanging: a peer that never answers or never closes ends a
/// raw read at its deadline, and a server that keeps a call waiting ends `LiveServer.with` at its
/// time limit.
@Suite(.timeLimit(.minutes(10))) struct TestDeadlineTests {
    @Test func rawReadsEndAtTheirDeadline() async throws {
        let silent = try await LoopbackListener.start(closingAccepted: false)
        defer { Task { await silent.stop() } }
        let raw = try await RawLineClient.connect(port: silent.port)
        defer { Task { await raw.close() } }
        let started = ContinuousClock.now
        await #expect(throws: RawLineClient.Timeout.self) { try await raw.readLine(timeout: .milliseconds(300)) }
        #expect(await raw.waitForClose(timeout: .milliseconds(300)) == false)
        #expect(ContinuousClock.now - started < .seconds(5))
    }

    @Test func aCallThatIsNeverAnsweredEndsTheBodyAtItsTimeLimit() async throws {
        let callEnded = Mutex<Duration?>(nil)
        await #expect(throws: LiveServer.TimeLimitExceeded.self) {
            try await LiveServer.with(extraPlugins: [ProbePlugin()], timeLimit: .seconds(1)) { server in
                let started = ContinuousClock.now
                let client = try await server.client()
                defer { callEnded.withLock { $0 = ContinuousClock.now - started } }
                _ = try await client.call("probe.sleep", params: ["milliseconds": 5_000])
            }
        }
        let ended = try #require(callEnded.withLock { $0 })
        #expect(ended < .seconds(4), "the call ended when its session was closed, not when it was answered: \(ended)")
    }
}
