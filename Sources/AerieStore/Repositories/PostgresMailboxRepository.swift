import AerieCore
import Foundation

/// `aerie.mailbox`: decrypted inbound messages, one row per (recipient verkey, `@id`).
/// Sealed (`RowSealing`): payload, sender verkey, thread id, and on its own a sent message's
/// delivery error (`delivery_error_sealed`: it names the peer's URL). Clear: uid, connection, our own
/// recipient verkey (routes the row to its connection), the message `@id` (exactly-once:
/// unique with the recipient verkey), `@type` (the NOTIFY and the type filter), status, times,
/// handling state.
struct PostgresMailboxRepository: MailboxRepository {
    let tenantID: TenantID
    let session: DatabaseSession
    let sealing: RowSealing

    /// Columns 0...9 as in the previous release (its rows are read from them), 10 `sealed`,
    /// 11 `direction`, 12 `delivery_error` (a previous release's clear form), 13
    /// `delivery_error_sealed`.
    private static let columns = """
        uid::text, connection_id::text, recipient_verkey, sender_verkey, message_id, type, thread_id, status,
        payload::text, (extract(epoch FROM received_at) * 1000000)::int8, sealed, direction, delivery_error,
        delivery_error_sealed
        """

    /// A sent message's delivery error, sealed for its row (`uid`).
    static func sealDeliveryError(_ error: String, uid: String, sealing: RowSealing) throws -> [UInt8]? {
        try sealing.table("mailbox").seal(error, column: "delivery_error", row: uid)
    }

    /// The delivery error of row `uid`: its sealed form, else a previous release's clear one.
    private func deliveryError(sealed: [UInt8]?, clear: String?, uid: String) throws -> String? {
        guard let sealed else { return clear }
        return try sealing.open(sealed, column: "delivery_error", row: uid)
    }

    func insert(_ m: MailboxMessage) throws -> (uid: UUID, inserted: Bool) {
        let result = try session.query(
            """
            INSERT INTO aerie.mailbox (tenant_id, uid, connection_id, recipient_verkey, message_id, type, status, sealed)
            VALUES ($1::uuid, $2::uuid, $3::uuid, $4, $5, $6, $7, $8)
            ON CONFLICT (tenant_id, recipient_verkey, message_id) DO NOTHING
            RETURNING uid::text
            """,
            try insertParameters(m))
        if result.rowCount == 1 { return (m.uid, true) }
        let existing = try session.query(
            "SELECT uid::text FROM aerie.mailbox WHERE tenant_id = $1::uuid AND recipient_verkey = $2 AND message_id = $3",
            [.text(tenantID.rawValue), .text(m.recipientVerkey), .text(m.messageId)])
        guard existing.rowCount == 1, let uid = existing.uuid(0, 0) else {
            throw AerieError.internalError(details: "mailbox insert conflicted but no row was found")
        }
        return (uid, false)
    }

    func claim(_ m: MailboxMessage) throws -> InboundClaim {
        let inserted = try session.query(Self.claimSQL, try insertParameters(m))
        if inserted.rowCount == 1 { return .new(m.uid) }
        let existing = try session.query(
            """
            SELECT uid::text, handled_at IS NOT NULL FROM aerie.mailbox
            WHERE tenant_id = $1::uuid AND recipient_verkey = $2 AND message_id = $3 FOR UPDATE
            """,
            [.text(tenantID.rawValue), .text(m.recipientVerkey), .text(m.messageId)])
        guard existing.rowCount == 1, let uid = existing.uuid(0, 0) else {
            throw AerieError.internalError(details: "mailbox claim conflicted but no row was found")
        }
        if existing.bool(0, 1) == true { return .alreadyHandled(uid) }
        _ = try session.execute(
            """
            UPDATE aerie.mailbox SET handled_at = now(), handle_error = NULL, next_handle_at = NULL
            WHERE tenant_id = $1::uuid AND uid = $2::uuid
            """,
            [.text(tenantID.rawValue), .text(uid.lowercasedString)])
        return .resumed(uid)
    }

