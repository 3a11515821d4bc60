import CSodium

extension X25519KeyPair {
    /// The key pair of a 32-byte X25519 secret key (its public key computed), e.g. the key a
    /// tenant archive was sealed to, read from the operator's file.
    public init(secretKey: [UInt8]) throws {
        guard secretKey.count == Self.byteCount else { throw CryptoError(.invalidKey, "an X25519 secret key must be 32 bytes") }
        Sodium.ensureReady()
        var publicKey = [UInt8](repeating: 0, count: Self.byteCount)
        let rc = secretKey.withUnsafeBytes { sk in publicKey.withUnsafeMutableBytes { crypto_scalarmult_base(u8m($0), u8(sk)) } }
        guard rc == 0 else { throw CryptoError(.invalidKey, "not an X25519 secret key") }
        self.init(publicKey: publicKey, secret: SecretBytes(secretKey))
    }

    /// The secret key's bytes, for writing it to the operator's file once.
    public var secretKeyBytes: [UInt8] { secret.withUnsafeBytes { Array($0) } }
}
