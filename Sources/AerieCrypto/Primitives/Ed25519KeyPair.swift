import CSodium

/// An Ed25519 signing key pair: the verkey of DIDComm v1 and of did:key / did:peer.
///
/// The 64-byte libsodium secret key (seed || public key) lives in `SecretBytes`; the value
/// prints only its public key.
public struct Ed25519KeyPair: Sendable, CustomStringConvertible, CustomDebugStringConvertible, CustomReflectable {
    public static let seedByteCount = 32
    public static let secretKeyByteCount = 64

    /// The 32-byte public key.
    public let verkey: [UInt8]
    package let secretKey: SecretBytes  // 64 bytes

    /// A new random key pair.
    public static func generate() -> Ed25519KeyPair {
        var pk = [UInt8](repeating: 0, count: Ed25519.publicKeyByteCount)
        let sk = SecretBytes(count: secretKeyByteCount) { sk in
            Sodium.ensureReady()
            let rc = pk.withUnsafeMutableBytes { crypto_sign_keypair(u8m($0), u8m(sk)) }
            precondition(rc == 0, "crypto_sign_keypair failed")
        }
        return Ed25519KeyPair(verkey: pk, secretKey: sk)
    }

    /// The key pair of a 32-byte seed (deterministic; ACA-Py and Indy seeds work this way).
    public init(seed: [UInt8]) throws {
        guard seed.count == Self.seedByteCount else {
            throw CryptoError(.invalidKey, "Ed25519 seed must be 32 bytes", details: "got \(seed.count) bytes")
        }
        self = seed.withUnsafeBytes { Self.fromSeed($0) }
    }

    /// From a 32-byte seed or a 64-byte libsodium secret key (whose public half is checked).
    public init(secret: SecretBytes) throws {
        switch secret.count {
        case Self.seedByteCount:
            self = secret.withUnsafeBytes { Self.fromSeed($0) }
        case Self.secretKeyByteCount:
            let pair = secret.withUnsafeBytes { Self.fromSeed(UnsafeRawBufferPointer(rebasing: $0[0..<32])) }
            let matches = secret.withUnsafeBytes { raw in
                pair.verkey.withUnsafeBytes { ConstantTime.equal(UnsafeRawBufferPointer(rebasing: raw[32...]), $0) }
            }
            guard matches else { throw CryptoError(.invalidKey, "Ed25519 secret key's public half does not match") }
            self = pair
        default:
            throw CryptoError(
                .invalidKey, "Ed25519 secret must be a 32-byte seed or 64-byte key",
                details: "got \(secret.count) bytes")
        }
    }

    private init(verkey: [UInt8], secretKey: SecretBytes) {
        self.verkey = verkey
        self.secretKey = secretKey
    }

    private static func fromSeed(_ seed: UnsafeRawBufferPointer) -> Ed25519KeyPair {
        precondition(seed.count == seedByteCount)
        var pk = [UInt8](repeating: 0, count: Ed25519.publicKeyByteCount)
        let sk = SecretBytes(count: secretKeyByteCount) { sk in
            Sodium.ensureReady()
            let rc = pk.withUnsafeMutableBytes { crypto_sign_seed_keypair(u8m($0), u8m(sk), u8(seed)) }
            precondition(rc == 0, "crypto_sign_seed_keypair failed")
        }
        return Ed25519KeyPair(verkey: pk, secretKey: sk)
    }

    /// The verkey in base58, as DIDComm v1 `kid`s and `recipientKeys` write it.
    public var verkeyBase58: String { Base58.encode(verkey) }

    /// The 32-byte seed, which is all that needs storing (sealed) to rebuild the pair.
    public var seed: SecretBytes {
        SecretBytes(count: Self.seedByteCount) { out in
            secretKey.withUnsafeBytes { out.copyMemory(from: UnsafeRawBufferPointer(rebasing: $0[0..<32])) }
        }
    }

    func withSeed<R>(_ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R {
        try secretKey.withUnsafeBytes { try body(UnsafeRawBufferPointer(rebasing: $0[0..<32])) }
    }

    /// A detached 64-byte signature.
    public func sign(_ message: [UInt8]) -> [UInt8] {
        message.withUnsafeBytes { sign($0) }
    }

    package func sign(_ message: UnsafeRawBufferPointer) -> [UInt8] {
        Sodium.ensureReady()
        return [UInt8](unsafeUninitializedCapacity: Ed25519.signatureByteCount) { sig, initialized in
            secretKey.withUnsafeBytes { sk in
                let rc = crypto_sign_detached(u8m(sig), nil, u8(message), UInt64(message.count), u8(sk))
                precondition(rc == 0, "crypto_sign_detached failed")
            }
            initialized = Ed25519.signatureByteCount
        }
    }

    /// The X25519 (Curve25519) key pair for the same identity, as crypto_box needs.
    public func x25519() -> X25519KeyPair {
        X25519KeyPair(publicKey: x25519PublicKey(), secret: x25519Secret())
    }

    /// The X25519 secret alone (a hash of the seed: no curve arithmetic). Enough to seal a box
    /// from this key (`Box.seal`), which needs no public half of ours.
    package func x25519Secret() -> SecretBytes {
        Sodium.ensureReady()
        return SecretBytes(count: X25519KeyPair.byteCount) { out in
            secretKey.withUnsafeBytes { sk in
                let rc = crypto_sign_ed25519_sk_to_curve25519(u8m(out), u8(sk))
                precondition(rc == 0, "crypto_sign_ed25519_sk_to_curve25519 failed")
            }
        }
    }

    /// The X25519 public key, from the secret (a fixed-base multiplication) rather than from the
    /// verkey: the same bytes, without the verkey conversion's point decoding and subgroup check
    /// (about a third cheaper). `X25519PublicKeys` remembers it per tenant.
    package func x25519PublicKey() -> [UInt8] {
        let sk = x25519Secret()
        var rc: Int32 = 0
        let pk = [UInt8](unsafeUninitializedCapacity: X25519KeyPair.byteCount) { out, initialized in
            rc = sk.withUnsafeBytes { crypto_scalarmult_curve25519_base(u8m(out), u8($0)) }
            initialized = X25519KeyPair.byteCount
        }
        precondition(rc == 0, "crypto_scalarmult_curve25519_base failed")
        return pk
    }

    public var description: String { "Ed25519KeyPair(verkey: \(verkeyBase58))" }
    public var debugDescription: String { description }
    public var customMirror: Mirror { Mirror(self, children: ["verkey": verkeyBase58]) }
}