    func claimQueued(_ m: MailboxMessage, asRead: RecipientAsRead?) throws {
        var sql = Self.claimQueuedSQL
        var parameters = try insertParameters(m)
        if let asRead {
            // A remembered recipient (`InboundRoute.opensWithRememberedRecipient`), checked in
            // the insert itself against the rows as they are now: the connection as read (locked
            // against a delete until the commit, so none can empty its mailbox meanwhile), our key
            // its key and still held, the tenant active with the data key as read. Else the cast
            // fails (schema/0037's domain) and nothing is stored.
            let (unchanged, checked) = PostgresConnectionRepository.asRead(asRead.connection, parameterFrom: 10)
            sql = """
                INSERT INTO aerie.mailbox (tenant_id, uid, connection_id, recipient_verkey, message_id, type, status, sealed,
                    handled_at)
                SELECT $1::uuid, $2::uuid, $3::uuid, $4::text, $5::text, $6::text, $7::text, $8::bytea, now()
                WHERE (EXISTS (SELECT FROM aerie.connections
                    WHERE tenant_id = $1::uuid AND id = $3::uuid AND my_verkey = $4::text AND \(unchanged)
                        AND EXISTS (SELECT FROM aerie.tenant_keys k WHERE k.tenant_id = $1::uuid AND k.verkey = $4::text)
                        AND EXISTS (SELECT FROM aerie.tenants t
                            WHERE t.id = $1::uuid AND t.status = 'active' AND t.data_key_wrapped = $9::bytea)
                    FOR KEY SHARE))::aerie.connection_as_read
                """
            parameters += [.bytes(asRead.wrappedDataKey)] + checked
        }
        try session.executeLater(sql, parameters) { error in
            error.code == .conflict && !ConnectionAsRead.changed(error) ? InboundClaim.storedBefore : error
        }
    }

    func recordHandlingFailure(_ m: MailboxMessage, error: String, maxAttempts: Int, backoffSeconds: Int) throws
        -> (attempts: Int, connectionId: UUID?)?
    {
        let result = try session.query(
            """
            INSERT INTO aerie.mailbox (tenant_id, uid, connection_id, recipient_verkey, message_id, type, status, sealed,
                handled_at, handle_attempts, handle_error, next_handle_at)
            VALUES ($1::uuid, $2::uuid, $3::uuid, $4, $5, $6, $7, $8, NULL, 1, $9,
                CASE WHEN $10::int <= 1 THEN NULL ELSE now() + make_interval(secs => $11::int) END)
            ON CONFLICT (tenant_id, recipient_verkey, message_id) DO UPDATE
                SET handle_attempts = aerie.mailbox.handle_attempts + 1, handle_error = EXCLUDED.handle_error,
                    next_handle_at = CASE WHEN aerie.mailbox.handle_attempts + 1 >= $10::int THEN NULL
                        ELSE now() + make_interval(secs => $11::int * (2 ^ least(aerie.mailbox.handle_attempts, 16)))
                    END
                WHERE aerie.mailbox.handled_at IS NULL
            RETURNING handle_attempts, connection_id::text
            """,
            try insertParameters(m) + [.text(String(error.prefix(1000))), .int(maxAttempts), .int(backoffSeconds)])
        guard result.rowCount == 1, let attempts = result.string(0, 0).flatMap({ Int($0) }) else { return nil }
        return (attempts, result.uuid(0, 1))
    }

    private static let claimSQL = """
        INSERT INTO aerie.mailbox (tenant_id, uid, connection_id, recipient_verkey, message_id, type, status, sealed,
            handled_at)
        VALUES ($1::uuid, $2::uuid, $3::uuid, $4, $5, $6, $7, $8, now())
        ON CONFLICT (tenant_id, recipient_verkey, message_id) DO NOTHING RETURNING uid::text
        """

    /// `claimSQL` without its conflict clause: a stored copy fails the statement (and the transaction).
    private static let claimQueuedSQL = """
        INSERT INTO aerie.mailbox (tenant_id, uid, connection_id, recipient_verkey, message_id, type, status, sealed,
            handled_at)
        VALUES ($1::uuid, $2::uuid, $3::uuid, $4, $5, $6, $7, $8, now())
        """

