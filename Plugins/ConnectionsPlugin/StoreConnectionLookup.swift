import AerieCore

/// Duplicate detection on the tenant's `connections` table.
public struct StoreConnectionLookup: ConnectionLookup {
    public init() {}

    public func existingConnectionId(matching keys: InvitationMatchKeys, tenant: TenantContext) async throws -> String? {
        try await tenant.database.transaction { try ConnectionService.findExisting(keys, in: $0) }?.record.id.lowercasedString
    }
}
