/// A tenant's data key: seals that tenant's private keys at rest.
///
/// Sealed form (`seal`): `0x01 || nonce(24) || XChaCha20-Poly1305(privateKey) || tag(16)` with
/// associated data = tenant id UTF-8 followed by the 32-byte verkey, so a sealed key only opens
/// for the tenant and public key it was stored under (no row swapping). A class, so the key is
/// wiped (via `SecretBytes`) when the last reference goes; immutable, hence `Sendable`.
public final class DataKey: Sendable, CustomStringConvertible, CustomDebugStringConvertible, CustomReflectable {
    public static let byteCount = 32
    static let sealVersion: UInt8 = 1

    let secret: SecretBytes

    init(secret: SecretBytes) {
        precondition(secret.count == Self.byteCount)
        self.secret = secret
    }

    /// A new random data key.
    public static func generate() -> DataKey { DataKey(secret: .random(count: byteCount)) }

    /// Seals a private key (any length; Aerie stores the 32-byte Ed25519 seed).
    public func seal(privateKey: [UInt8], tenantID: String, verkey: [UInt8]) -> [UInt8] {
        privateKey.withUnsafeBytes { seal($0, tenantID: tenantID, verkey: verkey) }
    }

    /// Seals a key pair's 32-byte seed, bound to its own verkey.
    public func seal(_ keyPair: Ed25519KeyPair, tenantID: String) -> [UInt8] {
        keyPair.withSeed { seal($0, tenantID: tenantID, verkey: keyPair.verkey) }
    }

    /// Opens a sealed private key; `decryption_failed` when tenant, verkey or bytes differ.
    public func open(sealed: [UInt8], tenantID: String, verkey: [UInt8]) throws -> SecretBytes {
        let header = 1 + 24
        guard sealed.count >= header + AEAD.tagByteCount, sealed[0] == Self.sealVersion else {
            throw CryptoError(.decryptionFailed, "not a sealed private key", details: "\(sealed.count) bytes")
        }
        let ad = Self.associatedData(tenantID: tenantID, verkey: verkey)
        let tagStart = sealed.count - AEAD.tagByteCount
        return try sealed.withUnsafeBytes { raw throws -> SecretBytes in
            try secret.withUnsafeBytes { k throws -> SecretBytes in
                try ad.withUnsafeBytes { adp throws -> SecretBytes in
                    var plain = try AEAD.xchacha20Poly1305.openDetached(
                        UnsafeRawBufferPointer(rebasing: raw[header..<tagStart]),
                        tag: UnsafeRawBufferPointer(rebasing: raw[tagStart...]),
                        key: k,
                        nonce: UnsafeRawBufferPointer(rebasing: raw[1..<header]),
                        aad: adp)
                    defer { SecretBytes.wipe(&plain) }
                    return SecretBytes(plain)
                }
            }
        }
    }

    /// Opens a sealed seed and rebuilds the key pair, checking it really has `verkey`.
    public func openKeyPair(sealed: [UInt8], tenantID: String, verkey: [UInt8]) throws -> Ed25519KeyPair {
        let secret = try open(sealed: sealed, tenantID: tenantID, verkey: verkey)
        let pair = try Ed25519KeyPair(secret: secret)
        guard pair.verkey == verkey else {
            throw CryptoError(.invalidKey, "sealed private key does not match its verkey")
        }
        return pair
    }

    func seal(_ privateKey: UnsafeRawBufferPointer, tenantID: String, verkey: [UInt8]) -> [UInt8] {
        let nonce = AEAD.xchacha20Poly1305.randomNonce()
        let ad = Self.associatedData(tenantID: tenantID, verkey: verkey)
        let (ciphertext, tag) = secret.withUnsafeBytes { k in
            nonce.withUnsafeBytes { n in
                ad.withUnsafeBytes { AEAD.xchacha20Poly1305.sealDetached(privateKey, key: k, nonce: n, aad: $0) }
            }
        }
        var out = [UInt8]()
        out.reserveCapacity(1 + nonce.count + ciphertext.count + tag.count)
        out.append(Self.sealVersion)
        out += nonce
        out += ciphertext
        out += tag
        return out
    }

    private static func associatedData(tenantID: String, verkey: [UInt8]) -> [UInt8] {
        Array(tenantID.utf8) + verkey
    }

    public var description: String { "DataKey(<redacted>)" }
    public var debugDescription: String { description }
    public var customMirror: Mirror { Mirror(self, children: [], displayStyle: .class) }
}