    /// $1...$8 of every insert: the clear columns, then the sealed ones.
    private func insertParameters(_ m: MailboxMessage) throws -> [SQLValue] {
        let uid = m.uid.lowercasedString
        return [
            .text(tenantID.rawValue), .text(uid), .optionalText(m.connectionId?.lowercasedString),
            .text(m.recipientVerkey), .text(m.messageId), .text(m.type), .text(m.status),
            .bytes(try sealing.seal(Self.sealedFields(m), row: uid)),
        ]
    }

    private static func sealedFields(_ m: MailboxMessage) -> [String: JSONValue] {
        ["payload": m.payload, "senderVerkey": .optional(m.senderVerkey), "threadId": .optional(m.threadId)]
    }

    /// Rewrites up to `limit` rows of a previous form (all clear, or sealed but for the delivery
    /// error) sealed; answers how many.
    func sealClearRows(limit: Int) throws -> Int {
        let result = try session.query(
            """
            SELECT \(Self.columns) FROM aerie.mailbox WHERE tenant_id = $1::uuid AND (sealed IS NULL OR delivery_error IS NOT NULL)
            LIMIT $2 FOR UPDATE SKIP LOCKED
            """,
            [.text(tenantID.rawValue), .int(max(0, limit))])
        for row in 0..<result.rowCount {
            let m = try message(result, row)
            let uid = m.uid.lowercasedString
            try session.execute(
                """
                UPDATE aerie.mailbox SET sealed = $3, payload = NULL, sender_verkey = NULL, thread_id = NULL,
                    delivery_error = NULL, delivery_error_sealed = $4
                WHERE tenant_id = $1::uuid AND uid = $2::uuid
                """,
                [
                    .text(tenantID.rawValue), .text(uid), .bytes(try sealing.seal(Self.sealedFields(m), row: uid)),
                    try m.deliveryError.flatMap { try Self.sealDeliveryError($0, uid: uid, sealing: sealing) }.map(SQLValue.bytes) ?? .null,
                ])
        }
        return result.rowCount
    }

    func get(_ uid: UUID) throws -> MailboxMessage? {
        let result = try session.query(
            "SELECT \(Self.columns) FROM aerie.mailbox WHERE tenant_id = $1::uuid AND uid = $2::uuid",
            [.text(tenantID.rawValue), .text(uid.lowercasedString)])
        return try (0..<result.rowCount).map { try message(result, $0) }.first
    }

    /// A sent message's record (`direction = 'sent'`), sealed like every other row.
    func insertSent(_ m: MailboxMessage) throws -> Bool {
        let result = try session.query(
            """
            INSERT INTO aerie.mailbox (tenant_id, uid, connection_id, recipient_verkey, message_id, type, status, sealed, direction)
            VALUES ($1::uuid, $2::uuid, $3::uuid, $4, $5, $6, $7, $8, 'sent')
            ON CONFLICT (tenant_id, recipient_verkey, message_id) DO NOTHING RETURNING uid::text
            """,
            try insertParameters(m))
        return result.rowCount == 1
    }

    /// `insertSent`'s insert behind the check of schema/0058: inserted now, or this very row
    /// stored before; another row with the @id fails the transaction with `alreadySent`.
    func insertSentQueued(_ m: MailboxMessage) throws {
        let messageId = m.messageId
        try session.executeLater(
            """
            WITH inserted AS (
                INSERT INTO aerie.mailbox (tenant_id, uid, connection_id, recipient_verkey, message_id, type, status, sealed, direction)
                VALUES ($1::uuid, $2::uuid, $3::uuid, $4, $5, $6, $7, $8, 'sent')
                ON CONFLICT DO NOTHING RETURNING uid)
            SELECT (EXISTS (SELECT FROM inserted)
                OR EXISTS (SELECT FROM aerie.mailbox WHERE tenant_id = $1::uuid AND uid = $2::uuid))::aerie.sent_once
            """,
            try insertParameters(m),
            mapError: { $0.details?.contains("\"sent_once_check\"") == true ? MailboxMessage.alreadySent(messageId) : $0 })
    }

