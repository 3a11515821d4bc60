import AerieStore
import AerieTesting
import Testing

/// A statement the server does not answer within the connection's answer timeout ends the wait
/// with a connection failure instead of blocking its thread forever (libpq's own wait has no
/// bound); the connection is then broken, never handed out again. `pg_sleep` stands in for a
/// server that does not answer: it cannot answer before its sleep ends.
@Suite(.timeLimit(.minutes(10))) struct AnswerTimeoutTests {
    @Test(arguments: [false, true]) func anUnansweredStatementIsAConnectionFailure(prepared: Bool) async throws {
        let conninfo = try await TestPostgres.shared.superuserConninfo()
        let connection = try PostgresConnection(conninfo: conninfo, answerTimeout: .milliseconds(500))
        defer { connection.close() }
        // A statement's first run goes as a pipeline (prepare and execute); later runs execute
        // the prepared statement alone: both waits are bounded.
        if prepared { try connection.query("SELECT pg_sleep($1::float8)", [.text("0")]) }
        #expect(!connection.isBroken)
        do {
            try connection.query("SELECT pg_sleep($1::float8)", [.text("5")])
            Issue.record("a 5 s statement answered within the 0.5 s answer timeout")
        } catch {
            #expect("\(error)".contains("no answer from the database within 0.5 seconds"), "\(error)")
        }
        #expect(connection.isBroken)
        #expect(throws: (any Error).self) { try connection.query("SELECT 1") }
    }

    @Test func answersWithinTheTimeoutAreUntouched() async throws {
        let conninfo = try await TestPostgres.shared.superuserConninfo()
        let connection = try PostgresConnection(
            conninfo: conninfo, settings: [("application_name", "answer-timeout-test")], answerTimeout: .seconds(60))
        defer { connection.close() }
        for _ in 0..<3 {
            #expect(try connection.query("SELECT current_setting('application_name'), $1::int + 1", [.text("41")]).string(0, 0)
                == "answer-timeout-test")
        }
        // A failing statement still reports the server's error and leaves the connection usable.
        #expect(throws: (any Error).self) { try connection.query("SELECT * FROM no_such_table_here") }
        #expect(!connection.isBroken)
        #expect(try connection.query("SELECT $1::int + 1", [.text("1")]).string(0, 0) == "2")
    }
}
