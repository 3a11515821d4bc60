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
        // Far above the 0.6 s of deadlines, far below a hang: a loaded CI box took 4-5 s once.
        #expect(ContinuousClock.now - started < .seconds(30))
    }

    @Test func aCallThatIsNeverAnsweredEndsTheBodyAtItsTimeLimit() async throws {
        let callEnded = Mutex<Duration?>(nil)
        await #expect(throws: LiveServer.TimeLimitExceeded.self) {
            try await LiveServer.with(extraPlugins: [ProbePlugin()], timeLimit: .seconds(1)) { server in
                let started = ContinuousClock.now
                let client = try await server.client()
                defer { callEnded.withLock { $0 = ContinuousClock.now - started } }
                _ = try await client.call("probe.sleep", params: ["milliseconds": 30_000])
            }
        }
        let ended = try #require(callEnded.withLock { $0 })
        // The answer would come after 30 s; the time limit closes the session after 1 s. The
        // bound sits between them, far from both (4 s failed once at load 20).
        #expect(ended < .seconds(15), "the call ended when its session was closed, not when it was answered: \(ended)")
    }
}
