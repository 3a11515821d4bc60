import AerieCore
import Foundation

/// `aerie.connections`. Queries name the tenant too; row-level security guarantees isolation.
/// Clear: id, state, invitation kind, handshake protocol, our DID and verkey (routing inbound
/// mail, the mailbox join, NOTIFY); everything else is sealed (`RowSealing`, `sealed`: also the
/// inviter role, multi-use and alias), their DID on its own (`their_did_sealed`: the
/// `senderDID` the mailbox join opens without the rest of the row), and the three invitation
/// match keys are keyed hashes.
struct PostgresConnectionRepository: ConnectionRepository {
    let tenantID: TenantID
    let session: DatabaseSession
    let sealing: RowSealing
    /// Records every id this repository writes (`ConnectionViewCache` invalidation).
    var written: WrittenConnections? = nil
    /// Records the connections it inserts (`RecentRecipients`).
    var made: MadeRecipients? = nil

    /// Columns 0...24 as in the previous release (its rows are read from them), 25 `sealed`,
    /// 26 `their_did_sealed`, 27 `my_next_verkey` (the key of our rotation under way, schema/0050).
    private static let columns = """
        id::text, state, invitation::text, invitation_kind, invitation_id, public_did, first_recipient_key,
        invitation_endpoint, invitation_routing_keys::text, my_did, my_verkey, thread_id, their_did, their_verkey,
        their_endpoint, their_routing_keys::text, label, logo_url, goal, goal_code, failure_reason,
        problem_report::text, (extract(epoch FROM created_at) * 1000000)::int8,
        (extract(epoch FROM updated_at) * 1000000)::int8, handshake_protocol, sealed, their_did_sealed, my_next_verkey
        """

    /// How many columns `columns` has: `recipientsSQL` adds the key's after them.
    static let columnCount = 28
    /// Where `columns` has `sealed`.
    static let sealedColumn = 25

    /// The columns a sealed row leaves NULL (schema/0018's CHECK).
    private static let clearedColumns = """
        their_did = NULL, invitation = NULL, invitation_id = NULL, public_did = NULL, first_recipient_key = NULL,
        invitation_endpoint = NULL, invitation_routing_keys = NULL, thread_id = NULL, their_verkey = NULL,
        their_endpoint = NULL, their_routing_keys = NULL, label = NULL, logo_url = NULL, goal = NULL,
        goal_code = NULL, failure_reason = NULL, problem_report = NULL
        """

    func insert(_ r: ConnectionRecord) throws {
        written?.insert(r.id)
        let values = try fields(r)
        try session.executeLater(
            """
            INSERT INTO aerie.connections (tenant_id, id, state, invitation_kind, my_did, my_verkey, their_did_sealed,
                handshake_protocol, sealed, invitation_id_hash, public_did_hash, first_recipient_key_hash,
                my_next_verkey, invitation_routing_keys, their_routing_keys)
            VALUES ($1::uuid, $2::uuid, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, NULL, NULL)
            """,
            [.text(tenantID.rawValue), .text(r.id.lowercasedString)] + values)
        if let made, case .bytes(let sealed) = values[Self.sealedField] { made.connection(r, sealedBytes: sealed.count) }
    }

    /// Marks the transaction as importing (transaction-local), which schema/0030's event trigger
    /// reads, inserts, and clears the mark, so a later `insert` in the same transaction logs as
    /// usual. All three are queued and travel with the transaction's next statement.
    func insertImported(_ r: ConnectionRecord) throws {
        try session.executeLater("SELECT set_config('aerie.imported_connection', 'on', true)", [])
        try insert(r)
        try session.executeLater("SELECT set_config('aerie.imported_connection', '', true)", [])
    }

    func get(_ id: UUID) throws -> ConnectionRecord? {
        try one("WHERE tenant_id = $1::uuid AND id = $2::uuid", [.text(id.lowercasedString)])
    }

