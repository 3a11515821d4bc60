/// Where one tenant table keeps values sealed under the tenant's data key, and the keyed lookup
/// hashes made from them: everything that must be rewritten when the tenant's data key or id
/// changes (a tenant import seals every row it writes anew, `TenantRowResealer`). The store
/// declares its own tables (`SealedTable.core`, AerieStore), each plugin its own
/// (`PluginStorage.sealedTables`); a test holds the declarations against the catalog, so a bytea
/// column nobody declared is found before it is carried under the old key.
public struct SealedTable: Sendable, Hashable {
    /// One stored column of sealed bytes.
    public struct Value: Sendable, Hashable {
        /// The column holding the sealed bytes.
        public var stored: String
        /// How they are sealed: a `ValueSealer` value for a column name (`RowSealing`), or a
        /// private key (`DataKey.seal`, bound to the tenant and the row's verkey).
        public var sealing: Sealing

        public init(_ stored: String, sealedAs sealing: Sealing) {
            self.stored = stored
            self.sealing = sealing
        }
    }

    public enum Sealing: Sendable, Hashable {
        case value(column: String)
        case privateKey
    }

    /// One stored keyed hash (`ValueSealer.lookupHash`) of a field of the row's `sealed` object.
    public struct LookupHash: Sendable, Hashable {
        /// The column holding the hash (bytea), or the hashes (text[] of hex, one per element of
        /// an array field).
        public var stored: String
        /// The column name the hash is keyed for.
        public var hashedAs: String
        /// The field of the row's sealed object (`RowSealing.column`) it hashes.
        public var field: String

        public init(_ stored: String, hashedAs: String, field: String) {
            self.stored = stored
            self.hashedAs = hashedAs
            self.field = field
        }
    }

    public var table: String
    /// The column whose text names the row in a sealed value's associated data.
    public var rowColumn: String
    public var values: [Value]
    public var hashes: [LookupHash]

    public init(_ table: String, row rowColumn: String, values: [Value], hashes: [LookupHash] = []) {
        self.table = table
        self.rowColumn = rowColumn
        self.values = values
        self.hashes = hashes
    }

    /// The table's one `sealed` object column (`RowSealing`).
    public static let sealedObject = Value(RowSealing.column, sealedAs: .value(column: RowSealing.column))
}
