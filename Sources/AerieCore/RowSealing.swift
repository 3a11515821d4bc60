/// How one table's repository seals its rows: the one place a repository (the store's own, or a
/// plugin's written against `TenantSQL`) turns the fields it keeps private into the row's
/// `sealed` column and back, and its lookup keys into keyed hashes. A transaction hands one out
/// per table (`TenantTransaction.rowSealing(_:)`).
///
/// Every sealed table has one `sealed bytea` column holding a JSON object of the row's private
/// fields, sealed by the transaction's `ValueSealer` for (tenant, table, `sealed`, row id). A
/// field added later goes into that object: no new column, nothing else to seal. A row whose
/// `sealed` is NULL is in the previous release's clear form (until `TenantTransaction.sealClearRows`
/// converts it); readers take both.
public struct RowSealing {
    public let tenantID: TenantID
    public let sealer: (any ValueSealer)?
    public let table: String

    public static let column = "sealed"

    public init(tenantID: TenantID, sealer: (any ValueSealer)?, table: String) {
        self.tenantID = tenantID
        self.sealer = sealer
        self.table = table
    }

    /// The private fields of row `row`, sealed. Null fields and empty lists are left out (they
    /// read back the same): every key costs when a listing opens many rows.
    public func seal(_ fields: [String: JSONValue], row: String) throws -> [UInt8] {
        let present = fields.filter { _, value in
            switch value {
            case .null: false
            case .array(let items): !items.isEmpty
            default: true
            }
        }
        return try required().seal(JSONValue.object(present).serialized(), table: table, column: Self.column, row: row)
    }

    /// The private fields of row `row`, opened.
    public func open(_ sealed: [UInt8], row: String) throws -> SealedFields {
        let plain = try required().open(sealed, table: table, column: Self.column, row: row)
        guard case .object(let fields) = try JSONValue(storedText: String(decoding: plain, as: UTF8.self)) else {
            throw AerieError.internalError(details: "the sealed value of aerie.\(table) row \(row) is not an object")
        }
        return SealedFields(table: table, fields: fields)
    }

    /// The private fields of row `row`, opened as text: for a reader that passes a large field on
    /// as JSON text (`JSONObjectText`) rather than as a tree.
    package func openText(_ sealed: [UInt8], row: String) throws -> JSONObjectText {
        let plain = try required().open(sealed, table: table, column: Self.column, row: row)
        do {
            return try JSONObjectText(plain)
        } catch {
            throw AerieError.internalError(details: "the sealed value of aerie.\(table) row \(row) is not an object: \(error)")
        }
    }

    /// One text value of row `row` sealed on its own in `column` (nil for nil): for a value read
    /// without the rest of the row (a join, a statement that does not read the row).
    public func seal(_ value: String?, column: String, row: String) throws -> [UInt8]? {
        guard let value else { return nil }
        return try required().seal(Array(value.utf8), table: table, column: column, row: row)
    }

    /// What `seal(_:column:row:)` sealed, opened.
    public func open(_ sealed: [UInt8], column: String, row: String) throws -> String {
        String(decoding: try required().open(sealed, table: table, column: column, row: row), as: UTF8.self)
    }

    /// The same sealer for another table.
    public func table(_ table: String) -> RowSealing {
        RowSealing(tenantID: tenantID, sealer: sealer, table: table)
    }

    /// The keyed hash of `value` for lookups in `column` (nil for nil).
    public func hash(_ value: String?, column: String) throws -> [UInt8]? {
        guard let value else { return nil }
        return try required().lookupHash(value, table: table, column: column)
    }

    private func required() throws -> any ValueSealer {
        guard let sealer else {
            throw AerieError.internalError(
                details: "aerie.\(table) holds sealed values and this tenant database has no data key "
                    + "(build it through TenantContext, or call sealing(with:))")
        }
        return sealer
    }
}

/// The opened private fields of one row, read by name.
public struct SealedFields {
    public let table: String
    public let fields: [String: JSONValue]

    public func string(_ name: String) -> String? {
        if case .string(let value)? = fields[name] { value } else { nil }
    }

    public func json(_ name: String) -> JSONValue? {
        switch fields[name] {
        case nil, .null?: nil
        case let value?: value
        }
    }

    public func strings(_ name: String) throws -> [String] {
        guard let value = fields[name] else { return [] }
        guard case .array(let items) = value else {
            throw AerieError.internalError(details: "sealed field \(name) of aerie.\(table) is not an array")
        }
        return try items.map { item in
            guard case .string(let string) = item else {
                throw AerieError.internalError(details: "sealed field \(name) of aerie.\(table) is not an array of strings")
            }
            return string
        }
    }
}

extension JSONValue {
    /// A string field of a sealed object: JSON null for nil.
    public static func optional(_ string: String?) -> JSONValue { string.map(JSONValue.string) ?? .null }

    /// A value the store kept as JSON text (a `jsonb` column, a sealed object); unreadable text
    /// is an `internal_error` (the database, not the caller, is at fault).
    public init(storedText text: String) throws {
        do {
            self = try JSONValue(parsing: text)
        } catch {
            throw AerieError.internalError(details: "unreadable stored JSON: \(error)")
        }
    }
}