    /// The first received message of `type` on the connection whose thread is `threadId`. The
    /// thread id is sealed, so the connection's recent messages of that type (a ping's
    /// responses: few) are opened and compared here.
    func receivedReply(connectionId: UUID, threadId: String, type: String) throws -> MailboxMessage? {
        let result = try session.query(
            """
            SELECT \(Self.columns) FROM aerie.mailbox
            WHERE tenant_id = $1::uuid AND connection_id = $2::uuid AND type = $3 AND direction = 'received'
            ORDER BY received_at DESC, uid DESC LIMIT 200
            """,
            [.text(tenantID.rawValue), .text(connectionId.lowercasedString), .text(type)])
        for row in (0..<result.rowCount).reversed() {
            let candidate = try message(result, row)
            if candidate.threadId == threadId { return candidate }
        }
        return nil
    }

    func list(connectionId: UUID, status: String?, type: String?, limit: Int) throws -> [MailboxMessage] {
        let result = try session.query(
            """
            SELECT \(Self.columns) FROM aerie.mailbox
            WHERE tenant_id = $1::uuid AND connection_id = $2::uuid AND ($3::text IS NULL OR status = $3::text)
              AND ($4::text IS NULL OR type = $4::text)
            ORDER BY received_at, uid LIMIT $5
            """,
            [
                .text(tenantID.rawValue), .text(connectionId.lowercasedString), .optionalText(status),
                .optionalText(type), .int(max(0, limit)),
            ])
        return try (0..<result.rowCount).map { try message(result, $0) }
    }

    func updateStatus(_ uid: UUID, to status: String) throws -> Bool {
        try session.execute(Self.updateStatusSQL, [.text(tenantID.rawValue), .text(uid.lowercasedString), .text(status)]) == 1
    }

    func updateStatusQueued(_ uid: UUID, to status: String) throws {
        try session.executeLater(Self.updateStatusSQL, [.text(tenantID.rawValue), .text(uid.lowercasedString), .text(status)])
    }

    private static let updateStatusSQL = "UPDATE aerie.mailbox SET status = $3 WHERE tenant_id = $1::uuid AND uid = $2::uuid"

    func deleteAll(connectionId: UUID, recipientVerkey: String?) throws -> Int {
        try session.execute(
            """
            DELETE FROM aerie.mailbox
            WHERE tenant_id = $1::uuid AND (connection_id = $2::uuid OR recipient_verkey = $3::text)
            """,
            [.text(tenantID.rawValue), .text(connectionId.lowercasedString), .optionalText(recipientVerkey)])
    }

    /// What `download` lists, read in binary format (`binaryResults`): 0 uid, 1 message_id, 2 type,
    /// 3 thread_id (clear rows), 4 status, 5 payload (clear rows), 6 received_at, 7 sealed,
    /// 8 direction, 9 delivery_error (clear rows), 10 our DID, 11 theirs (clear rows), 12 theirs
    /// sealed, 13 the connection's id (the row its DID is sealed for), 14 delivery_error sealed.
    /// The server sends the sealed bytes,
    /// the uid and the time as they are, where as text it wrote them in hex, as a uuid's text
    /// and as a computed number, and this side parsed each back.
    private static let downloadColumns = """
        m.uid, m.message_id, m.type, m.thread_id, m.status, m.payload::text, m.received_at, m.sealed, m.direction,
        m.delivery_error, c.my_did, c.their_did, c.their_did_sealed, c.id, m.delivery_error_sealed
        """

    /// A message belongs to the connection it was linked to, or, when stored before the link was
    /// known, to the connection whose pairwise verkey it was packed to.
    private static let connectionJoin = """
        JOIN aerie.connections c ON c.tenant_id = m.tenant_id
            AND (c.id = m.connection_id OR (m.connection_id IS NULL AND c.my_verkey = m.recipient_verkey))
        """