    func getForUpdate(_ id: UUID) throws -> ConnectionRecord? {
        try one("WHERE tenant_id = $1::uuid AND id = $2::uuid FOR UPDATE", [.text(id.lowercasedString)])
    }

    /// The key's sealed secret as one more column, looked up by a probe of `tenant_keys`' primary
    /// key (its `verkey` is `COLLATE "C"`, see `recipientsSQL`).
    func getWithSealedKey(_ id: UUID) throws -> (record: ConnectionRecord, sealedSecret: [UInt8]?)? {
        let result = try session.query(
            """
            SELECT \(Self.columns), (SELECT k.sealed_secret FROM aerie.tenant_keys k
                WHERE k.tenant_id = connections.tenant_id AND k.verkey = connections.my_verkey COLLATE "C")
            FROM aerie.connections WHERE tenant_id = $1::uuid AND id = $2::uuid
            """,
            [.text(tenantID.rawValue), .text(id.lowercasedString)])
        guard result.rowCount > 0 else { return nil }
        return (try Self.record(result, 0, sealing: sealing), result.bytes(0, Self.columnCount))
    }

    func update(_ r: ConnectionRecord) throws -> Bool {
        try write(r, touching: true)
    }

    func updateQueued(_ r: ConnectionRecord) throws {
        written?.insert(r.id)
        made?.changed(r.id)
        try session.executeLater(
            Self.updateSQL(touching: true), [.text(tenantID.rawValue), .text(r.id.lowercasedString)] + (try fields(r)))
    }

    /// `touching`: sets `updated_at` (a change), or keeps it (only the storage form changes).
    private func write(_ r: ConnectionRecord, touching: Bool) throws -> Bool {
        written?.insert(r.id)
        made?.changed(r.id)
        return try session.execute(
            Self.updateSQL(touching: touching), [.text(tenantID.rawValue), .text(r.id.lowercasedString)] + (try fields(r))) == 1
    }

    private static func updateSQL(touching: Bool) -> String {
        """
        UPDATE aerie.connections SET state = $3, invitation_kind = $4, my_did = $5, my_verkey = $6, their_did_sealed = $7,
            handshake_protocol = $8, sealed = $9, invitation_id_hash = $10, public_did_hash = $11,
            first_recipient_key_hash = $12, my_next_verkey = $13, \(clearedColumns)\(touching ? ", updated_at = now()" : "")
        WHERE tenant_id = $1::uuid AND id = $2::uuid
        """
    }

    /// Only the filters given become conditions (`SQLConditions`), so every page is one probe of
    /// `connections_pkey` (of `connections_state` with a state) at the cursor, read in order up to
    /// `limit`, however many connections the tenant has. `connections.id` names the column: a
    /// bare `id` is the output column `id::text`, a sort of all the tenant's rows as text.
    func list(after afterId: UUID?, state: ConnectionRecord.State?, limit: Int) throws -> [ConnectionRecord] {
        var conditions = SQLConditions(parameters: [.text(tenantID.rawValue)])
        conditions.add("tenant_id = $1::uuid")
        conditions.add(afterId.map { .text($0.lowercasedString) }) { "id > \($0)::uuid" }
        conditions.add(state.map { .text($0.rawValue) }) { "state = \($0)::text" }
        let limit = conditions.parameter(.int(max(0, limit)))
        return try many("\(conditions.whereClause) ORDER BY connections.id LIMIT \(limit)", Array(conditions.parameters.dropFirst()))
    }

