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

    /// A `bytea` column, decoded from the server's `\x` hex text output.
    package func bytes(_ row: Int, _ column: Int) -> [UInt8]? {
        if isNull(row, column) { return nil }
        let length = Int(PQgetlength(handle, Int32(row), Int32(column)))
        guard let raw = PQgetvalue(handle, Int32(row), Int32(column)) else { return nil }
        return raw.withMemoryRebound(to: UInt8.self, capacity: length) { pointer in
            ByteaText.decode(UnsafeBufferPointer(start: pointer, count: length))
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

/// Decodes PostgreSQL's hex `bytea` output (`\x0a1b...`).
enum ByteaText {
    static func decode(_ text: UnsafeBufferPointer<UInt8>) -> [UInt8]? {
        guard text.count >= 2, text[0] == UInt8(ascii: "\\"), text[1] == UInt8(ascii: "x"),
            text.count % 2 == 0
        else { return nil }
        var bytes = [UInt8]()
        bytes.reserveCapacity((text.count - 2) / 2)
        var index = 2
        while index < text.count {
            guard let high = nibble(text[index]), let low = nibble(text[index + 1]) else { return nil }
            bytes.append(high << 4 | low)
            index += 2
        }
        return bytes
    }

    private static func nibble(_ c: UInt8) -> UInt8? {
        switch c {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): c - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): c - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): c - UInt8(ascii: "A") + 10
        default: nil
        }
    }
}
