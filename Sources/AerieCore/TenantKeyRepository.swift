import Foundation

/// The tenant's private keys at rest. AerieCrypto's key wallet (`tenant.keys`) seals each key
/// with the tenant's data key before it gets here, so this repository only ever holds
/// ciphertext; plugins should use the wallet, not this.
public protocol TenantKeyRepository {
    /// Stores a sealed key. Throws `conflict` when the verkey is already held (by any tenant: an
    /// inbound message must have exactly one owner).
    func insert(verkey: String, sealedSecret: [UInt8]) throws
    /// The sealed secret of `verkey`, if this tenant holds it.
    func sealedSecret(verkey: String) throws -> [UInt8]?
    /// The sealed secrets of those of `verkeys` this tenant holds, by verkey (one round trip).
    func sealedSecrets(verkeys: [String]) throws -> [String: [UInt8]]
    /// Keys in ascending verkey order after `afterVerkey`, at most `limit`.
    func list(after afterVerkey: String?, limit: Int) throws -> [StoredKey]
    /// Returns whether a key was removed.
    func remove(verkey: String) throws -> Bool
}

/// A key the tenant holds, as listing shows it: public parts only.
public struct StoredKey: Sendable, Hashable, Codable {
    /// The base58 Ed25519 public key.
    public var verkey: String
    public var createdAt: Date

    public init(verkey: String, createdAt: Date) {
        self.verkey = verkey
        self.createdAt = createdAt
    }
}
