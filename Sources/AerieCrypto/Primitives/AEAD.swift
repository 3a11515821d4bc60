import CSodium

/// The two IETF ChaCha20-Poly1305 AEADs DIDComm v1 uses: 12-byte nonce (what ACA-Py sends)
/// and 24-byte nonce (XChaCha20, what the `enc` header names and what we use at rest).
public struct AEAD: Sendable, Hashable {
    private enum Kind: Sendable, Hashable { case chacha, xchacha }
    private let kind: Kind

    /// ChaCha20-Poly1305-IETF: 12-byte nonce.
    public static let chacha20Poly1305 = AEAD(kind: .chacha)
    /// XChaCha20-Poly1305-IETF: 24-byte nonce, safe to pick at random.
    public static let xchacha20Poly1305 = AEAD(kind: .xchacha)

    public static let keyByteCount = 32
    public static let tagByteCount = 16
    public var nonceByteCount: Int { kind == .chacha ? 12 : 24 }

    /// The AEAD whose nonce has `count` bytes, if any.
    public init?(nonceByteCount count: Int) {
        switch count {
        case 12: kind = .chacha
        case 24: kind = .xchacha
        default: return nil
        }
    }

    private init(kind: Kind) { self.kind = kind }

    /// A fresh random nonce of the right length.
    public func randomNonce() -> [UInt8] { Random.bytes(nonceByteCount) }

    /// Encrypts with a detached tag (JWE keeps ciphertext and tag apart).
    /// Throws `invalid_key` for a key that is not 32 bytes or a nonce of the wrong length.
    public func seal(
        _ plaintext: [UInt8], key: SecretBytes, nonce: [UInt8], authenticating aad: [UInt8] = []
    ) throws -> (ciphertext: [UInt8], tag: [UInt8]) {
        guard key.count == Self.keyByteCount, nonce.count == nonceByteCount else {
            throw CryptoError(.invalidKey, "AEAD needs a 32-byte key and a \(nonceByteCount)-byte nonce")
        }
        return plaintext.withUnsafeBytes { m in
            aad.withUnsafeBytes { ad in
                nonce.withUnsafeBytes { n in key.withUnsafeBytes { k in sealDetached(m, key: k, nonce: n, aad: ad) } }
            }
        }
    }

    /// Decrypts and authenticates; throws `decryption_failed` on any mismatch.
    public func open(
        ciphertext: [UInt8], tag: [UInt8], key: SecretBytes, nonce: [UInt8], authenticating aad: [UInt8] = []
    ) throws -> [UInt8] {
        try ciphertext.withUnsafeBytes { c throws in
            try tag.withUnsafeBytes { t throws in
                try aad.withUnsafeBytes { ad throws in
                    try nonce.withUnsafeBytes { n throws in
                        try key.withUnsafeBytes { k throws in
                            try openDetached(c, tag: t, key: k, nonce: n, aad: ad)
                        }
                    }
                }
            }
        }
    }

    /// Encrypts to `ciphertext || tag`.
    public func sealCombined(_ plaintext: [UInt8], key: SecretBytes, nonce: [UInt8], authenticating aad: [UInt8] = [])
        throws -> [UInt8]
    {
        let (c, t) = try seal(plaintext, key: key, nonce: nonce, authenticating: aad)
        return c + t
    }

    /// Opens `ciphertext || tag`.
    public func openCombined(_ sealed: [UInt8], key: SecretBytes, nonce: [UInt8], authenticating aad: [UInt8] = [])
        throws -> [UInt8]
    {
        guard sealed.count >= Self.tagByteCount else { throw CryptoError(.decryptionFailed, "ciphertext too short") }
        let split = sealed.count - Self.tagByteCount
        return try open(
            ciphertext: Array(sealed[..<split]), tag: Array(sealed[split...]), key: key, nonce: nonce,
            authenticating: aad)
    }

    // MARK: - Raw (package) API for hot paths