    /// Sealed rows match on the keyed hashes, rows of the previous form on their clear columns
    /// (`matchArms`).
    func findMatching(invitationId: String?, publicDid: String?, firstRecipientKey: String?) throws -> ConnectionRecord? {
        guard let (arms, parameters) = try matchArms(invitationId: invitationId, publicDid: publicDid, firstRecipientKey: firstRecipientKey)
        else { return nil }
        // Rows matching the invitation's @id first; without one, rows without one.
        let invitationMatch =
            invitationId == nil
            ? "CASE WHEN sealed IS NULL THEN invitation_id IS NULL ELSE invitation_id_hash IS NULL END"
            : "CASE WHEN sealed IS NULL THEN invitation_id IS NOT DISTINCT FROM $3::text ELSE invitation_id_hash IS NOT DISTINCT FROM $2 END"
        return try one(
            """
            WHERE tenant_id = $1::uuid AND state <> 'deleted' AND (\(arms))
            ORDER BY (\(invitationMatch)) DESC, created_at, id LIMIT 1
            """,
            parameters)
    }

    /// `findMatching`'s question as a queued check (schema/0036): the transaction fails there,
    /// with `MatchingConnection.exists` (`PostgresError` maps the domain's check violation),
    /// when a connection matches; nothing after it runs.
    func requireNoMatch(invitationId: String?, publicDid: String?, firstRecipientKey: String?) throws {
        guard let (arms, parameters) = try matchArms(invitationId: invitationId, publicDid: publicDid, firstRecipientKey: firstRecipientKey)
        else { return }
        try session.executeLater(
            """
            SELECT (NOT EXISTS (SELECT FROM aerie.connections
                WHERE tenant_id = $1::uuid AND state <> 'deleted' AND (\(arms))))::aerie.no_matching_connection
            """,
            [.text(tenantID.rawValue)] + parameters)
    }

    /// The check of schema/0037: `FOR UPDATE` waits for a transaction holding the row, then
    /// looks at the row as that one left it, so a change committed meanwhile fails the check.
    /// A record whose `updatedAt` is its `createdAt` is one never changed since its insert: read
    /// so, or kept as inserted (`RecentRecipients`, which knows neither time as the database
    /// wrote it); its row must still be unchanged (`updated_at = created_at`: every change sets
    /// `updated_at` to a later transaction's `now()`).
    func lockAsRead(_ record: ConnectionRecord) throws {
        let (unchanged, parameters) = Self.asRead(record, parameterFrom: 3)
        try session.executeLater(
            """
            SELECT (EXISTS (SELECT FROM aerie.connections WHERE tenant_id = $1::uuid AND id = $2::uuid AND \(unchanged)
                FOR UPDATE))::aerie.connection_as_read
            """,
            [.text(tenantID.rawValue), .text(record.id.lowercasedString)] + parameters)
    }

    /// The condition that a row of `aerie.connections` is still as `record` was read: the same
    /// state and `updated_at` (see `lockAsRead` for a record as inserted), with its parameters
    /// numbered from `$first`. The one spelling of "as read", for `lockAsRead` and the mailbox's
    /// check of a remembered recipient (`PostgresMailboxRepository.claimQueued`).
    static func asRead(_ record: ConnectionRecord, parameterFrom first: Int) -> (condition: String, parameters: [SQLValue]) {
        let state = "state = $\(first)"
        if record.updatedAt == record.createdAt {
            return ("\(state) AND updated_at = created_at", [.text(record.state.rawValue)])
        }
        return (
            "\(state) AND (extract(epoch FROM updated_at) * 1000000)::int8 = $\(first + 1)::int8",
            [.text(record.state.rawValue), .text(String(Int64((record.updatedAt.timeIntervalSince1970 * 1_000_000).rounded())))]
        )
    }

    /// The match on the keys given, as one condition on their lookup hashes (sealed rows) or
    /// clear columns (rows of the previous form), and its parameters from `$2` on ($1 is the
    /// tenant); nil when no key is given. Only the keys given are in the statement, never a NULL
    /// parameter: with NULLs the planner could drop arms from a custom plan only, so PostgreSQL
    /// kept planning the statement again at most calls instead of using its generic plan (one
    /// variant per set of keys given).
    private func matchArms(invitationId: String?, publicDid: String?, firstRecipientKey: String?) throws
        -> (condition: String, parameters: [SQLValue])?
    {
        var arms: [String] = []
        var parameters: [SQLValue] = []
        for (value, column) in [(invitationId, "invitation_id"), (publicDid, "public_did"), (firstRecipientKey, "first_recipient_key")] {
            guard let value else { continue }
            let first = parameters.count + 2  // $1 is the tenant
            arms.append("\(column)_hash = $\(first) OR \(column) = $\(first + 1)::text")
            parameters += [try hash(value, column), .text(value)]
        }
        return arms.isEmpty ? nil : (arms.joined(separator: " OR "), parameters)
    }

