/// Hands the key wallet one tenant's data key, and nothing else.
///
/// AerieCore cannot name the key type (AerieCrypto owns key material and its zeroing storage),
/// so the key travels as an opaque `TenantDataKey` that AerieCrypto's wallet casts back. The
/// server implements this by unwrapping the tenant's stored data key with its master key.
public protocol TenantKeyring: Sendable {
    var tenantID: TenantID { get }
    /// The tenant's unwrapped data key. Throws when it cannot be unwrapped (wrong master key).
    func dataKey() async throws -> any TenantDataKey
}

/// AerieCrypto's `DataKey`: key material that wipes itself and never prints.
public protocol TenantDataKey: AnyObject, Sendable {
    /// Seals this tenant's stored values (see `ValueSealer`); derives its subkeys once, so make
    /// one per transaction, not per row.
    func sealer(for tenantID: TenantID) -> any ValueSealer
}
