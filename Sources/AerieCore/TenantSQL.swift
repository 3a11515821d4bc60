import Foundation

/// The SQL seam plugins write their repositories against (`TenantTransaction.sql`): statements run
/// on the transaction's connection, inside its tenant transaction (inside `TenantDatabase.read`,
/// each statement is a read-only tenant transaction of its own), so row-level security confines
/// them to the tenant whatever they say. Parameters are bound (`$1`), never spliced into the text.
///
/// Like the repositories, it is synchronous and valid only inside the body that received it.
/// Errors are `AerieError`s, mapped as for the store's own statements (a unique violation is
/// `conflict`, a lost connection `unavailable`).
public protocol TenantSQL {
    /// Runs one statement and returns its rows.
    func query(_ sql: String, _ parameters: [SQLValue]) throws -> any SQLRows
    /// Runs one statement and returns how many rows it inserted, updated or deleted.
    @discardableResult
    func execute(_ sql: String, _ parameters: [SQLValue]) throws -> Int
}

/// The rows of one statement, in PostgreSQL's text format, read by (row, column) index. Only valid
/// inside the body that ran the statement: convert rows into Swift values before returning.
public protocol SQLRows {
    var rowCount: Int { get }
    /// Rows touched by INSERT/UPDATE/DELETE (0 for other commands).
    var affectedRows: Int { get }
    func isNull(_ row: Int, _ column: Int) -> Bool
    func string(_ row: Int, _ column: Int) -> String?
    func int(_ row: Int, _ column: Int) -> Int?
    /// A `bool` column (`t` / `f`).
    func bool(_ row: Int, _ column: Int) -> Bool?
    /// A `bytea` column.
    func bytes(_ row: Int, _ column: Int) -> [UInt8]?
    /// A `uuid` column.
    func uuid(_ row: Int, _ column: Int) -> UUID?
    /// A timestamp selected as integer microseconds since the epoch
    /// (`(extract(epoch FROM t) * 1000000)::int8`).
    func date(microseconds row: Int, _ column: Int) -> Date?
}
