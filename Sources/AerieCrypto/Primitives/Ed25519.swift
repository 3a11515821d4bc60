import CSodium

/// Ed25519 verification and the public-key conversion to X25519.
public enum Ed25519 {
    public static let publicKeyByteCount = 32
    public static let signatureByteCount = 64

    /// True when `signature` is `verkey`'s signature over `message`. Wrong lengths are false.
    public static func verify(signature: [UInt8], message: [UInt8], verkey: [UInt8]) -> Bool {
        message.withUnsafeBytes { verify(signature: signature, message: $0, verkey: verkey) }
    }

    package static func verify(signature: [UInt8], message: UnsafeRawBufferPointer, verkey: [UInt8]) -> Bool {
        guard signature.count == signatureByteCount, verkey.count == publicKeyByteCount else { return false }
        Sodium.ensureReady()
        return signature.withUnsafeBytes { s in
            verkey.withUnsafeBytes { pk in
                crypto_sign_verify_detached(u8(s), u8(message), UInt64(message.count), u8(pk)) == 0
            }
        }
    }

    /// The X25519 public key of an Ed25519 verkey; `invalid_key` if it is not a valid point.
    public static func x25519PublicKey(fromVerkey verkey: [UInt8]) throws -> [UInt8] {
        guard verkey.count == publicKeyByteCount else {
            throw CryptoError(.invalidKey, "Ed25519 verkey must be 32 bytes", details: "got \(verkey.count) bytes")
        }
        Sodium.ensureReady()
        var ok = false
        let out = [UInt8](unsafeUninitializedCapacity: X25519KeyPair.byteCount) { out, initialized in
            ok = verkey.withUnsafeBytes { crypto_sign_ed25519_pk_to_curve25519(u8m(out), u8($0)) } == 0
            initialized = X25519KeyPair.byteCount
        }
        guard ok else { throw CryptoError(.invalidKey, "verkey is not a valid Ed25519 public key") }
        return out
    }
}
