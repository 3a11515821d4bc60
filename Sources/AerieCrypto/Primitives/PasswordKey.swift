import CSodium

/// libsodium `crypto_pwhash` with Argon2id 1.3: a 32-byte key derived from a passphrase. The
/// parameters travel with what the key seals (a tenant archive's header), so they are checked
/// against bounds here: a header from outside must not make the reader spend a gigabyte or an hour.
public enum PasswordKey {
    public static let saltByteCount = 16
    /// The cost Aerie writes: libsodium's "moderate" (3 passes, 256 MiB), about a second.
    public static let defaultOpsLimit: UInt64 = 3
    public static let defaultMemLimit: UInt64 = 256 << 20
    /// The most a reader accepts from a header.
    public static let maxOpsLimit: UInt64 = 10
    public static let maxMemLimit: UInt64 = 1 << 30
    public static let minPassphraseByteCount = 8
    public static let maxPassphraseByteCount = 1024

    /// The key of `passphrase` under `salt` and the given cost. Throws `invalid_key` for a
    /// passphrase or parameters out of bounds (or memory libsodium could not get).
    public static func derive(
        passphrase: String, salt: [UInt8], opsLimit: UInt64 = defaultOpsLimit, memLimit: UInt64 = defaultMemLimit
    ) throws -> SecretBytes {
        let password = Array(passphrase.utf8)
        guard (minPassphraseByteCount...maxPassphraseByteCount).contains(password.count) else {
            throw CryptoError(
                .invalidKey, "a passphrase must be \(minPassphraseByteCount) to \(maxPassphraseByteCount) bytes")
        }
        guard salt.count == saltByteCount else { throw CryptoError(.invalidKey, "a salt must be \(saltByteCount) bytes") }
        guard (UInt64(crypto_pwhash_opslimit_min())...maxOpsLimit).contains(opsLimit),
            (UInt64(crypto_pwhash_memlimit_min())...maxMemLimit).contains(memLimit)
        else {
            throw CryptoError(.invalidKey, "Argon2id parameters out of bounds", details: "ops \(opsLimit), mem \(memLimit)")
        }
        Sodium.ensureReady()
        var rc: Int32 = 0
        let key = SecretBytes(count: 32) { out in
            rc = password.withUnsafeBytes { p in
                salt.withUnsafeBytes { s in
                    crypto_pwhash(
                        u8m(out), 32, p.baseAddress!.assumingMemoryBound(to: CChar.self), UInt64(p.count), u8(s),
                        opsLimit, Int(memLimit), crypto_pwhash_alg_argon2id13())
                }
            }
        }
        guard rc == 0 else { throw CryptoError(.invalidKey, "Argon2id could not run (out of memory?)") }
        return key
    }
}
