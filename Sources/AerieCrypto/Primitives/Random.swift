import CSodium

/// Cryptographically secure random bytes from libsodium (`randombytes_buf`).
public enum Random {
    public static func bytes(_ count: Int) -> [UInt8] {
        precondition(count >= 0, "negative byte count")
        Sodium.ensureReady()
        return [UInt8](unsafeUninitializedCapacity: count) { buffer, initialized in
            if count > 0 { randombytes_buf(buffer.baseAddress!, count) }
            initialized = count
        }
    }

    /// Fills `buffer` in place; used for secrets so no intermediate array is left behind.
    static func fill(_ buffer: UnsafeMutableRawBufferPointer) {
        Sodium.ensureReady()
        if let base = buffer.baseAddress, buffer.count > 0 { randombytes_buf(base, buffer.count) }
    }
}
