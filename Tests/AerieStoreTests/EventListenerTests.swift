import AerieStore
import AerieTesting
import Foundation
import Logging
import Synchronization
import Testing

/// `PostgresEventListener` waits for notifications without a timeout (no polls while idle):
/// a notification after a long quiet spell still arrives, a killed LISTEN backend is noticed
/// and replaced, and `stop()` ends the wait and closes the connection.
@Suite(.timeLimit(.minutes(10))) struct EventListenerTests {
    /// A channel of this test's own (letters only), so parallel tests never hear each other.
    static func channel() -> String {
        "aerie_test_" + String(UUID().uuidString.lowercased().filter(\.isLetter).prefix(12))
    }

    @Test func hearsAfterQuietSpellsSurvivesAKilledBackendAndStops() async throws {
        let conninfo = try await TestPostgres.shared.superuserConninfo()
        let channel = Self.channel()
        let heard = Mutex<[String]>([])
        let changes = Mutex<[Bool]>([])
        let listener = PostgresEventListener(
            conninfo: conninfo, channel: channel, logger: Logger(label: "test"),
            listeningChanged: { listening in changes.withLock { $0.append(listening) } }
        ) { payload in heard.withLock { $0.append(payload) } }
        listener.start()
        var stopped = false
        defer { if !stopped { listener.stop() } }
        let control = try PostgresConnection(conninfo: conninfo)
        defer { control.close() }
        func waitUntil(_ condition: () throws -> Bool) async throws {
            for _ in 0..<1_500 where !(try condition()) { try await Task.sleep(for: .milliseconds(20)) }
        }
        func backends() throws -> Int {
            try control.query("SELECT count(*) FROM pg_stat_activity WHERE query = $1", [.text("LISTEN \(channel)")]).int(0, 0) ?? -1
        }
        try await waitUntil { listener.isListening }
        try #require(listener.isListening)

        // Quiet for longer than the former poll interval, then one notification, then another at once.
        try await Task.sleep(for: .seconds(1))
        try control.query("SELECT pg_notify($1, 'first')", [.text(channel)])
        try control.query("SELECT pg_notify($1, 'second')", [.text(channel)])
        try await waitUntil { heard.withLock { $0.count } >= 2 }
        #expect(heard.withLock { $0 } == ["first", "second"])

        // Its backend killed: the wait returns, the loss is reported, a new LISTEN is made.
        try await waitUntil { try backends() == 1 }
        try control.query(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE query = $1", [.text("LISTEN \(channel)")])
        try await waitUntil { changes.withLock { $0 } == [true, false, true] && listener.isListening }
        #expect(changes.withLock { $0 } == [true, false, true])
        try control.query("SELECT pg_notify($1, 'third')", [.text(channel)])
        try await waitUntil { heard.withLock { $0.count } >= 3 }
        #expect(heard.withLock { $0 } == ["first", "second", "third"])

        // Stopped: the wait ends, the connection closes, nothing more is heard.
        try await waitUntil { try backends() == 1 }
        listener.stop()
        stopped = true
        try await waitUntil { try backends() == 0 && !listener.isListening }
        #expect(try backends() == 0)
        #expect(!listener.isListening)
        try control.query("SELECT pg_notify($1, 'after stop')", [.text(channel)])
        try await Task.sleep(for: .milliseconds(300))
        #expect(heard.withLock { $0 } == ["first", "second", "third"])
        // A second stop is harmless.
        listener.stop()
    }
}
