import CSodium

/// An X25519 key pair (usually converted from an Ed25519 one) for `Box` and `SealedBox`.
public struct X25519KeyPair: Sendable, CustomStringConvertible, CustomDebugStringConvertible, CustomReflectable {
    public static let byteCount = 32

    public let publicKey: [UInt8]
    let secret: SecretBytes

    init(publicKey: [UInt8], secret: SecretBytes) {
        self.publicKey = publicKey
        self.secret = secret
    }

    /// A new random key pair.
    public static func generate() -> X25519KeyPair {
        var pk = [UInt8](repeating: 0, count: byteCount)
        let sk = SecretBytes(count: byteCount) { sk in
            Sodium.ensureReady()
            _ = pk.withUnsafeMutableBytes { crypto_box_keypair(u8m($0), u8m(sk)) }
        }
        return X25519KeyPair(publicKey: pk, secret: sk)
    }

    public var description: String { "X25519KeyPair(publicKey: \(Base58.encode(publicKey)))" }
    public var debugDescription: String { description }
    public var customMirror: Mirror { Mirror(self, children: ["publicKey": Base58.encode(publicKey)]) }
}
