import AerieCore
import Foundation

/// `aerie.connections`. Queries name the tenant too; row-level security guarantees isolation.
struct PostgresConnectionRepository: ConnectionRepository {
    let tenantID: TenantID
    let session: DatabaseSession

    private static let columns = """
        id::text, state, invitation::text, invitation_kind, invitation_id, public_did, first_recipient_key,
        invitation_endpoint, invitation_routing_keys::text, my_did, my_verkey, thread_id, their_did, their_verkey,
        their_endpoint, their_routing_keys::text, label, logo_url, goal, goal_code, failure_reason,
        problem_report::text, (extract(epoch FROM created_at) * 1000000)::int8,
        (extract(epoch FROM updated_at) * 1000000)::int8, handshake_protocol
        """

    func insert(_ r: ConnectionRecord) throws {
        try session.execute(
            """
            INSERT INTO aerie.connections (tenant_id, id, state, invitation, invitation_kind, invitation_id, public_did,
                first_recipient_key, invitation_endpoint, invitation_routing_keys, my_did, my_verkey, thread_id,
                their_did, their_verkey, their_endpoint, their_routing_keys, label, logo_url, goal, goal_code,
                failure_reason, problem_report, handshake_protocol)
            VALUES ($1::uuid, $2::uuid, $3, $4::jsonb, $5, $6, $7, $8, $9, $10::jsonb, $11, $12, $13, $14, $15, $16,
                $17::jsonb, $18, $19, $20, $21, $22, $23::jsonb, $24)
            """,
            [.text(tenantID.rawValue), .text(r.id.uuidString.lowercased())] + (try Self.fields(r)))
    }

    func get(_ id: UUID) throws -> ConnectionRecord? {
        try one("WHERE tenant_id = $1::uuid AND id = $2::uuid", [.text(id.uuidString.lowercased())])
    }

    func getForUpdate(_ id: UUID) throws -> ConnectionRecord? {
        try one("WHERE tenant_id = $1::uuid AND id = $2::uuid FOR UPDATE", [.text(id.uuidString.lowercased())])
    }

    func update(_ r: ConnectionRecord) throws -> Bool {
        try session.execute(
            """
            UPDATE aerie.connections SET state = $3, invitation = $4::jsonb, invitation_kind = $5, invitation_id = $6,
                public_did = $7, first_recipient_key = $8, invitation_endpoint = $9, invitation_routing_keys = $10::jsonb,
                my_did = $11, my_verkey = $12, thread_id = $13, their_did = $14, their_verkey = $15,
                their_endpoint = $16, their_routing_keys = $17::jsonb, label = $18, logo_url = $19, goal = $20,
                goal_code = $21, failure_reason = $22, problem_report = $23::jsonb,
                handshake_protocol = $24, updated_at = now()
            WHERE tenant_id = $1::uuid AND id = $2::uuid
            """,
            [.text(tenantID.rawValue), .text(r.id.uuidString.lowercased())] + (try Self.fields(r))) == 1
    }

    func list(after afterId: UUID?, state: ConnectionRecord.State?, limit: Int) throws -> [ConnectionRecord] {
        try many(
            """
            WHERE tenant_id = $1::uuid AND ($2::uuid IS NULL OR id > $2::uuid) AND ($3::text IS NULL OR state = $3::text)
            ORDER BY id LIMIT $4
            """,
            [.optionalText(afterId?.uuidString.lowercased()), .optionalText(state?.rawValue), .int(max(0, limit))])
    }

    func findMatching(invitationId: String?, publicDid: String?, firstRecipientKey: String?) throws -> ConnectionRecord? {
        guard invitationId != nil || publicDid != nil || firstRecipientKey != nil else { return nil }
        return try one(
            """
            WHERE tenant_id = $1::uuid AND state <> 'deleted'
              AND (invitation_id = $2::text OR public_did = $3::text OR first_recipient_key = $4::text)
            ORDER BY (invitation_id IS NOT DISTINCT FROM $2::text) DESC, created_at, id LIMIT 1
            """,
            [.optionalText(invitationId), .optionalText(publicDid), .optionalText(firstRecipientKey)])
    }

    func lockInvitation(_ invitationId: String) throws {
        // A transaction-level advisory lock: released by COMMIT or ROLLBACK, also when the
        // process dies. A hash collision only serializes two unrelated accepts.
        try session.execute(
            "SELECT pg_advisory_xact_lock(hashtextextended('aerie.invitation:' || $1 || ':' || $2, 0))",
            [.text(tenantID.rawValue), .text(invitationId)])
    }

    func findByMyVerkey(_ verkey: String) throws -> ConnectionRecord? {
        try one("WHERE tenant_id = $1::uuid AND my_verkey = $2 FOR UPDATE", [.text(verkey)])
    }

