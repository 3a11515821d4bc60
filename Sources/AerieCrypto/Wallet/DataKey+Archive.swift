extension DataKey {
    /// The key's bytes, for the sealed body of a tenant archive only (`TenantArchiveWriter`):
    /// the caller wipes them (`SecretBytes.wipe`) once written.
    package func archivedBytes() -> [UInt8] { secret.withUnsafeBytes { Array($0) } }

    /// The data key a tenant archive carried.
    package static func archived(_ bytes: [UInt8]) throws -> DataKey {
        guard bytes.count == byteCount else { throw CryptoError(.invalidKey, "a data key must be \(byteCount) bytes") }
        return DataKey(secret: SecretBytes(bytes))
    }
}

extension DataKey {
    /// A private key `old` sealed for (`oldTenantID`, `verkey`), sealed again by this key for
    /// (`tenantID`, `verkey`), never leaving locked memory in between: an imported tenant's keys
    /// under its new data key. `decryption_failed` when `old` does not open it.
    package func reseal(_ sealed: [UInt8], from old: DataKey, oldTenantID: String, tenantID: String, verkey: [UInt8]) throws -> [UInt8] {
        let secret = try old.open(sealed: sealed, tenantID: oldTenantID, verkey: verkey)
        return secret.withUnsafeBytes { seal($0, tenantID: tenantID, verkey: verkey) }
    }
}
