import AerieCore
import AerieCrypto
import Foundation

/// The work behind the `connections.*` methods that are not state changes: matching, listing,
/// import, and the whole `connections.accept` flow. The registration only decodes and encodes.
extension ConnectionService {
    /// The one invitation matching (seeds 001, 003): the tenant's connection the keys match
    /// (`@id` first, then public DID, then first recipient key) and why, in the caller's
    /// transaction.
    public static func findExisting(_ keys: InvitationMatchKeys, in tx: any TenantTransaction) throws -> ExistingConnection? {
        guard let found = try tx.connections.findMatching(
            invitationId: keys.id, publicDid: keys.publicDid, firstRecipientKey: keys.firstRecipientKey)
        else { return nil }
        let stored = InvitationMatchKeys(id: found.invitationId, publicDid: found.publicDid, firstRecipientKey: found.firstRecipientKey)
        guard let match = stored.match(keys) else { return nil }
        return ExistingConnection(record: found, match: match)
    }

    /// `findExisting` as a read of its own (one statement, one round trip).
    public func findExisting(_ keys: InvitationMatchKeys, tenant: TenantContext) async throws -> ExistingConnection? {
        try await tenant.database.read { try Self.findExisting(keys, in: $0) }
    }

    /// `connections.list`: by id after `after`, optionally in one state.
    func list(after: UUID?, state: ConnectionRecord.State?, limit: Int, tenant: TenantContext) async throws -> [ConnectionRecord] {
        try await tenant.database.read { try $0.connections.list(after: after, state: state, limit: limit) }
    }

    /// `connections.deserialize`: stores an exported record whose pairwise key the tenant holds;
    /// the stored one (`existing`) when its id is already there. A rotation the export was
    /// waiting on is not imported (its key is not the tenant's to hold): the DID stays the old one.
    func importRecord(_ exported: ConnectionRecord, tenant: TenantContext) async throws -> (record: ConnectionRecord, existing: Bool) {
        var unrotated = exported
        unrotated.rotation = nil
        let record = unrotated
        if let existing = try await tenant.database.transaction({ try $0.connections.get(record.id) }) {
            return (existing, true)
        }
        if let verkey = record.myVerkey {
            let held = try await AerieError.mappingCrypto { try await tenant.keys.holds(verkey) }
            guard held else {
                throw AerieError.invalidParams("the connection's pairwise key is not in this tenant's wallet", field: "serialized")
            }
        }
        try await tenant.database.transaction { try $0.connections.insertImported(record) }
        return (record, false)
    }
}
