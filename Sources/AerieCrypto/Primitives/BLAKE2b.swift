import CSodium

/// BLAKE2b (libsodium `crypto_generichash`), for token hashes and key fingerprints.
public enum BLAKE2b {
    /// `outputCount` in 16...64; `key` (optional, 16...64 bytes) makes it a MAC / domain-separated hash.
    public static func hash(_ input: UnsafeRawBufferPointer, outputCount: Int = 32, key: UnsafeRawBufferPointer? = nil)
        -> [UInt8]
    {
        precondition((16...64).contains(outputCount), "BLAKE2b output must be 16...64 bytes")
        Sodium.ensureReady()
        return [UInt8](unsafeUninitializedCapacity: outputCount) { out, initialized in
            let rc = crypto_generichash(
                u8m(out), outputCount,
                u8(input), UInt64(input.count),
                key?.baseAddress?.assumingMemoryBound(to: UInt8.self), key?.count ?? 0)
            precondition(rc == 0, "crypto_generichash failed")
            initialized = outputCount
        }
    }

    public static func hash(_ input: [UInt8], outputCount: Int = 32) -> [UInt8] {
        input.withUnsafeBytes { hash($0, outputCount: outputCount) }
    }
}
