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
