import AerieCore
import AerieStore
import AerieTesting
import Testing

/// A statement's parameters go to libpq from one buffer (`Parameters.with`): every kind of value,
/// in any order and number, must reach PostgreSQL unchanged, on a statement's first run (prepare
/// and execute in a pipeline) and on later ones (the prepared statement alone).
@Suite(.timeLimit(.minutes(10))) struct ParameterMarshallingTests {
    @Test func everyKindOfValueArrivesUnchanged() async throws {
        let conninfo = try await TestPostgres.shared.superuserConninfo()
        let connection = try PostgresConnection(conninfo: conninfo)
        defer { connection.close() }
        let long = String(repeating: "ä0x", count: 10_000)
        let binary = (0..<1_000).map { UInt8(truncatingIfNeeded: $0 * 7) } + [0, 0, 0]
        // ($1 text, $2 bytea, $3 text, $4 bytea): nulls, empty values, non-ASCII, long ones.
        let cases: [[SQLValue]] = [
            [.null, .bytes([]), .text(""), .null],
            [.text("é✓😀 with 'quotes' and \\ backslashes"), .null, .text(long), .bytes([0])],
            [.text(""), .bytes(binary), .null, .bytes([])],
            [.text("x"), .bytes([1, 2, 3]), .text("y"), .bytes(binary)],
        ]
        let sql = "SELECT $1::text, $2::bytea, $3::text, $4::bytea, $2::bytea IS NULL, $4::bytea IS NULL"
        for _ in 0..<2 {
            for parameters in cases {
                let result = try connection.query(sql, parameters)
                #expect(result.rowCount == 1)
                for (column, value) in parameters.enumerated() {
                    switch value {
                    case .null: #expect(result.isNull(0, column), "column \(column)")
                    case .text(let text): #expect(result.string(0, column) == text, "column \(column)")
                    case .bytes(let bytes): #expect(result.bytes(0, column) == bytes, "column \(column)")
                    }
                }
                #expect(result.bool(0, 4) == (parameters[1] == .null))
                #expect(result.bool(0, 5) == (parameters[3] == .null))
            }
        }
        // Many parameters in one statement.
        let many = (0..<200).map { SQLValue.text(String($0)) }
        let placeholders = (1...200).map { "$\($0)::int" }.joined(separator: " + ")
        #expect(try connection.query("SELECT \(placeholders)", many).string(0, 0) == String((0..<200).reduce(0, +)))
        #expect(try connection.query("SELECT \(placeholders)", many).string(0, 0) == String((0..<200).reduce(0, +)))
    }
}