    func lockInvitation(_ invitationId: String) throws {
        // A transaction-level advisory lock: released by COMMIT or ROLLBACK, also when the
        // process dies. A hash collision only serializes two unrelated accepts. Keyed by the
        // lookup hash, so not even pg_locks shows anything derived from the clear `@id`.
        let key = try sealing.hash(invitationId, column: "invitation_id").map(JSONColumn.hex) ?? ""
        try session.executeLater(
            "SELECT pg_advisory_xact_lock(hashtextextended('aerie.invitation:' || $1 || ':' || $2, 0))",
            [.text(tenantID.rawValue), .text(key)])
    }

    func findByMyVerkey(_ verkey: String, lock: Bool) throws -> ConnectionRecord? {
        try one(
            "WHERE tenant_id = $1::uuid AND (my_verkey = $2 OR my_next_verkey = $2)\(lock ? " FOR UPDATE" : "")", [.text(verkey)])
    }

    /// The keys and the connections of the recipients in one statement: the connection's columns
    /// first (`columns`, NULL for a key of no connection), then the key's verkey and sealed secret.
    func inboundRecipient(verkeys: [String]) throws -> InboundRecipient? {
        guard !verkeys.isEmpty else { return nil }
        guard verkeys.count <= PostgresKeyRepository.maxLookup else {
            throw AerieError.invalidParams(
                "too many keys to look up at once (at most \(PostgresKeyRepository.maxLookup))", field: "verkeys")
        }
        let result = try session.query(
            "\(Self.recipientsSQL(tenant: "$1::uuid", verkeys: "$2::text[]"))", [.text(tenantID.rawValue), .textArray(verkeys)])
        return try Self.firstRecipient(result, in: verkeys, sealing: sealing)
    }

    /// The tenant's keys among `verkeys` with their connections: each row the connection's
    /// columns (`columns`, NULL for a key of no connection), then the verkey and the sealed
    /// secret. `tenant_keys.verkey` is `COLLATE "C"` and `connections.my_verkey` the
    /// default collation: compared as they are, the comparison matches no index on `my_verkey`
    /// and the join read every connection of the tenant; in the column's own collation it is
    /// one probe of `connections_my_verkey`. A key of a rotation under way (`my_next_verkey`)
    /// finds its connection too, with a probe of its own index.
    static func recipientsSQL(tenant: String, verkeys: String) -> String {
        """
        SELECT c.*, k.verkey, k.sealed_secret FROM aerie.tenant_keys k
        LEFT JOIN LATERAL (
            (SELECT \(columns) FROM aerie.connections
            WHERE tenant_id = k.tenant_id AND my_verkey = k.verkey COLLATE "default")
            UNION ALL
            (SELECT \(columns) FROM aerie.connections
            WHERE tenant_id = k.tenant_id AND my_next_verkey = k.verkey COLLATE "default")
            LIMIT 1
        ) c ON true
        WHERE k.tenant_id = \(tenant) AND k.verkey = ANY(\(verkeys))
        """
    }

    /// The row of `recipientsSQL`'s answer whose verkey comes first in `verkeys`.
    static func firstRecipient(_ result: PostgresResult, in verkeys: [String], sealing: RowSealing) throws -> InboundRecipient? {
        var found: [String: InboundRecipient] = [:]
        for row in 0..<result.rowCount {
            guard let verkey = result.string(row, columnCount), let sealed = result.bytes(row, columnCount + 1) else { continue }
            found[verkey] = InboundRecipient(
                verkey: verkey, sealedSecret: sealed,
                connection: result.string(row, 0) == nil ? nil : try record(result, row, sealing: sealing))
        }
        return verkeys.lazy.compactMap { found[$0] }.first
    }