    /// One statement per combination of the filters present, with the limit in its text (an
    /// `Int`): a statement whose every filter is `$n IS NULL OR ...` was planned afresh at each
    /// call (PostgreSQL kept custom plans for it), which cost the database as much as running it.
    /// These few statements settle on their cached generic plans.
    func download(_ q: MailboxQuery) throws -> [MailboxEntry] {
        var parameters: [SQLValue] = [.text(tenantID.rawValue), .textArray(q.statuses)]
        var filters = ""
        if let uids = q.uids {
            parameters.append(.textArray(uids.map { $0.lowercasedString }))
            filters += " AND m.uid = ANY($\(parameters.count)::uuid[])"
        }
        if let dids = q.pairwiseDids {
            parameters.append(.textArray(dids))
            filters += " AND c.my_did = ANY($\(parameters.count)::text[])"
        }
        if let after = q.after {
            parameters += [.text(String(after.receivedAtMicros)), .text(after.uid.lowercasedString)]
            filters +=
                " AND (m.received_at, m.uid) > ('epoch'::timestamptz + $\(parameters.count - 1)::int8 * interval '1 microsecond', $\(parameters.count)::uuid)"
        }
        let result = try session.query(
            """
            SELECT \(Self.downloadColumns) FROM aerie.mailbox m
            \(Self.connectionJoin)
            WHERE m.tenant_id = $1::uuid AND c.my_did IS NOT NULL AND m.status = ANY($2::text[])\(filters)
            ORDER BY m.received_at, m.uid LIMIT \(max(0, q.limit))
            """,
            parameters, genericPlan: true, binaryResults: true)
        var entries: [MailboxEntry] = []
        entries.reserveCapacity(result.rowCount)
        var repeats = Repeats()
        for row in 0..<result.rowCount { entries.append(try listed(result, row, repeats: &repeats)) }
        return entries
    }

    /// The previous row's strings of the columns a page mostly repeats.
    private struct Repeats {
        var type: String?
        var pairwiseDid: String?
        var theirDid: String?
        /// The sealed DID `theirDid` was opened from: the next row of the same connection has the
        /// same bytes, and is not opened again.
        var theirDidSealed: [UInt8]?
    }

    /// A row of `downloadColumns`. A sealed row's payload is the sealed object's own text of it
    /// (written by the compact serializer, so it is what `payload.jsonString` gives), found by
    /// `JSONObjectText` without parsing it; a clear row's is parsed from its jsonb text.
    ///
    /// The columns a page mostly repeats (the type, the connection's DIDs) are taken from the
    /// previous row's strings when their bytes are the same: one string shared instead of one
    /// allocated and freed per row (and compared by identity when the page is grouped).
    private func listed(_ r: PostgresResult, _ row: Int, repeats: inout Repeats) throws -> MailboxEntry {
        func repeated(_ column: Int, _ earlier: inout String?) -> String? {
            guard let value = r.raw(row, column) else { return nil }
            if let known = earlier, known.utf8.withContiguousStorageIfAvailable({ stored in
                stored.count == value.count && (value.isEmpty || memcmp(stored.baseAddress!, value.baseAddress!, value.count) == 0)
            }) == true {
                return known
            }
            let string = String(decoding: value, as: UTF8.self)
            earlier = string
            return string
        }
        guard let uid = r.uuid(row, 0), let micros = r.timestampMicros(row, 6),
            let pairwiseDid = repeated(10, &repeats.pairwiseDid)
        else {
            throw AerieError.internalError(details: "malformed row in aerie.mailbox")
        }
        let threadId: String?
        let payloadJSON: String
        if let sealed = r.bytes(row, 7) {
            let f = try sealing.openText(sealed, row: uid.lowercasedString)
            threadId = f.string("threadId")
            payloadJSON = f.rawBytes("payload").map { String(decoding: $0, as: UTF8.self) } ?? "null"
        } else {
            threadId = r.string(row, 3)
            payloadJSON = try JSONColumn.decode(r.string(row, 5) ?? "null").jsonString
        }
        return MailboxEntry(
            uid: uid, messageId: r.string(row, 1) ?? "", type: repeated(2, &repeats.type) ?? "", threadId: threadId,
            status: r.string(row, 4) ?? "", direction: r.string(row, 8).flatMap(MailboxMessage.Direction.init(rawValue:)) ?? .received,
            deliveryError: try deliveryError(sealed: r.bytes(row, 14), clear: r.string(row, 9), uid: uid.lowercasedString),
            pairwiseDid: pairwiseDid, theirDid: try theirDid(r, row, repeats: &repeats),
            receivedAtMicros: micros, payloadJSON: payloadJSON)
    }

