/// The server's master key: wraps each tenant's `DataKey` so only wrapped data keys are stored.
///
/// Wrapped form (`wrap`): `0x01 || fingerprint(8) || nonce(24) || XChaCha20-Poly1305(dataKey) || tag(16)`,
/// associated data = the tenant id's UTF-8, so a wrapped key cannot be moved to another tenant.
/// Carrying the fingerprint lets `unwrap` tell "wrong master key" apart from tampering.
public struct MasterKey: Sendable, CustomStringConvertible, CustomDebugStringConvertible, CustomReflectable {
    public static let byteCount = 32
    static let wrapVersion: UInt8 = 1
    static let fingerprintByteCount = 8
    static let wrappedByteCount = 1 + fingerprintByteCount + 24 + DataKey.byteCount + AEAD.tagByteCount

    let secret: SecretBytes
    private let fingerprintBytes: [UInt8]

    /// Exactly 32 bytes of key material.
    public init(bytes: [UInt8]) throws {
        guard bytes.count == Self.byteCount else {
            throw CryptoError(.invalidKey, "master key must be 32 bytes", details: "got \(bytes.count) bytes")
        }
        self.init(secret: SecretBytes(bytes))
    }

    /// A new random master key.
    public static func generate() -> MasterKey { MasterKey(secret: .random(count: byteCount)) }

    /// From base64 or base64url text (padding optional, surrounding whitespace ignored), as
    /// found in `AERIE_MASTER_KEY` or a key file.
    public init(base64: String) throws {
        let text = base64.trimmingASCIIWhitespace()
        var bytes: [UInt8]
        do {
            bytes = try Base64.decode(text)
        } catch {
            throw CryptoError(.invalidKey, "master key is not valid base64")
        }
        defer { SecretBytes.wipe(&bytes) }
        try self.init(bytes: bytes)
    }

    init(secret: SecretBytes) {
        self.secret = secret
        self.fingerprintBytes = Self.fingerprint(of: secret)
    }

    /// Standard padded base64 of the key, for writing a key file. Handle with care.
    public var base64: String { secret.withUnsafeBytes { Base64.encode($0) } }

    /// 16 hex characters naming this key (a keyed BLAKE2b, so it reveals nothing about the key).
    public var fingerprint: String { Hex.encode(fingerprintBytes) }

    /// The fingerprint of the master key that wrapped `sealed`, or nil if it is not a wrapped key.
    public static func fingerprint(ofWrapped sealed: [UInt8]) -> String? {
        guard sealed.count == wrappedByteCount, sealed[0] == wrapVersion else { return nil }
        return Hex.encode(sealed[1...fingerprintByteCount])
    }

    /// Wraps a tenant's data key; bound to `tenantID`.
    public func wrap(_ key: DataKey, tenantID: String) -> [UInt8] {
        let nonce = AEAD.xchacha20Poly1305.randomNonce()
        let (ciphertext, tag) = key.secret.withUnsafeBytes { plaintext in
            secret.withUnsafeBytes { k in
                nonce.withUnsafeBytes { n in
                    Array(tenantID.utf8).withUnsafeBytes { ad in
                        AEAD.xchacha20Poly1305.sealDetached(plaintext, key: k, nonce: n, aad: ad)
                    }
                }
            }
        }
        var out = [UInt8]()
        out.reserveCapacity(Self.wrappedByteCount)
        out.append(Self.wrapVersion)
        out += fingerprintBytes
        out += nonce
        out += ciphertext
        out += tag
        return out
    }

    /// Unwraps a data key wrapped by `wrap` for the same tenant.
    /// Throws `wrong_master_key` when another master key wrapped it, `decryption_failed` when
    /// the bytes were altered or belong to another tenant.
    public func unwrap(_ sealed: [UInt8], tenantID: String) throws -> DataKey {
        guard sealed.count == Self.wrappedByteCount, sealed[0] == Self.wrapVersion else {
            throw CryptoError(.decryptionFailed, "not a wrapped data key", details: "\(sealed.count) bytes")
        }
        let stored = sealed[1...Self.fingerprintByteCount]
        guard stored.elementsEqual(fingerprintBytes) else {
            throw CryptoError(
                .wrongMasterKey,
                "data key was wrapped by master key \(Hex.encode(stored)), but this server's master key is \(fingerprint)"
            )
        }
        let nonceStart = 1 + Self.fingerprintByteCount
        let cStart = nonceStart + 24
        let tStart = cStart + DataKey.byteCount
        let ad = Array(tenantID.utf8)
        let unwrapped = try sealed.withUnsafeBytes { raw throws -> SecretBytes in
            try secret.withUnsafeBytes { k throws -> SecretBytes in
                try ad.withUnsafeBytes { adp throws -> SecretBytes in
                    var plain = try AEAD.xchacha20Poly1305.openDetached(
                        UnsafeRawBufferPointer(rebasing: raw[cStart..<tStart]),
                        tag: UnsafeRawBufferPointer(rebasing: raw[tStart...]),
                        key: k,
                        nonce: UnsafeRawBufferPointer(rebasing: raw[nonceStart..<cStart]),
                        aad: adp)
                    defer { SecretBytes.wipe(&plain) }
                    return SecretBytes(plain)
                }
            }
        }
        return DataKey(secret: unwrapped)
    }

    public var description: String { "MasterKey(fingerprint: \(fingerprint))" }
    public var debugDescription: String { description }
    public var customMirror: Mirror { Mirror(self, children: ["fingerprint": fingerprint]) }

    private static let fingerprintContext = Array("aerie/master-key-fingerprint/v1".utf8)

    private static func fingerprint(of secret: SecretBytes) -> [UInt8] {
        let digest = secret.withUnsafeBytes { key in
            fingerprintContext.withUnsafeBytes { BLAKE2b.hash($0, outputCount: 32, key: key) }
        }
        return Array(digest.prefix(fingerprintByteCount))
    }
}

extension String {
    func trimmingASCIIWhitespace() -> String {
        let scalars = unicodeScalars
        var start = scalars.startIndex
        var end = scalars.endIndex
        let isSpace: (Unicode.Scalar) -> Bool = { $0 == " " || $0 == "\n" || $0 == "\r" || $0 == "\t" }
        while start < end, isSpace(scalars[start]) { start = scalars.index(after: start) }
        while end > start, isSpace(scalars[scalars.index(before: end)]) { end = scalars.index(before: end) }
        return String(scalars[start..<end])
    }
}
