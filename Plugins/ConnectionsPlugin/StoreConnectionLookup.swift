import AerieCore

/// Duplicate detection on the tenant's `connections` table.
public struct StoreConnectionLookup: ConnectionLookup {
    public init() {}

    public func existingConnectionId(matching keys: InvitationMatchKeys, tenant: TenantContext) async throws -> String? {
        try await tenant.database.transaction { tx in
            try tx.connections.findMatching(
                invitationId: keys.id, publicDid: keys.publicDid, firstRecipientKey: keys.firstRecipientKey)
        }?.id.uuidString.lowercased()
    }
}
