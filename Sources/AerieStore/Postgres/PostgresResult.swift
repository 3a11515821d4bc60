import CLibPQ
import Foundation

/// A query result, read in place from libpq's buffer (text format) and freed with the object.
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

    package func isNull(_ row: Int, _ column: Int) -> Bool {
        PQgetisnull(handle, Int32(row), Int32(column)) != 0
    }

    package func string(_ row: Int, _ column: Int) -> String? {
        if isNull(row, column) { return nil }
        return String(cString: PQgetvalue(handle, Int32(row), Int32(column)))
    }

    package func int(_ row: Int, _ column: Int) -> Int? {
        string(row, column).flatMap { Int($0) }
    }

    package func bool(_ row: Int, _ column: Int) -> Bool? {
        string(row, column).map { $0 == "t" }
    }

    /// A `bytea` column, decoded from the server's `\x` hex text output by libpq's own decoder
    /// (a sealed column is hundreds of hex digits per row; listings decode one per row).
    package func bytes(_ row: Int, _ column: Int) -> [UInt8]? {
        if isNull(row, column) { return nil }
        guard let raw = PQgetvalue(handle, Int32(row), Int32(column)) else { return nil }
        var length = 0
        guard let decoded = raw.withMemoryRebound(to: UInt8.self, capacity: 1, { PQunescapeBytea($0, &length) }) else {
            return nil
        }
        defer { PQfreemem(decoded) }
        return Array(UnsafeBufferPointer(start: decoded, count: length))
    }

    /// A `uuid` column in its canonical text form, parsed in place (Foundation's
    /// `UUID(uuidString:)` goes through `sscanf`, which showed in listings of many rows).
    package func uuid(_ row: Int, _ column: Int) -> UUID? {
        if isNull(row, column) { return nil }
        let length = Int(PQgetlength(handle, Int32(row), Int32(column)))
        guard length == 36, let raw = PQgetvalue(handle, Int32(row), Int32(column)) else { return nil }
        return raw.withMemoryRebound(to: UInt8.self, capacity: length) { pointer in
            UUIDText.parse(UnsafeBufferPointer(start: pointer, count: length))
        }
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

/// Parses a UUID's canonical text form (`8-4-4-4-12` hex digits, either case).
enum UUIDText {
    static func parse(_ text: UnsafeBufferPointer<UInt8>) -> UUID? {
        guard text.count == 36, text[8] == UInt8(ascii: "-"), text[13] == UInt8(ascii: "-"),
            text[18] == UInt8(ascii: "-"), text[23] == UInt8(ascii: "-")
        else { return nil }
        var bytes = [UInt8](repeating: 0, count: 16)
        var position = 0
        var index = 0
        while position < 16 {
            if index == 8 || index == 13 || index == 18 || index == 23 { index += 1 }
            let high = nibble(text[index]), low = nibble(text[index + 1])
            guard high | low < 16 else { return nil }
            bytes[position] = high << 4 | low
            position += 1
            index += 2
        }
        return UUID(uuid: (
            bytes[0], bytes[1], bytes[2], bytes[3], bytes[4], bytes[5], bytes[6], bytes[7],
            bytes[8], bytes[9], bytes[10], bytes[11], bytes[12], bytes[13], bytes[14], bytes[15]))
    }

    /// The value of a hex digit, or 0xFF.
    @inline(__always)
    static func nibble(_ c: UInt8) -> UInt8 {
        switch c {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): c &- UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): c &- UInt8(ascii: "a") &+ 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): c &- UInt8(ascii: "A") &+ 10
        default: 0xFF
        }
    }
}
