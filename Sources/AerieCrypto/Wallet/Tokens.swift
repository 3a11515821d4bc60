/// API tokens: random, shown once, stored only as a BLAKE2b-256 hash.
public enum TokenHasher {
    /// Random bytes per token; DESIGN.md asks for at least 32.
    public static let tokenByteCount = 32

    /// A fresh token: `prefix` followed by 32 random bytes in unpadded base64url.
    /// The prefix (e.g. `aerie_t_`) lets secret scanners and humans recognise the token.
    public static func generate(prefix: String) -> String {
        var bytes = Random.bytes(tokenByteCount)
        defer { SecretBytes.wipe(&bytes) }
        return prefix + Base64.encodeURL(bytes)
    }

    /// BLAKE2b-256 of the token's UTF-8 (prefix included): 32 bytes, the value to store.
    /// Tokens carry 256 bits of entropy, so a fast unsalted hash is enough.
    public static func hash(_ token: String) -> [UInt8] {
        var token = token
        return token.withUTF8 { BLAKE2b.hash(UnsafeRawBufferPointer($0), outputCount: 32) }
    }

    /// Constant-time comparison of two hashes.
    public static func equal(_ a: [UInt8], _ b: [UInt8]) -> Bool { ConstantTime.equal(a, b) }

    /// The first 8 bytes (hex) of SHA-256 over a stored token hash: how a credential change event
    /// (schema/0007) names the current token without carrying anything to authenticate with.
    public static func fingerprint(ofHash hash: [UInt8]) -> String { Hex.encode(Array(SHA256.hash(hash).prefix(8))) }

    /// Lowercase hex of a hash, for storage as text.
    public static func hex(_ hash: [UInt8]) -> String { Hex.encode(hash) }
}