    package func sealDetached(
        _ m: UnsafeRawBufferPointer, key: UnsafeRawBufferPointer, nonce: UnsafeRawBufferPointer,
        aad: UnsafeRawBufferPointer
    ) -> (ciphertext: [UInt8], tag: [UInt8]) {
        precondition(key.count == Self.keyByteCount, "AEAD key must be 32 bytes")
        precondition(nonce.count == nonceByteCount, "AEAD nonce has the wrong length")
        Sodium.ensureReady()
        var tag = [UInt8](repeating: 0, count: Self.tagByteCount)
        let ciphertext = [UInt8](unsafeUninitializedCapacity: m.count) { c, initialized in
            tag.withUnsafeMutableBufferPointer { t in
                var tagLength: UInt64 = 0
                let rc: Int32
                switch kind {
                case .chacha:
                    rc = crypto_aead_chacha20poly1305_ietf_encrypt_detached(
                        u8m(c), u8m(t), &tagLength, u8(m), UInt64(m.count), u8(aad), UInt64(aad.count),
                        nil, u8(nonce), u8(key))
                case .xchacha:
                    rc = crypto_aead_xchacha20poly1305_ietf_encrypt_detached(
                        u8m(c), u8m(t), &tagLength, u8(m), UInt64(m.count), u8(aad), UInt64(aad.count),
                        nil, u8(nonce), u8(key))
                }
                precondition(rc == 0, "AEAD encryption failed")
            }
            initialized = m.count
        }
        return (ciphertext, tag)
    }

    package func openDetached(
        _ c: UnsafeRawBufferPointer, tag: UnsafeRawBufferPointer, key: UnsafeRawBufferPointer,
        nonce: UnsafeRawBufferPointer, aad: UnsafeRawBufferPointer
    ) throws -> [UInt8] {
        guard key.count == Self.keyByteCount else { throw CryptoError(.invalidKey, "AEAD key must be 32 bytes") }
        guard nonce.count == nonceByteCount, tag.count == Self.tagByteCount else {
            throw CryptoError(.decryptionFailed, "AEAD nonce or tag has the wrong length")
        }
        Sodium.ensureReady()
        var ok = false
        let plaintext = [UInt8](unsafeUninitializedCapacity: c.count) { m, initialized in
            let rc: Int32
            switch kind {
            case .chacha:
                rc = crypto_aead_chacha20poly1305_ietf_decrypt_detached(
                    u8m(m), nil, u8(c), UInt64(c.count), u8(tag), u8(aad), UInt64(aad.count), u8(nonce), u8(key))
            case .xchacha:
                rc = crypto_aead_xchacha20poly1305_ietf_decrypt_detached(
                    u8m(m), nil, u8(c), UInt64(c.count), u8(tag), u8(aad), UInt64(aad.count), u8(nonce), u8(key))
            }
            ok = rc == 0
            initialized = ok ? c.count : 0
        }
        guard ok else { throw CryptoError(.decryptionFailed, "decryption failed: wrong key or tampered data") }
        return plaintext
    }
}

/// A stand-in address for empty buffers: libsodium declares its pointers nonnull even for length 0.
nonisolated(unsafe) private let emptyBuffer = UnsafeMutablePointer<UInt8>.allocate(capacity: 16)

/// A typed view of a raw buffer for libsodium.
@inline(__always) package func u8(_ p: UnsafeRawBufferPointer) -> UnsafePointer<UInt8> {
    p.baseAddress?.assumingMemoryBound(to: UInt8.self) ?? UnsafePointer(emptyBuffer)
}

@inline(__always) func u8m(_ p: UnsafeMutableRawBufferPointer) -> UnsafeMutablePointer<UInt8> {
    p.baseAddress?.assumingMemoryBound(to: UInt8.self) ?? emptyBuffer
}

@inline(__always) func u8m(_ p: UnsafeMutableBufferPointer<UInt8>) -> UnsafeMutablePointer<UInt8> {
    p.baseAddress ?? emptyBuffer
}
