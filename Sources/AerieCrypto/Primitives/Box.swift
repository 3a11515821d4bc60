import CSodium

/// libsodium `crypto_box` (X25519 + XSalsa20-Poly1305), authenticated between two key pairs.
/// Output is libsodium's combined form `tag(16) || ciphertext`, as DIDComm v1 `encrypted_key` is.
public enum Box {
    public static let nonceByteCount = 24
    public static let macByteCount = 16
    /// `crypto_box_BEFORENMBYTES`.
    package static let sharedKeyByteCount = 32

    public static func seal(
        _ message: [UInt8], nonce: [UInt8], to recipientPublicKey: [UInt8], from sender: X25519KeyPair
    ) throws -> [UInt8] {
        try message.withUnsafeBytes { m throws in try seal(m, nonce: nonce, to: recipientPublicKey, fromSecret: sender.secret) }
    }

    /// Sealing needs only the sender's X25519 secret (`Ed25519KeyPair.x25519Secret`), not its public half.
    package static func seal(
        _ message: UnsafeRawBufferPointer, nonce: [UInt8], to recipientPublicKey: [UInt8], fromSecret senderSecret: SecretBytes
    ) throws -> [UInt8] {
        guard recipientPublicKey.count == X25519KeyPair.byteCount else {
            throw CryptoError(.invalidKey, "X25519 public key must be 32 bytes")
        }
        guard nonce.count == nonceByteCount else { throw CryptoError(.invalidKey, "crypto_box nonce must be 24 bytes") }
        Sodium.ensureReady()
        var rc: Int32 = 0
        let out = [UInt8](unsafeUninitializedCapacity: message.count + macByteCount) { c, initialized in
            rc = nonce.withUnsafeBytes { n in
                recipientPublicKey.withUnsafeBytes { pk in
                    senderSecret.withUnsafeBytes { sk in
                        crypto_box_easy(u8m(c), u8(message), UInt64(message.count), u8(n), u8(pk), u8(sk))
                    }
                }
            }
            initialized = message.count + macByteCount
        }
        // Fails only for a low-order public key (shared secret all zeros).
        guard rc == 0 else { throw CryptoError(.invalidKey, "crypto_box rejected the recipient key") }
        return out
    }

    /// Opens a box from `senderPublicKey`; `decryption_failed` on any mismatch.
    public static func open(
        _ sealed: [UInt8], nonce: [UInt8], from senderPublicKey: [UInt8], to recipient: X25519KeyPair
    ) throws -> SecretBytes {
        guard sealed.count >= macByteCount, nonce.count == nonceByteCount,
            senderPublicKey.count == X25519KeyPair.byteCount
        else {
            throw CryptoError(.decryptionFailed, "crypto_box input has the wrong length")
        }
        Sodium.ensureReady()
        var rc: Int32 = 0
        // Boxes carry content-encryption keys, so the plaintext goes straight into SecretBytes.
        let out = SecretBytes(count: sealed.count - macByteCount) { m in
            rc = sealed.withUnsafeBytes { c in
                nonce.withUnsafeBytes { n in
                    senderPublicKey.withUnsafeBytes { pk in
                        recipient.secret.withUnsafeBytes { sk in
                            crypto_box_open_easy(u8m(m), u8(c), UInt64(c.count), u8(n), u8(pk), u8(sk))
                        }
                    }
                }
            }
        }
        guard rc == 0 else { throw CryptoError(.decryptionFailed, "crypto_box authentication failed") }
        return out
    }

    // MARK: - With a precomputed shared key (`BoxSharedKeys`)

    /// `crypto_box_beforenm`: the shared key of `publicKey` and `secret` (the X25519
    /// multiplication `seal` and `open` do each time). Throws `invalidKey` for a low-order public key.
    package static func sharedKey(publicKey: [UInt8], secret: SecretBytes) throws -> SecretBytes {
        guard publicKey.count == X25519KeyPair.byteCount, secret.count == X25519KeyPair.byteCount else {
            throw CryptoError(.invalidKey, "X25519 keys must be 32 bytes")
        }
        Sodium.ensureReady()
        var rc: Int32 = 0
        let shared = SecretBytes(count: sharedKeyByteCount) { k in
            rc = publicKey.withUnsafeBytes { pk in
                secret.withUnsafeBytes { sk in crypto_box_beforenm(u8m(k), u8(pk), u8(sk)) }
            }
        }
        // Fails only for a low-order public key (shared secret all zeros).
        guard rc == 0 else { throw CryptoError(.invalidKey, "crypto_box rejected the public key") }
        return shared
    }

    /// `seal` with the shared key of the two key pairs (`crypto_box_easy_afternm`): the same bytes.
    package static func seal(_ message: UnsafeRawBufferPointer, nonce: [UInt8], sharedKey: SecretBytes) throws -> [UInt8] {
        guard nonce.count == nonceByteCount else { throw CryptoError(.invalidKey, "crypto_box nonce must be 24 bytes") }
        precondition(sharedKey.count == sharedKeyByteCount)
        var rc: Int32 = 0
        let out = [UInt8](unsafeUninitializedCapacity: message.count + macByteCount) { c, initialized in
            rc = nonce.withUnsafeBytes { n in
                sharedKey.withUnsafeBytes { k in
                    crypto_box_easy_afternm(u8m(c), u8(message), UInt64(message.count), u8(n), u8(k))
                }
            }
            initialized = message.count + macByteCount
        }
        guard rc == 0 else { throw CryptoError(.invalidKey, "crypto_box_easy_afternm failed") }
        return out
    }

    /// `open` with the shared key of the two key pairs (`crypto_box_open_easy_afternm`).
    package static func open(_ sealed: [UInt8], nonce: [UInt8], sharedKey: SecretBytes) throws -> SecretBytes {
        guard sealed.count >= macByteCount, nonce.count == nonceByteCount else {
            throw CryptoError(.decryptionFailed, "crypto_box input has the wrong length")
        }
        precondition(sharedKey.count == sharedKeyByteCount)
        var rc: Int32 = 0
        let out = SecretBytes(count: sealed.count - macByteCount) { m in
            rc = sealed.withUnsafeBytes { c in
                nonce.withUnsafeBytes { n in
                    sharedKey.withUnsafeBytes { k in
                        crypto_box_open_easy_afternm(u8m(m), u8(c), UInt64(c.count), u8(n), u8(k))
                    }
                }
            }
        }
        guard rc == 0 else { throw CryptoError(.decryptionFailed, "crypto_box authentication failed") }
        return out
    }
}
