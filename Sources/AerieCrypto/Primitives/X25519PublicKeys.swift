import Synchronization

/// Ed25519 verkeys' X25519 public keys, remembered per tenant (`scope`). One connection flow
/// converts the same keys several times (the peer's key at each pack to it and each unpack from
/// it, our pairwise key at each unpack), and each conversion is a curve multiplication (about as
/// costly as the Diffie-Hellman it prepares). The mapping is a pure function of the verkey, so
/// an entry can only ever be right; it is kept per tenant so that how fast one tenant's message
/// opens says nothing about which keys another tenant talks to. Public values only; bounded
/// (emptied when full: a peer sending fresh keys only costs the recomputation).
package final class X25519PublicKeys: Sendable {
    package static let shared = X25519PublicKeys(capacity: 8192)

    private struct Key: Hashable {
        let scope: String
        let verkey: [UInt8]
    }
    private let entries = Mutex<[Key: [UInt8]]>([:])
    private let capacity: Int

    package init(capacity: Int) { self.capacity = capacity }

    /// The X25519 public key of a peer's `verkey` (`Ed25519.x25519PublicKey(fromVerkey:)`, which
    /// also refuses a verkey that is not a valid point: refusals are not remembered).
    package func publicKey(ofVerkey verkey: [UInt8], scope: String) throws -> [UInt8] {
        let key = Key(scope: scope, verkey: verkey)
        if let known = entries.withLock({ $0[key] }) { return known }
        let converted = try Ed25519.x25519PublicKey(fromVerkey: verkey)
        remember(converted, for: key)
        return converted
    }

    /// The X25519 public key of our own `pair` (from its secret: `Ed25519KeyPair.x25519PublicKey`).
    package func publicKey(of pair: Ed25519KeyPair, scope: String) -> [UInt8] {
        let key = Key(scope: scope, verkey: pair.verkey)
        if let known = entries.withLock({ $0[key] }) { return known }
        let converted = pair.x25519PublicKey()
        remember(converted, for: key)
        return converted
    }

    private func remember(_ publicKey: [UInt8], for key: Key) {
        entries.withLock { entries in
            if entries.count >= capacity { entries.removeAll(keepingCapacity: true) }
            entries[key] = publicKey
        }
    }

    /// Entries held (tests).
    package var count: Int { entries.withLock { $0.count } }
}