    func findByMyDid(_ did: String) throws -> ConnectionRecord? {
        try one("WHERE tenant_id = $1::uuid AND my_did = $2", [.text(did)])
    }

    func delete(_ id: UUID) throws -> Bool {
        written?.insert(id)
        made?.changed(id)
        return try session.execute(
            "DELETE FROM aerie.connections WHERE tenant_id = $1::uuid AND id = $2::uuid",
            [.text(tenantID.rawValue), .text(id.lowercasedString)]) == 1
    }

    /// Rewrites up to `limit` rows of a previous form (all clear, or sealed but for their DID)
    /// sealed; answers how many.
    func sealClearRows(limit: Int) throws -> Int {
        let rows = try many(
            "WHERE tenant_id = $1::uuid AND (sealed IS NULL OR their_did IS NOT NULL) LIMIT $2 FOR UPDATE SKIP LOCKED",
            [.int(max(0, limit))])
        for row in rows { _ = try write(row, touching: false) }
        return rows.count
    }

    // MARK: - Rows

    private func one(_ clause: String, _ parameters: [SQLValue]) throws -> ConnectionRecord? {
        try many(clause, parameters).first
    }

    private func many(_ clause: String, _ parameters: [SQLValue]) throws -> [ConnectionRecord] {
        let result = try session.query(
            "SELECT \(Self.columns) FROM aerie.connections \(clause)", [.text(tenantID.rawValue)] + parameters)
        return try (0..<result.rowCount).map { try Self.record(result, $0, sealing: sealing) }
    }

    private func hash(_ value: String?, _ column: String) throws -> SQLValue {
        try sealing.hash(value, column: column).map(SQLValue.bytes) ?? .null
    }

    /// Where `fields` puts the sealed row ($9).
    private static let sealedField = 6

    /// Parameters $3...$13 of insert and update.
    private func fields(_ r: ConnectionRecord) throws -> [SQLValue] {
        let sealed: [String: JSONValue] = [
            "invitation": r.invitation, "invitationId": .optional(r.invitationId), "publicDid": .optional(r.publicDid),
            "firstRecipientKey": .optional(r.firstRecipientKey), "invitationEndpoint": .optional(r.invitationEndpoint),
            "invitationRoutingKeys": .array(r.invitationRoutingKeys.map(JSONValue.string)),
            "threadId": .optional(r.threadId), "theirVerkey": .optional(r.theirVerkey),
            "theirEndpoint": .optional(r.theirEndpoint), "theirRoutingKeys": .array(r.theirRoutingKeys.map(JSONValue.string)),
            "label": .optional(r.label), "logoUrl": .optional(r.logoUrl), "goal": .optional(r.goal),
            "goalCode": .optional(r.goalCode), "failureReason": .optional(r.failureReason),
            "problemReport": r.problemReport ?? .null, "role": .optional(r.role?.rawValue),
            "multiUse": r.multiUse.map(JSONValue.bool) ?? .null, "alias": .optional(r.alias),
            "rotation": r.rotation.map { ["did": .string($0.did), "messageId": .string($0.messageId)] } ?? .null,
        ]
        return [
            .text(r.state.rawValue), .text(r.invitationKind), .optionalText(r.myDid), .optionalText(r.myVerkey),
            try sealing.seal(r.theirDid, column: "their_did", row: r.id.lowercasedString).map(SQLValue.bytes) ?? .null,
            .optionalText(r.handshakeProtocol),
            .bytes(try sealing.seal(sealed, row: r.id.lowercasedString)),
            try hash(r.invitationId, "invitation_id"), try hash(r.publicDid, "public_did"),
            try hash(r.firstRecipientKey, "first_recipient_key"), .optionalText(r.rotation?.verkey),
        ]
    }

