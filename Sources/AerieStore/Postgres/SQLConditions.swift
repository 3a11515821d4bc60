import AerieCore

/// A `WHERE` clause made only of the conditions that apply, numbering their parameters.
///
/// Keyset pages and optional filters are written with it instead of `$n IS NULL OR col > $n`:
/// in a generic plan such a condition is no index bound, so every page scanned all the rows before
/// its cursor. Each combination of conditions present is a statement of its own (the pool
/// prepares each once), and each is an index probe at the cursor.
struct SQLConditions {
    private(set) var parameters: [SQLValue]
    private var conditions: [String] = []

    /// `parameters` are those the statement numbers first (`$1`...), before any condition's.
    init(parameters: [SQLValue] = []) {
        self.parameters = parameters
    }

    /// A condition with no parameter of its own (it may use the leading ones).
    mutating func add(_ condition: String) {
        conditions.append(condition)
    }

    /// The condition `condition(placeholder)` with `value` as its parameter; nothing when `value`
    /// is nil.
    mutating func add(_ value: SQLValue?, _ condition: (String) -> String) {
        guard let value else { return }
        parameters.append(value)
        conditions.append(condition("$\(parameters.count)"))
    }

    /// A further parameter that is no condition (a `LIMIT`); returns its placeholder.
    mutating func parameter(_ value: SQLValue) -> String {
        parameters.append(value)
        return "$\(parameters.count)"
    }

    /// `WHERE ...`, or nothing when no condition applies.
    var whereClause: String {
        conditions.isEmpty ? "" : "WHERE " + conditions.joined(separator: " AND ")
    }
}
