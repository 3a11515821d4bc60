import AerieCore

/// Finds a tenant's stored connection whose invitation matches (duplicate detection).
///
/// The seam for the connection store: `connections.parseInvitation` asks it for
/// `existingConnectionId`. Until the store implements it, `NoConnectionLookup` finds nothing.
public protocol ConnectionLookup: Sendable {
    /// The id of the tenant's connection whose invitation matches `keys` (by `@id`, public DID or
    /// first recipient key; see `InvitationMatchKeys.match`), or nil.
    func existingConnectionId(matching keys: InvitationMatchKeys, tenant: TenantContext) async throws -> String?
}

/// A lookup with nothing stored.
public struct NoConnectionLookup: ConnectionLookup {
    public init() {}

    public func existingConnectionId(matching keys: InvitationMatchKeys, tenant: TenantContext) async throws -> String? {
        nil
    }
}
