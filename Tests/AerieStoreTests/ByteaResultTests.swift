import AerieCore
import AerieStore
import AerieTesting
import Testing

/// `PostgresResult.bytes` decodes a `bytea` column from a real server's output: the hex form
/// (the default) by its own decoder, the escape form through libpq, NULL as nil.
@Suite(.timeLimit(.minutes(10))) struct ByteaResultTests {
    static let allBytes = "SELECT decode(string_agg(lpad(to_hex(i), 2, '0'), '' ORDER BY i), 'hex') FROM generate_series(0, 255) i"

    @Test(arguments: ["hex", "escape"]) func everyByteValueRoundTrips(output: String) async throws {
        let connection = try PostgresConnection(
            conninfo: try await TestPostgres.shared.superuserConninfo(), settings: [("bytea_output", output)])
        defer { connection.close() }
        #expect(try connection.query(Self.allBytes).bytes(0, 0) == (0...255).map { UInt8($0) })
        #expect(try connection.query("SELECT ''::bytea").bytes(0, 0) == [])
        #expect(try connection.query("SELECT NULL::bytea").bytes(0, 0) == nil)
        let long = [UInt8](repeating: 0xAB, count: 70_000) + [0, 0x0F, 0xF0]
        #expect(try connection.query("SELECT $1::bytea", [.bytes(long)]).bytes(0, 0) == long)
    }
}
