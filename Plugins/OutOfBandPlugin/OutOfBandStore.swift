import AerieCore
import Foundation

/// `aerie.oob_invitations` (the plugin's table, `OutOfBandSchema`) over the transaction's SQL
/// seam: the out-of-band invitations a tenant accepted. Sealed (`RowSealing`): the invitation, its
/// `@id`, the attachment, the handshake-reuse `@id`, the failure reason; the `@id` is found
/// through its keyed hash (unique per tenant). Clear: ids, connection, decision row, state,
/// attachment's mailbox uid, times.
struct OutOfBandStore: OutOfBandRepository {
    static let table = "oob_invitations"

    let tenantID: TenantID
    let sql: any TenantSQL
    let sealing: RowSealing

    init(_ transaction: any TenantTransaction) {
        tenantID = transaction.tenantID
        sql = transaction.sql
        sealing = transaction.rowSealing(Self.table)
    }

    /// Columns 0...11 as in the previous release (its rows are read from them), 12 `sealed`.
    private static let columns = """
        id::text, invitation_id, connection_id::text, decision_row, state, reuse_message_id, attached_message::text,
        attached_message_uid::text, failure_reason, invitation::text, (extract(epoch FROM created_at) * 1000000)::int8,
        (extract(epoch FROM updated_at) * 1000000)::int8, sealed
        """

    func insert(_ r: OutOfBandRecord) throws {
        try sql.execute(
            """
            INSERT INTO aerie.oob_invitations (tenant_id, id, invitation_id_hash, connection_id, decision_row, state,
                attached_message_uid, sealed)
            VALUES ($1::uuid, $2::uuid, $3, $4::uuid, $5::int4, $6, $7::uuid, $8)
            """,
            try parameters(r))
    }

    func update(_ r: OutOfBandRecord) throws -> Bool {
        try write(r, touching: true)
    }

    /// `touching`: sets `updated_at` (a change), or keeps it (only the storage form changes).
    private func write(_ r: OutOfBandRecord, touching: Bool) throws -> Bool {
        try sql.execute(
            """
            UPDATE aerie.oob_invitations SET invitation_id_hash = $3, connection_id = $4::uuid, decision_row = $5::int4,
                state = $6, attached_message_uid = $7::uuid, sealed = $8, invitation_id = NULL, invitation = NULL,
                attached_message = NULL, failure_reason = NULL, reuse_message_id = NULL\(touching ? ", updated_at = now()" : "")
            WHERE tenant_id = $1::uuid AND id = $2::uuid AND (invitation_id_hash = $3 OR invitation_id = $9)
            """,
            try parameters(r) + [.text(r.invitationId)]) == 1
    }

    func find(invitationId: String, forUpdate: Bool) throws -> OutOfBandRecord? {
        let result = try sql.query(
            """
            SELECT \(Self.columns) FROM aerie.oob_invitations
            WHERE tenant_id = $1::uuid AND (invitation_id_hash = $2 OR invitation_id = $3)
            ORDER BY created_at LIMIT 1\(forUpdate ? " FOR UPDATE" : "")
            """,
            [.text(tenantID.rawValue), .bytes(try hash(invitationId)), .text(invitationId)])
        return try (0..<result.rowCount).map { try record(result, $0) }.first
    }

    func deleteAll(connectionId: UUID) throws -> Int {
        try sql.execute(
            "DELETE FROM aerie.oob_invitations WHERE tenant_id = $1::uuid AND connection_id = $2::uuid",
            [.text(tenantID.rawValue), .uuid(connectionId)])
    }

    /// Rewrites up to `limit` rows of the previous (clear) form sealed; answers how many. (The
    /// table had clear rows before schema/0018; the plugin's `sealClearRows` hook runs this.)
    func sealClearRows(limit: Int) throws -> Int {
        let result = try sql.query(
            """
            SELECT \(Self.columns) FROM aerie.oob_invitations
            WHERE tenant_id = $1::uuid AND sealed IS NULL LIMIT $2 FOR UPDATE SKIP LOCKED
            """,
            [.text(tenantID.rawValue), .int(max(0, limit))])
        for row in 0..<result.rowCount { _ = try write(try record(result, row), touching: false) }
        return result.rowCount
    }

    private func hash(_ invitationId: String) throws -> [UInt8] {
        try sealing.hash(invitationId, column: "invitation_id") ?? []
    }

    /// $1...$8 of insert and update.
    private func parameters(_ r: OutOfBandRecord) throws -> [SQLValue] {
        let id = r.id.lowercasedString
        let sealed: [String: JSONValue] = [
            "invitationId": .string(r.invitationId), "invitation": r.invitation,
            "attachedMessage": r.attachedMessage ?? .null, "reuseMessageId": .optional(r.reuseMessageId),
            "failureReason": .optional(r.failureReason),
        ]
        return [
            .text(tenantID.rawValue), .text(id), .bytes(try hash(r.invitationId)),
            .optionalUUID(r.connectionId), .int(r.decisionRow), .text(r.state.rawValue),
            .optionalUUID(r.attachedMessageUid), .bytes(try sealing.seal(sealed, row: id)),
        ]
    }

    private func record(_ r: any SQLRows, _ row: Int) throws -> OutOfBandRecord {
        guard let idText = r.string(row, 0), let id = UUID(text: idText), let decisionRow = r.int(row, 3),
            let state = r.string(row, 4).flatMap(OutOfBandRecord.State.init(rawValue:)),
            let createdAt = r.date(microseconds: row, 10), let updatedAt = r.date(microseconds: row, 11)
        else { throw AerieError.internalError(details: "malformed row in aerie.oob_invitations") }
        let connectionId = r.uuid(row, 2)
        let attachedMessageUid = r.uuid(row, 7)
        if let sealed = r.bytes(row, 12) {
            let f = try sealing.open(sealed, row: idText)
            guard let invitationId = f.string("invitationId") else {
                throw AerieError.internalError(details: "sealed row \(idText) of aerie.oob_invitations has no invitation id")
            }
            return OutOfBandRecord(
                id: id, invitationId: invitationId, connectionId: connectionId, decisionRow: decisionRow, state: state,
                reuseMessageId: f.string("reuseMessageId"), attachedMessage: f.json("attachedMessage"),
                attachedMessageUid: attachedMessageUid, failureReason: f.string("failureReason"),
                invitation: f.json("invitation") ?? .null, createdAt: createdAt, updatedAt: updatedAt)
        }
        guard let invitationId = r.string(row, 1) else {
            throw AerieError.internalError(details: "malformed row in aerie.oob_invitations")
        }
        return OutOfBandRecord(
            id: id, invitationId: invitationId, connectionId: connectionId, decisionRow: decisionRow, state: state,
            reuseMessageId: r.string(row, 5), attachedMessage: try r.string(row, 6).map { try JSONValue(storedText: $0) },
            attachedMessageUid: attachedMessageUid, failureReason: r.string(row, 8),
            invitation: try JSONValue(storedText: r.string(row, 9) ?? "null"), createdAt: createdAt, updatedAt: updatedAt)
    }
}
