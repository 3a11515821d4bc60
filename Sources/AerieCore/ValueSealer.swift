/// Seals a tenant's stored values and hashes its lookup keys, under keys derived from the
/// tenant's data key (AerieCrypto's `DataSealer`).
///
/// A sealed value is bound to (tenant, table, column, row): the same bytes copied to another
/// row, column or tenant do not open. A lookup hash is a keyed hash, so equality searches work
/// on a column that holds no clear text and equal values of two tenants hash differently.
/// AerieCore names no key type; the store gets one of these per transaction from the context's
/// keyring (`TenantDataKey.sealer(for:)`).
public protocol ValueSealer: Sendable {
    var tenantID: TenantID { get }
    /// `plaintext` sealed for `table`.`column` of the row `row`.
    func seal(_ plaintext: [UInt8], table: String, column: String, row: String) -> [UInt8]
    /// Opens what `seal` made for the same place; throws `internal_error` (naming the place) for
    /// a value sealed elsewhere, by another tenant, or altered.
    func open(_ sealed: [UInt8], table: String, column: String, row: String) throws -> [UInt8]
    /// A keyed hash of `value` for equality lookups in `table`.`column` (32 bytes).
    func lookupHash(_ value: String, table: String, column: String) -> [UInt8]
}
