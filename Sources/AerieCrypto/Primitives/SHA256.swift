import CSodium

/// SHA-256 (libsodium `crypto_hash_sha256`), where a value must match what PostgreSQL's
/// `sha256()` computes (the credential fingerprint of schema/0007).
public enum SHA256 {
    public static func hash(_ input: [UInt8]) -> [UInt8] {
        Sodium.ensureReady()
        let count = Int(crypto_hash_sha256_BYTES)
        return [UInt8](unsafeUninitializedCapacity: count) { out, initialized in
            let rc = input.withUnsafeBufferPointer { bytes in
                crypto_hash_sha256(out.baseAddress!, bytes.baseAddress, UInt64(bytes.count))
            }
            precondition(rc == 0, "crypto_hash_sha256 failed")
            initialized = count
        }
    }
}