    private static func record(_ r: PostgresResult, _ row: Int, sealing: RowSealing) throws -> ConnectionRecord {
        guard let idText = r.string(row, 0), let id = UUID(text: idText),
            let state = r.string(row, 1).flatMap(ConnectionRecord.State.init(rawValue:)),
            let createdAt = r.date(microseconds: row, 22), let updatedAt = r.date(microseconds: row, 23)
        else { throw AerieError.internalError(details: "malformed row in aerie.connections") }
        var record = ConnectionRecord(
            id: id, state: state, invitation: .null, invitationKind: r.string(row, 3) ?? "",
            myDid: r.string(row, 9), myVerkey: r.string(row, 10),
            theirDid: try r.bytes(row, 26).map { try sealing.open($0, column: "their_did", row: idText) } ?? r.string(row, 12),
            handshakeProtocol: r.string(row, 24), createdAt: createdAt, updatedAt: updatedAt)
        if let sealed = r.bytes(row, sealedColumn) {
            let f = try sealing.open(sealed, row: idText)
            record.invitation = f.json("invitation") ?? .null
            record.invitationId = f.string("invitationId")
            record.publicDid = f.string("publicDid")
            record.firstRecipientKey = f.string("firstRecipientKey")
            record.invitationEndpoint = f.string("invitationEndpoint")
            record.invitationRoutingKeys = try f.strings("invitationRoutingKeys")
            record.threadId = f.string("threadId")
            record.theirVerkey = f.string("theirVerkey")
            record.theirEndpoint = f.string("theirEndpoint")
            record.theirRoutingKeys = try f.strings("theirRoutingKeys")
            record.label = f.string("label")
            record.logoUrl = f.string("logoUrl")
            record.goal = f.string("goal")
            record.goalCode = f.string("goalCode")
            record.failureReason = f.string("failureReason")
            record.problemReport = f.json("problemReport")
            record.role = f.string("role").flatMap(ConnectionRecord.Role.init(rawValue:))
            if case .bool(let multiUse)? = f.json("multiUse") { record.multiUse = multiUse }
            record.alias = f.string("alias")
            if let rotation = f.json("rotation"), let did = rotation["did"]?.stringValue,
                let messageId = rotation["messageId"]?.stringValue, let verkey = r.string(row, 27)
            {
                record.rotation = PendingRotation(did: did, verkey: verkey, messageId: messageId)
            }
        } else {
            record.invitation = try JSONColumn.decode(r.string(row, 2) ?? "null")
            record.invitationId = r.string(row, 4)
            record.publicDid = r.string(row, 5)
            record.firstRecipientKey = r.string(row, 6)
            record.invitationEndpoint = r.string(row, 7)
            record.invitationRoutingKeys = try JSONColumn.decodeStrings(r.string(row, 8) ?? "[]")
            record.threadId = r.string(row, 11)
            record.theirVerkey = r.string(row, 13)
            record.theirEndpoint = r.string(row, 14)
            record.theirRoutingKeys = try JSONColumn.decodeStrings(r.string(row, 15) ?? "[]")
            record.label = r.string(row, 16)
            record.logoUrl = r.string(row, 17)
            record.goal = r.string(row, 18)
            record.goalCode = r.string(row, 19)
            record.failureReason = r.string(row, 20)
            record.problemReport = try r.string(row, 21).map { try JSONColumn.decode($0) }
        }
        return record
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
        try JSONValue(storedText: text)
    }

    /// Lowercase hex (the store has no crypto module to borrow it from).
    static func hex(_ bytes: [UInt8]) -> String {
        let digits = Array("0123456789abcdef".utf8)
        var out = [UInt8]()
        out.reserveCapacity(bytes.count * 2)
        for b in bytes {
            out.append(digits[Int(b >> 4)])
            out.append(digits[Int(b & 0x0f)])
        }
        return String(decoding: out, as: UTF8.self)
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
