import AerieCore
import AerieCrypto
import AerieStore

/// Seals an imported tenant's rows anew: every value the archive carries sealed under the
/// exporting server's data key for the tenant's old id is opened and sealed under the tenant's
/// new data key (and new id, when it gets one), and every keyed lookup hash is made again from
/// the opened value, as the tables declare them (`SealedTable`). So the key that travelled in the
/// archive opens nothing the importing server stores. Rows are JSON objects as exported
/// (`to_jsonb`: bytea as `\x` hex text). A row still in a previous release's clear form (no
/// `sealed` object) keeps its clear columns; the importing server's sealing sweep seals them.
struct TenantRowResealer {
    let tables: [String: SealedTable]
    let oldTenant: TenantID
    let newTenant: TenantID
    private let oldKey: DataKey
    private let newKey: DataKey
    private let oldSealer: DataSealer
    private let newSealer: DataSealer

    init(tables: [SealedTable], from oldKey: DataKey, tenant oldTenant: TenantID, to newKey: DataKey, tenant newTenant: TenantID) {
        self.tables = Dictionary(tables.map { ($0.table, $0) }) { first, _ in first }
        self.oldTenant = oldTenant
        self.newTenant = newTenant
        self.oldKey = oldKey
        self.newKey = newKey
        oldSealer = DataSealer(dataKey: oldKey, tenantID: oldTenant)
        newSealer = DataSealer(dataKey: newKey, tenantID: newTenant)
    }

    /// `row` of `table` with the new tenant id, its sealed values and hashes made anew. A value
    /// that does not open under the archive's key is an `invalid_archive`.
    func reseal(_ row: [String: JSONValue], table: String) throws -> [String: JSONValue] {
        var row = row
        if row["tenant_id"] != nil { row["tenant_id"] = .string(newTenant.rawValue) }
        guard let declared = tables[table] else { return row }
        guard let rowName = row[declared.rowColumn]?.stringValue else {
            throw Self.invalid("a row of \(table) has no \(declared.rowColumn)")
        }
        var sealedObject: [UInt8]?
        defer { if sealedObject != nil { SecretBytes.wipe(&sealedObject!) } }
        for value in declared.values {
            guard case .string(let text)? = row[value.stored] else { continue }
            let sealed = try Self.bytes(text, table: table, column: value.stored)
            switch value.sealing {
            case .value(let column):
                var plain: [UInt8]
                do {
                    plain = try oldSealer.open(sealed, table: table, column: column, row: rowName)
                } catch {
                    throw Self.invalid("a sealed value of \(table).\(value.stored) does not open with the archive's key")
                }
                row[value.stored] = Self.text(newSealer.seal(plain, table: table, column: column, row: rowName))
                if value.stored == RowSealing.column { sealedObject = plain } else { SecretBytes.wipe(&plain) }
            case .privateKey:
                guard let verkey = try? Base58.decode(rowName) else { throw Self.invalid("a key of \(table) is not base58") }
                do {
                    row[value.stored] = Self.text(
                        try newKey.reseal(sealed, from: oldKey, oldTenantID: oldTenant.rawValue, tenantID: newTenant.rawValue, verkey: verkey))
                } catch {
                    throw Self.invalid("a private key of the archive does not open with the archive's key")
                }
            }
        }
        guard !declared.hashes.isEmpty, let plain = sealedObject else { return row }
        guard case .object(let fields) = try? JSONValue(parsing: plain) else {
            throw Self.invalid("a sealed object of \(table) is not a JSON object")
        }
        for hash in declared.hashes {
            switch fields[hash.field] {
            case .string(let value)?:
                row[hash.stored] = Self.text(newSealer.lookupHash(value, table: table, column: hash.hashedAs))
            case .array(let items)?:
                row[hash.stored] = .array(
                    items.compactMap(\.stringValue).map { .string(Hex.encode(newSealer.lookupHash($0, table: table, column: hash.hashedAs))) })
            default:
                // Absent (a nil the repository left out): its hash is absent too, or empty for an array.
                if case .array? = row[hash.stored] { row[hash.stored] = .array([]) } else { row[hash.stored] = .null }
            }
        }
        return row
    }

    /// The tenant's own row: its label sealed anew (the rest is replaced by the import).
    func resealTenant(_ row: [String: JSONValue]) throws -> [String: JSONValue] {
        var row = row
        row["id"] = .string(oldTenant.rawValue)
        row = try reseal(row, table: StoredTenantLabel.table)
        row["id"] = .string(newTenant.rawValue)
        return row
    }

    /// bytea as `to_jsonb` writes it: `\x` and hex.
    private static func bytes(_ text: String, table: String, column: String) throws -> [UInt8] {
        guard text.hasPrefix("\\x"), let bytes = try? Hex.decode(String(text.dropFirst(2))) else {
            throw invalid("\(table).\(column) holds no bytes")
        }
        return bytes
    }

    private static func text(_ bytes: [UInt8]) -> JSONValue { .string("\\x" + Hex.encode(bytes)) }

    private static func invalid(_ message: String) -> AerieError { AerieError(.invalidArchive, message) }
}
