import AerieCore
import AerieStore
import AerieTesting
import Foundation
import Testing

/// `PostgresResult` reads a statement run with `binaryResults` (every column in binary format)
/// as it reads the text form: the same values from a real server, NULL as nil, through the plain
/// round trip, the pipeline that prepares a statement on first use, and a session's transaction.
@Suite(.timeLimit(.minutes(10))) struct BinaryResultTests {
    static let row = """
        SELECT '0b2f6a3e-9c1d-4e8f-a7b6-5d4c3b2a1f0e'::uuid, '2026-11-27 06:10:11.123456+00'::timestamptz,
            '1969-12-31 23:59:59.999999+00'::timestamptz, (-2)::int2, (-70000)::int4, (-5000000000)::int8,
            9223372036854775807::int8, true, false, 'é 😀 text'::text, decode('00ff10', 'hex'), ''::bytea, NULL::text,
            NULL::uuid, NULL::bytea, NULL::int8
        """

    @Test func binaryColumnsReadAsTheirTextForms() async throws {
        let connection = try PostgresConnection(conninfo: try await TestPostgres.shared.superuserConninfo())
        defer { connection.close() }
        for _ in 0..<2 {  // prepared on the first run, executed by name on the second
            let text = try connection.query(Self.row)
            let binary = try connection.query(Self.row, binaryResults: true)
            #expect(binary.uuid(0, 0) == UUID(uuidString: "0B2F6A3E-9C1D-4E8F-A7B6-5D4C3B2A1F0E"))
            #expect(binary.uuid(0, 0) == text.uuid(0, 0))
            #expect(binary.timestampMicros(0, 1) == 1_795_759_811_123_456)
            #expect(binary.timestampMicros(0, 2) == -1)
            #expect((3...6).map { binary.int(0, $0) } == [-2, -70000, -5_000_000_000, Int.max])
            #expect((3...6).map { binary.int(0, $0) } == (3...6).map { text.int(0, $0) })
            #expect(binary.bool(0, 7) == true && binary.bool(0, 8) == false)
            #expect(binary.bool(0, 7) == text.bool(0, 7) && binary.bool(0, 8) == text.bool(0, 8))
            #expect(binary.string(0, 9) == "é 😀 text" && text.string(0, 9) == "é 😀 text")
            #expect(binary.bytes(0, 10) == [0, 0xFF, 0x10] && binary.bytes(0, 10) == text.bytes(0, 10))
            #expect(binary.bytes(0, 11) == [] && text.bytes(0, 11) == [])
            #expect(binary.string(0, 12) == nil && binary.uuid(0, 13) == nil && binary.bytes(0, 14) == nil && binary.int(0, 15) == nil)
            #expect(binary.raw(0, 12) == nil)
        }
    }

    /// A tenant transaction's first statement travels in a pipeline with BEGIN and the tenant
    /// setting, a read's with the read-only settings: only the statement's own rows are binary.
    @Test func sessionsAnswerBinaryRowsInEveryMode() async throws {
        try await StoreFixture.with { fixture in
            let tenant = try await fixture.createTenant("A").id
            let sql = "SELECT now(), current_setting('aerie.tenant_id')::uuid, 42::int4"
            let expected = UUID(uuidString: tenant.rawValue)
            let inTransaction = try await fixture.runtime.pool.transaction(tenant: tenant) { session in
                let first = try session.query(sql, binaryResults: true)
                let second = try session.query(sql, binaryResults: true)
                return [first, second].map { [$0.uuid(0, 1) == expected, $0.int(0, 2) == 42, $0.timestampMicros(0, 0) != nil] }
            }
            #expect(inTransaction == [[true, true, true], [true, true, true]])
            let read = try await fixture.runtime.pool.tenantReads(tenant: tenant) { session in
                let result = try session.query(sql, genericPlan: true, binaryResults: true)
                return [result.uuid(0, 1) == expected, result.int(0, 2) == 42]
            }
            #expect(read == [true, true])
        }
    }
}
