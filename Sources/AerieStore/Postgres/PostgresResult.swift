import CLibPQ
import Foundation

/// A query result, read in place from libpq's buffer and freed with the object. Its columns are
/// in text format, or all in binary format for a statement run with `binaryResults`: the
/// accessors below read either (`PQfformat`); `string` reads a text-typed column in both.
///
/// Not `Sendable` on purpose: it lives on the thread that ran the query, and callers convert the
/// rows into Swift values before returning from the blocking closure.
package final class PostgresResult {
    private let handle: OpaquePointer

    init(_ handle: OpaquePointer) { self.handle = handle }
    deinit { PQclear(handle) }

    package var rowCount: Int { Int(PQntuples(handle)) }
    package var columnCount: Int { Int(PQnfields(handle)) }

    /// Rows touched by INSERT/UPDATE/DELETE (0 for other commands).
    package var affectedRows: Int {
        guard let text = PQcmdTuples(handle) else { return 0 }
        return Int(String(cString: text)) ?? 0
    }

    /// The command tag, e.g. `COMMIT` or `ROLLBACK`.
    var commandStatus: String {
        guard let text = PQcmdStatus(handle) else { return "" }
        return String(cString: text)
    }

    /// The position of the column named `name` (its `AS` name, compared case-sensitively when
    /// quoted as libpq reads it), nil when the result has none: for a statement whose columns
    /// come from more than one repository, each reads its own by name.
    package func column(named name: String) -> Int? {
        let index = Int(PQfnumber(handle, name))
        return index >= 0 ? index : nil
    }

    package func isNull(_ row: Int, _ column: Int) -> Bool {
        PQgetisnull(handle, Int32(row), Int32(column)) != 0
    }

    /// A text column (of a text-typed value in binary format: the same bytes), taken with its
    /// length from libpq rather than measured with `strlen`; invalid UTF-8 is repaired as
    /// `String(cString:)` did.
    package func string(_ row: Int, _ column: Int) -> String? {
        guard let value = raw(row, column) else { return nil }
        return String(decoding: value, as: UTF8.self)
    }

    /// The value's bytes in libpq's buffer (valid while the result lives), nil for NULL.
    package func raw(_ row: Int, _ column: Int) -> UnsafeBufferPointer<UInt8>? {
        if isNull(row, column) { return nil }
        guard let value = PQgetvalue(handle, Int32(row), Int32(column)) else { return nil }
        let length = Int(PQgetlength(handle, Int32(row), Int32(column)))
        return value.withMemoryRebound(to: UInt8.self, capacity: length) { UnsafeBufferPointer(start: $0, count: length) }
    }

    /// Whether `column` came in binary format (the statement ran with `binaryResults`).
    private func isBinary(_ column: Int) -> Bool {
        PQfformat(handle, Int32(column)) == 1
    }

    /// A binary `int2`, `int4` or `int8` (or `timestamptz`, whose binary form is an `int8`)
    /// column: 2, 4 or 8 bytes, big-endian, signed.
    private func binaryInt64(_ row: Int, _ column: Int) -> Int64? {
        guard let value = raw(row, column), [2, 4, 8].contains(value.count) else { return nil }
        let unsigned = value.reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
        let unused = UInt64(64 - 8 * value.count)
        return Int64(bitPattern: unsigned << unused) >> Int64(unused)
    }

    /// A `timestamptz` column in binary format as microseconds since 1970 (PostgreSQL sends
    /// microseconds since 2000-01-01).
    package func timestampMicros(_ row: Int, _ column: Int) -> Int64? {
        precondition(isBinary(column), "timestampMicros reads a binary timestamptz column")
        return binaryInt64(row, column).map { $0 + Self.postgresEpochMicros }
    }

    /// 2000-01-01 in microseconds since 1970.
    static let postgresEpochMicros: Int64 = 946_684_800_000_000

    package func int(_ row: Int, _ column: Int) -> Int? {
        if isBinary(column) { return binaryInt64(row, column).map { Int($0) } }
        return string(row, column).flatMap { Int($0) }
    }

    package func bool(_ row: Int, _ column: Int) -> Bool? {
        if isBinary(column) { return raw(row, column).map { $0.first == 1 } }
        return string(row, column).map { $0 == "t" }
    }

    /// A `bytea` column, decoded from the server's `\x` hex text output (a sealed column is
    /// hundreds of hex digits per row; listings decode one per row) straight into the array:
    /// libpq's `PQunescapeBytea` allocated, scanned and was copied again, 3 % of a 100-message
    /// download. Any other form (`bytea_output = escape`) still goes through libpq.
    /// In binary format the value is the bytes themselves.
    package func bytes(_ row: Int, _ column: Int) -> [UInt8]? {
        guard let value = raw(row, column) else { return nil }
        if isBinary(column) { return Array(value) }
        if value.count >= 2, value.count % 2 == 0, value[0] == UInt8(ascii: "\\"), value[1] == UInt8(ascii: "x"),
            let decoded = Self.decodeHex(UnsafeBufferPointer(rebasing: value[2...]))
        {
            return decoded
        }
        return value.baseAddress.flatMap(Self.unescape)
    }

    /// Pairs of hex digits (either case) to bytes; nil if any character is not one. One table
    /// lookup per digit over raw pointers (a first version with a range `switch` per digit and a
    /// captured flag ran at 7 % of a download, six times libpq's decoder).
    static func decodeHex(_ hex: UnsafeBufferPointer<UInt8>) -> [UInt8]? {
        let count = hex.count / 2
        guard count > 0, let digits = hex.baseAddress else { return [] }
        var bytes = [UInt8](repeating: 0, count: count)
        let valid = hexDigitValues.withUnsafeBufferPointer { table in
            bytes.withUnsafeMutableBufferPointer { out in
                var seen: UInt8 = 0
                for index in 0..<count {
                    let high = table[Int(digits[2 &* index])], low = table[Int(digits[2 &* index &+ 1])]
                    seen |= high | low
                    out[index] = high &<< 4 | low
                }
                return seen & 0xF0 == 0
            }
        }
        return valid ? bytes : nil
    }

    /// Each byte's value as a hex digit, or 0xFF.
    private static let hexDigitValues: [UInt8] = {
        var table = [UInt8](repeating: 0xFF, count: 256)
        for (value, digit) in "0123456789abcdef".utf8.enumerated() { table[Int(digit)] = UInt8(value) }
        for (value, digit) in "ABCDEF".utf8.enumerated() { table[Int(digit)] = UInt8(value + 10) }
        return table
    }()

    /// `text`: libpq's NUL-terminated value (`PQgetvalue`).
    private static func unescape(_ text: UnsafePointer<UInt8>) -> [UInt8]? {
        var length = 0
        guard let decoded = PQunescapeBytea(text, &length) else { return nil }
        defer { PQfreemem(decoded) }
        return Array(UnsafeBufferPointer(start: decoded, count: length))
    }

    /// A `uuid` column in its canonical text form, parsed in place (`UUID(text:)`), or its 16
    /// bytes in binary format.
    package func uuid(_ row: Int, _ column: Int) -> UUID? {
        if isBinary(column) {
            guard let value = raw(row, column), value.count == 16 else { return nil }
            return UUID(uuid: (
                value[0], value[1], value[2], value[3], value[4], value[5], value[6], value[7],
                value[8], value[9], value[10], value[11], value[12], value[13], value[14], value[15]))
        }
        guard let value = raw(row, column), value.count == 36 else { return nil }
        return UUID(canonicalText: value)
    }

    /// A timestamp selected as integer microseconds since the epoch
    /// (`(extract(epoch FROM t) * 1000000)::int8`), which avoids parsing date text.
    package func date(microseconds row: Int, _ column: Int) -> Date? {
        int(row, column).map { Date(timeIntervalSince1970: Double($0) / 1_000_000) }
    }

    /// Every row as optional strings, for tests and diagnostics.
    package func allRows() -> [[String?]] {
        (0..<rowCount).map { row in (0..<columnCount).map { string(row, $0) } }
    }
}
