import AerieCore

/// Finds a tenant's stored connection whose invitation matches (duplicate detection).
///
/// What `connections.parseInvitation` and `resolveUrl` ask for `existingConnectionId`. The server
/// uses `StoreConnectionLookup` (`ConnectionService.findExisting`, the one duplicate match);
/// the plugin's unit tests, which have no database, give `NoConnectionLookup` or one of their own.
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
