extension MasterKey {
    /// Master-key rotation for one tenant: unwraps `wrapped` with this key and wraps the same
    /// data key under `newKey`, checking the result opens under `newKey` before returning it.
    /// The data key itself never leaves AerieCrypto.
    public func rewrap(_ wrapped: [UInt8], tenantID: String, to newKey: MasterKey) throws -> [UInt8] {
        let dataKey = try unwrap(wrapped, tenantID: tenantID)
        let rewrapped = newKey.wrap(dataKey, tenantID: tenantID)
        let check = try newKey.unwrap(rewrapped, tenantID: tenantID)
        guard check.secret.isEqual(to: dataKey.secret) else {
            throw CryptoError(.decryptionFailed, "rewrapped data key does not round-trip", details: tenantID)
        }
        return rewrapped
    }

    /// Whether `wrapped` is a data key this key wraps and can open for `tenantID`.
    public func opens(_ wrapped: [UInt8], tenantID: String) -> Bool {
        (try? unwrap(wrapped, tenantID: tenantID)) != nil
    }
}
