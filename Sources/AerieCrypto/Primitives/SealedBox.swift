import CSodium

/// libsodium `crypto_box_seal`: anonymous encryption to a public key (ephemeral sender).
public enum SealedBox {
    public static let overheadByteCount = 48  // ephemeral public key + MAC

    public static func seal(_ message: [UInt8], to recipientPublicKey: [UInt8]) throws -> [UInt8] {
        try message.withUnsafeBytes { m throws in try seal(m, to: recipientPublicKey) }
    }

    package static func seal(_ message: UnsafeRawBufferPointer, to recipientPublicKey: [UInt8]) throws -> [UInt8] {
        guard recipientPublicKey.count == X25519KeyPair.byteCount else {
            throw CryptoError(.invalidKey, "X25519 public key must be 32 bytes")
        }
        Sodium.ensureReady()
        var rc: Int32 = 0
        let out = [UInt8](unsafeUninitializedCapacity: message.count + overheadByteCount) { c, initialized in
            rc = recipientPublicKey.withUnsafeBytes { pk in
                crypto_box_seal(u8m(c), u8(message), UInt64(message.count), u8(pk))
            }
            initialized = message.count + overheadByteCount
        }
        guard rc == 0 else { throw CryptoError(.invalidKey, "crypto_box_seal rejected the recipient key") }
        return out
    }

    /// Opens a sealed box addressed to `recipient`.
    public static func open(_ sealed: [UInt8], with recipient: X25519KeyPair) throws -> SecretBytes {
        guard sealed.count >= overheadByteCount else { throw CryptoError(.decryptionFailed, "sealed box too short") }
        Sodium.ensureReady()
        var rc: Int32 = 0
        let out = SecretBytes(count: sealed.count - overheadByteCount) { m in
            rc = sealed.withUnsafeBytes { c in
                recipient.publicKey.withUnsafeBytes { pk in
                    recipient.secret.withUnsafeBytes { sk in
                        crypto_box_seal_open(u8m(m), u8(c), UInt64(c.count), u8(pk), u8(sk))
                    }
                }
            }
        }
        guard rc == 0 else { throw CryptoError(.decryptionFailed, "sealed box authentication failed") }
        return out
    }
}
