import AerieCore
import Foundation

/// `aerie.oob_invitations`: the out-of-band invitations a tenant accepted.
struct PostgresOutOfBandRepository: OutOfBandRepository {
    let tenantID: TenantID
    let session: DatabaseSession

    private static let columns = """
        id::text, invitation_id, connection_id::text, decision_row, state, reuse_message_id, attached_message::text,
        attached_message_uid::text, failure_reason, invitation::text, (extract(epoch FROM created_at) * 1000000)::int8,
        (extract(epoch FROM updated_at) * 1000000)::int8
        """

    func insert(_ r: OutOfBandRecord) throws {
        try session.execute(
            """
            INSERT INTO aerie.oob_invitations (tenant_id, id, invitation_id, connection_id, decision_row, state,
                reuse_message_id, attached_message, attached_message_uid, failure_reason, invitation)
            VALUES ($1::uuid, $2::uuid, $3, $4::uuid, $5::int4, $6, $7, $8::jsonb, $9::uuid, $10, $11::jsonb)
            """,
            [.text(tenantID.rawValue), .text(r.id.uuidString.lowercased()), .text(r.invitationId)]
                + (try Self.fields(r)))
    }

    func update(_ r: OutOfBandRecord) throws -> Bool {
        try session.execute(
            """
            UPDATE aerie.oob_invitations SET connection_id = $4::uuid, decision_row = $5::int4, state = $6,
                reuse_message_id = $7, attached_message = $8::jsonb, attached_message_uid = $9::uuid,
                failure_reason = $10, invitation = $11::jsonb, updated_at = now()
            WHERE tenant_id = $1::uuid AND id = $2::uuid AND invitation_id = $3
            """,
            [.text(tenantID.rawValue), .text(r.id.uuidString.lowercased()), .text(r.invitationId)]
                + (try Self.fields(r))) == 1
    }

    func find(invitationId: String, forUpdate: Bool) throws -> OutOfBandRecord? {
        let result = try session.query(
            """
            SELECT \(Self.columns) FROM aerie.oob_invitations
            WHERE tenant_id = $1::uuid AND invitation_id = $2\(forUpdate ? " FOR UPDATE" : "")
            """,
            [.text(tenantID.rawValue), .text(invitationId)])
        return try (0..<result.rowCount).map { try Self.record(result, $0) }.first
    }

    func deleteAll(connectionId: UUID) throws -> Int {
        try session.execute(
            "DELETE FROM aerie.oob_invitations WHERE tenant_id = $1::uuid AND connection_id = $2::uuid",
            [.text(tenantID.rawValue), .text(connectionId.uuidString.lowercased())])
    }

    private static func fields(_ r: OutOfBandRecord) throws -> [SQLValue] {
        [
            .optionalText(r.connectionId?.uuidString.lowercased()), .int(r.decisionRow), .text(r.state.rawValue),
            .optionalText(r.reuseMessageId), .optionalText(try r.attachedMessage.map(JSONColumn.encode)),
            .optionalText(r.attachedMessageUid?.uuidString.lowercased()), .optionalText(r.failureReason),
            .text(try JSONColumn.encode(r.invitation)),
        ]
    }

    private static func record(_ r: PostgresResult, _ row: Int) throws -> OutOfBandRecord {
        guard let id = r.string(row, 0).flatMap(UUID.init(uuidString:)), let invitationId = r.string(row, 1),
            let decisionRow = r.int(row, 3), let state = r.string(row, 4).flatMap(OutOfBandRecord.State.init(rawValue:)),
            let createdAt = r.date(microseconds: row, 10), let updatedAt = r.date(microseconds: row, 11)
        else { throw AerieError.internalError(details: "malformed row in aerie.oob_invitations") }
        return OutOfBandRecord(
            id: id, invitationId: invitationId, connectionId: r.string(row, 2).flatMap(UUID.init(uuidString:)),
            decisionRow: decisionRow, state: state, reuseMessageId: r.string(row, 5),
            attachedMessage: try r.string(row, 6).map { try JSONColumn.decode($0) },
            attachedMessageUid: r.string(row, 7).flatMap(UUID.init(uuidString:)), failureReason: r.string(row, 8),
            invitation: try JSONColumn.decode(r.string(row, 9) ?? "null"), createdAt: createdAt, updatedAt: updatedAt)
    }
}