    /// The connection's DID of a `downloadColumns` row: opened (once per run of rows of the same
    /// connection), or a previous release's clear one.
    private func theirDid(_ r: PostgresResult, _ row: Int, repeats: inout Repeats) throws -> String? {
        guard let sealed = r.bytes(row, 12) else { return r.string(row, 11) }
        if sealed == repeats.theirDidSealed, let known = repeats.theirDid { return known }
        guard let connection = r.uuid(row, 13) else { throw AerieError.internalError(details: "malformed row in aerie.mailbox") }
        let did = try sealing.table("connections").open(sealed, column: "their_did", row: connection.lowercasedString)
        repeats.theirDid = did
        repeats.theirDidSealed = sealed
        return did
    }

    func updateStatus(_ uids: [UUID], pairwiseDid: String, to status: String) throws -> [UUID] {
        guard !uids.isEmpty else { return [] }
        let result = try session.query(
            """
            UPDATE aerie.mailbox m SET status = $4
            FROM aerie.connections c
            WHERE m.tenant_id = $1::uuid AND m.uid = ANY($2::uuid[]) AND c.tenant_id = m.tenant_id AND c.my_did = $3
              AND m.direction = 'received'
              AND (c.id = m.connection_id OR (m.connection_id IS NULL AND c.my_verkey = m.recipient_verkey))
            RETURNING m.uid::text
            """,
            [.text(tenantID.rawValue), .textArray(uids.map { $0.lowercasedString }), .text(pairwiseDid), .text(status)])
        return (0..<result.rowCount).compactMap { result.uuid($0, 0) }
    }

    func purgeReviewed(receivedBefore date: Date, limit: Int) throws -> Int {
        try session.execute(
            """
            DELETE FROM aerie.mailbox WHERE tenant_id = $1::uuid AND uid IN (
                SELECT uid FROM aerie.mailbox
                WHERE tenant_id = $1::uuid AND status = 'MS-106' AND received_at < 'epoch'::timestamptz + $2::int8 * interval '1 microsecond'
                LIMIT $3)
            """,
            [.text(tenantID.rawValue), .text(String(Int64(date.timeIntervalSince1970 * 1_000_000))), .int(max(0, limit))])
    }

    /// A row of `columns` (or `joinedColumns`): sealed, or of the previous release's clear form.
    private func message(_ r: PostgresResult, _ row: Int) throws -> MailboxMessage {
        guard let uidText = r.string(row, 0) else { throw AerieError.internalError(details: "malformed row in aerie.mailbox") }
        var message = try clearFields(r, row)
        if let sealed = r.bytes(row, 10) {
            let f = try sealing.open(sealed, row: uidText)
            message.payload = f.json("payload") ?? .null
            message.senderVerkey = f.string("senderVerkey")
            message.threadId = f.string("threadId")
        } else {
            message.payload = try JSONColumn.decode(r.string(row, 8) ?? "null")
            message.senderVerkey = r.string(row, 3)
            message.threadId = r.string(row, 6)
        }
        return message
    }

    /// The columns every row has in clear; payload, sender and thread are left empty.
    private func clearFields(_ r: PostgresResult, _ row: Int) throws -> MailboxMessage {
        guard let uid = r.uuid(row, 0), let receivedAt = r.date(microseconds: row, 9) else {
            throw AerieError.internalError(details: "malformed row in aerie.mailbox")
        }
        return MailboxMessage(
            uid: uid, connectionId: r.uuid(row, 1),
            recipientVerkey: r.string(row, 2) ?? "", senderVerkey: nil, messageId: r.string(row, 4) ?? "",
            type: r.string(row, 5) ?? "", threadId: nil, status: r.string(row, 7) ?? "", payload: .null,
            receivedAt: receivedAt, direction: r.string(row, 11).flatMap(MailboxMessage.Direction.init(rawValue:)) ?? .received,
            deliveryError: try deliveryError(sealed: r.bytes(row, 13), clear: r.string(row, 12), uid: r.string(row, 0) ?? ""))
    }
}