    func findByMyDid(_ did: String) throws -> ConnectionRecord? {
        try one("WHERE tenant_id = $1::uuid AND my_did = $2", [.text(did)])
    }

    func delete(_ id: UUID) throws -> Bool {
        try session.execute(
            "DELETE FROM aerie.connections WHERE tenant_id = $1::uuid AND id = $2::uuid",
            [.text(tenantID.rawValue), .text(id.uuidString.lowercased())]) == 1
    }

    // MARK: - Rows

    private func one(_ clause: String, _ parameters: [SQLValue]) throws -> ConnectionRecord? {
        try many(clause, parameters).first
    }

    private func many(_ clause: String, _ parameters: [SQLValue]) throws -> [ConnectionRecord] {
        let result = try session.query(
            "SELECT \(Self.columns) FROM aerie.connections \(clause)", [.text(tenantID.rawValue)] + parameters)
        return try (0..<result.rowCount).map { try Self.record(result, $0) }
    }

    private static func fields(_ r: ConnectionRecord) throws -> [SQLValue] {
        [
            .text(r.state.rawValue), .text(try JSONColumn.encode(r.invitation)), .text(r.invitationKind),
            .optionalText(r.invitationId), .optionalText(r.publicDid), .optionalText(r.firstRecipientKey),
            .optionalText(r.invitationEndpoint), .text(try JSONColumn.encode(r.invitationRoutingKeys)),
            .optionalText(r.myDid), .optionalText(r.myVerkey), .optionalText(r.threadId), .optionalText(r.theirDid),
            .optionalText(r.theirVerkey), .optionalText(r.theirEndpoint),
            .text(try JSONColumn.encode(r.theirRoutingKeys)), .optionalText(r.label), .optionalText(r.logoUrl),
            .optionalText(r.goal), .optionalText(r.goalCode), .optionalText(r.failureReason),
            .optionalText(try r.problemReport.map(JSONColumn.encode)), .optionalText(r.handshakeProtocol),
        ]
    }

    private static func record(_ r: PostgresResult, _ row: Int) throws -> ConnectionRecord {
        guard let id = r.string(row, 0).flatMap(UUID.init(uuidString:)),
            let state = r.string(row, 1).flatMap(ConnectionRecord.State.init(rawValue:)),
            let createdAt = r.date(microseconds: row, 22), let updatedAt = r.date(microseconds: row, 23)
        else { throw AerieError.internalError(details: "malformed row in aerie.connections") }
        return ConnectionRecord(
            id: id, state: state, invitation: try JSONColumn.decode(r.string(row, 2) ?? "null"),
            invitationKind: r.string(row, 3) ?? "", invitationId: r.string(row, 4), publicDid: r.string(row, 5),
            firstRecipientKey: r.string(row, 6), invitationEndpoint: r.string(row, 7),
            invitationRoutingKeys: try JSONColumn.decodeStrings(r.string(row, 8) ?? "[]"),
            myDid: r.string(row, 9), myVerkey: r.string(row, 10), threadId: r.string(row, 11),
            theirDid: r.string(row, 12), theirVerkey: r.string(row, 13), theirEndpoint: r.string(row, 14),
            theirRoutingKeys: try JSONColumn.decodeStrings(r.string(row, 15) ?? "[]"),
            label: r.string(row, 16), logoUrl: r.string(row, 17), goal: r.string(row, 18), goalCode: r.string(row, 19),
            failureReason: r.string(row, 20), problemReport: try r.string(row, 21).map { try JSONColumn.decode($0) },
            handshakeProtocol: r.string(row, 24), createdAt: createdAt, updatedAt: updatedAt)
    }
}

/// jsonb columns as text.
/// jsonb columns through AerieCore's own parser and serializer: Foundation's `JSONDecoder` and
/// `JSONEncoder` cost several times more, and every connection read decodes three columns.
enum JSONColumn {
    static func encode(_ value: JSONValue) -> String {
        String(decoding: value.serialized(), as: UTF8.self)
    }

    static func encode(_ strings: [String]) -> String {
        encode(JSONValue.array(strings.map(JSONValue.string)))
    }

    static func decode(_ text: String) throws -> JSONValue {
        do {
            return try JSONValue(parsing: text)
        } catch {
            throw AerieError.internalError(details: "unreadable jsonb column: \(error)")
        }
    }

    static func decodeStrings(_ text: String) throws -> [String] {
        guard case .array(let items) = try decode(text) else {
            throw AerieError.internalError(details: "jsonb column is not an array of strings")
        }
        return try items.map { item in
            guard case .string(let string) = item else {
                throw AerieError.internalError(details: "jsonb column is not an array of strings")
            }
            return string
        }
    }
}
