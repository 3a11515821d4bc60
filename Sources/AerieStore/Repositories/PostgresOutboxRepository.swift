import AerieCore
import Foundation

/// `aerie.outbox`: packed envelopes waiting for delivery. A row's endpoint and last error name
/// the peer's URL: they are sealed (`endpoint_sealed`, `last_error_sealed`, `RowSealing`), as is
/// the delivery error it leaves on its sent message; only the endpoint's `scheme://host:port`
/// (`destination`, which the scan across tenants shares delivery slots by) is clear. A row ends
/// deleted: delivered (`markSentSQL`) or failed for good (`recordFailure`).
struct PostgresOutboxRepository: OutboxRepository {
    let tenantID: TenantID
    let session: DatabaseSession
    let sealing: RowSealing
    /// The lease new rows are inserted under (`OutboxSignal.enqueueLease`), nil: inserted due.
    var lease: OutboxLease? = nil
    /// Where the transaction's new rows are recorded, for `OutboxSignal.committed`.
    var enqueued: EnqueuedRows? = nil

    /// 2 `endpoint` and 7 `last_error` are a previous release's clear forms of 10 and 9.
    /// How many `columns` there are: the claim's wrapped data key comes after them.
    private static let columnCount = 12
    private static let columns = """
        id::text, connection_id::text, endpoint, envelope, attempts, (extract(epoch FROM next_attempt_at) * 1000000)::int8,
        status, last_error, message_uid::text, last_error_sealed, endpoint_sealed,
        (extract(epoch FROM created_at) * 1000000)::int8
        """

    /// Under a lease the row is not due until the lease ends ($10 seconds from now), and its
    /// holder ($11) delivers it (`OutboxSignal.committed`); the scan finds it only after that.
    ///
    /// The quota (`aerie.outbox_max_pending`, set on every pool session) is checked here: a
    /// pending row is inserted only while fewer of the tenant's rows are pending than the limit,
    /// counted up to the limit; with no room the WHERE's cast to `aerie.outbox_room` fails, and
    /// `PostgresError` answers `quota_exceeded` (schema/0034, which says what this costs and how
    /// concurrent sends see each other). A row of the same id already stored is left as it is:
    /// ids are fresh, so only a rerun of a transaction that committed (`rerunnableTransaction`)
    /// enqueues one again.
    func enqueue(_ item: OutboxItem) throws {
        var item = item
        item.leasedBy = lease?.instance
        try session.executeLater(
            """
            INSERT INTO aerie.outbox (tenant_id, id, connection_id, endpoint_sealed, destination, envelope, attempts, next_attempt_at,
                status, message_uid, leased_by)
            SELECT $1::uuid, $2::uuid, $3::uuid, $4, $12, $5, $6,
                CASE WHEN $10::int IS NULL THEN to_timestamp($7::float8) ELSE now() + make_interval(secs => $10::int) END,
                $8, $9::uuid, $11
            FROM (SELECT NULLIF(NULLIF(pg_catalog.current_setting('aerie.outbox_max_pending', true), ''), '0')::bigint AS max) q
            WHERE (CASE WHEN q.max IS NULL OR $8 <> 'pending' THEN true
                ELSE (SELECT count(*) FROM (SELECT FROM aerie.outbox o WHERE o.tenant_id = $1::uuid AND o.status = 'pending'
                    LIMIT q.max) c) < q.max END)::aerie.outbox_room
            ON CONFLICT DO NOTHING
            """,
            [
                .text(tenantID.rawValue), .text(item.id.lowercasedString),
                .optionalText(item.connectionId?.lowercasedString),
                try sealing.seal(item.endpoint, column: "endpoint", row: item.id.lowercasedString).map(SQLValue.bytes) ?? .null,
                .bytes(item.envelope),
                .int(item.attempts), .text(String(item.nextAttemptAt.timeIntervalSince1970)), .text(item.status.rawValue),
                .optionalText(item.messageUid?.lowercasedString), lease.map { .int($0.seconds) } ?? .null,
                .optionalText(item.leasedBy), .text(OutboxItem.destination(of: item.endpoint)),
            ])
        enqueued?.items.append(item)
    }

    func pendingForUpdate(_ id: UUID) throws -> OutboxItem? {
        let result = try session.query(
            """
            SELECT \(Self.columns) FROM aerie.outbox
            WHERE tenant_id = $1::uuid AND id = $2::uuid AND status = 'pending' FOR UPDATE SKIP LOCKED
            """,
            [.text(tenantID.rawValue), .text(id.lowercasedString)])
        return try (0..<result.rowCount).map { try item(result, $0) }.first
    }

    func claim(_ id: UUID, leaseSeconds: Int) throws -> OutboxItem? {
        let result = try session.query(Self.claimSQL, Self.claimParameters(tenantID, id, leaseSeconds: leaseSeconds, instance: nil))
        return try (0..<result.rowCount).map { try item(result, $0) }.first
    }

    func markSent(_ id: UUID) throws {
        try session.execute(Self.markSentSQL, [.text(tenantID.rawValue), .textArray([id.lowercasedString])])
    }

    // Shared with `AerieDatabase.claimOutbox` and `markOutboxSent` (one round trip each). A
    // suspended or deleted tenant's rows are not claimed. The row comes with its tenant's
    // wrapped data key (after `columns`), which opens its endpoint.
    static let claimSQL = """
        UPDATE aerie.outbox SET next_attempt_at = now() + make_interval(secs => $3::int), leased_by = $4
        WHERE tenant_id = $1::uuid AND id = $2::uuid AND status = 'pending' AND next_attempt_at <= now()
            AND EXISTS (SELECT 1 FROM aerie.tenants WHERE id = $1::uuid AND status = 'active')
        RETURNING \(columns), (SELECT data_key_wrapped FROM aerie.tenants WHERE id = $1::uuid)
        """

    static func claimParameters(_ tenantID: TenantID, _ id: UUID, leaseSeconds: Int, instance: String?) -> [SQLValue] {
        [.text(tenantID.rawValue), .text(id.lowercasedString), .int(max(1, leaseSeconds)), .optionalText(instance)]
    }

    /// The claimed row of `claimSQL`'s answer, opened by the sealer `sealer` makes of its tenant's
    /// wrapped data key.
    static func claimed(_ result: PostgresResult, tenant: TenantID, sealer: (TenantID, [UInt8]) throws -> any ValueSealer)
        throws -> OutboxItem?
    {
        guard result.rowCount == 1 else { return nil }
        guard let wrapped = result.bytes(0, Self.columnCount) else { throw AerieError.internalError(details: "outbox row claimed without its tenant's key") }
        let sealing = RowSealing(tenantID: tenant, sealer: try sealer(tenant, wrapped), table: "outbox")
        return try item(result, 0, sealing: sealing)
    }

    /// A delivered row is deleted: the outbox holds only what is still to be sent, and what was
    /// delivered is the delivery event's and the sent message's (`MS-102`) to tell. Kept as
    /// `sent`, every envelope ever delivered stayed in the table for good (no sweep removed
    /// them), and the mark wrote the whole row again, envelope included, with a new entry in
    /// each index: the dearest statement of a connection accepted (two per connection).
    /// The statement logs the delivery event and sends its NOTIFY itself, the same row and text
    /// the status trigger `aerie.outbox_delivery_ended` writes for a delivery that failed for
    /// good, both for a backend's tenant only (schema/0033: its stream is the log's one reader,
    /// and this NOTIFY is the log's). Nothing counts the row out: the quota counts the pending
    /// rows themselves (`enqueue`).
    /// The rows, their events and the sent messages they carry (if any) change in one
    /// statement: they never disagree. The rows are `$2`, a uuid array (one row, or the marks
    /// `AerieDatabase.markOutboxMessagesSent` gathers). The messages are looked up by their key
    /// with the uids the rows name, gathered first into an array (`= ANY(ARRAY(...))`: one
    /// probe of `mailbox_pkey` per message, none without one). As a join, PostgreSQL planned
    /// the mailbox as the outer side on a small or new mailbox's statistics, filtered on the
    /// tenant alone, so every mark read all of the tenant's mailbox rows.
    static let markSentSQL = markSent(
        rows: "id = ANY($2::uuid[])",
        then: """
            , marked AS (
                UPDATE aerie.mailbox m SET status = 'MS-102', delivery_error = NULL
                WHERE m.tenant_id = $1::uuid AND m.uid = ANY(ARRAY(SELECT message_uid FROM sent)) AND m.direction = 'sent'
                    AND m.status <> 'MS-102'
            )
            """)

    /// `markSentSQL` for rows that carry no sent message (`message_uid` NULL), any number of
    /// them (`$2` a uuid array): the outbox rows alone, without the mailbox update's planning and
    /// start-up.
    static let markSentWithoutMessageSQL = markSent(rows: "id = ANY($2::uuid[]) AND message_uid IS NULL", then: "")

    private static func markSent(rows: String, then: String) -> String {
        """
        WITH sent AS (
            DELETE FROM aerie.outbox WHERE tenant_id = $1::uuid AND \(rows)
            RETURNING tenant_id, id, connection_id, message_uid
        ), logged AS (
            INSERT INTO aerie.events (tenant_id, backend_id, kind, data)
            SELECT t.id, t.backend_id, 'delivery', jsonb_build_object(
                'outboxId', s.id, 'connectionId', s.connection_id, 'status', 'sent', 'messageUid', s.message_uid)
            FROM sent s JOIN aerie.tenants t ON t.id = s.tenant_id
            WHERE t.backend_id IS NOT NULL
            RETURNING data
        )\(then)
        SELECT pg_notify('aerie_events', (jsonb_build_object('tenant', $1::uuid, 'kind', 'delivery') || data)::text)
        FROM logged
        """
    }

    /// Records a failed attempt: the row is due again at `nextAttemptAt`, or, with none, failed
    /// for good, when it fails the sent message it carries (MS-105, with the error) and is
    /// deleted, all in this transaction. The row is read first (locked) for its message's uid, to
    /// which that message's sealed error is bound. The status change logs the delivery event
    /// (the trigger `aerie.outbox_delivery_ended`) before the row goes.
    func recordFailure(_ id: UUID, attempts: Int, nextAttemptAt: Date?, error: String) throws {
        let row = try session.query(
            "SELECT message_uid::text FROM aerie.outbox WHERE tenant_id = $1::uuid AND id = $2::uuid FOR UPDATE",
            [.text(tenantID.rawValue), .text(id.lowercasedString)])
        guard row.rowCount == 1 else { return }
        let error = String(error.prefix(500))
        let messageError = try row.string(0, 0).flatMap {
            try PostgresMailboxRepository.sealDeliveryError(error, uid: $0, sealing: sealing)
        }
        // The reason for the message's NOTIFY (`aerie.notify_delivery`, schema/0043), for this
        // statement only.
        let final = nextAttemptAt == nil && messageError != nil
        if final { try session.executeLater("SELECT set_config('aerie.delivery_reason', $1, true)", [.text(error)]) }
        try session.execute(
            """
            WITH failed AS (
                UPDATE aerie.outbox SET attempts = $3, last_error = NULL, last_error_sealed = $4,
                    status = CASE WHEN $5::float8 IS NULL THEN 'failed' ELSE 'pending' END,
                    next_attempt_at = COALESCE(to_timestamp($5::float8), next_attempt_at)
                WHERE tenant_id = $1::uuid AND id = $2::uuid RETURNING message_uid, status
            )
            UPDATE aerie.mailbox m SET status = 'MS-105', delivery_error = NULL, delivery_error_sealed = $6
            WHERE m.tenant_id = $1::uuid AND m.uid = (SELECT message_uid FROM failed WHERE status = 'failed')
                AND m.direction = 'sent' AND m.status = 'MS-101'
            """,
            [
                .text(tenantID.rawValue), .text(id.lowercasedString), .int(attempts),
                try sealing.seal(error, column: "last_error", row: id.lowercasedString).map(SQLValue.bytes) ?? .null,
                .optionalText(nextAttemptAt.map { String($0.timeIntervalSince1970) }), messageError.map(SQLValue.bytes) ?? .null,
            ])
        if final { try session.executeLater("SELECT set_config('aerie.delivery_reason', '', true)", []) }
        if nextAttemptAt == nil {
            try session.execute(
                "DELETE FROM aerie.outbox WHERE tenant_id = $1::uuid AND id = $2::uuid AND status = 'failed'",
                [.text(tenantID.rawValue), .text(id.lowercasedString)])
        }
    }

    /// Rewrites up to `limit` rows whose endpoint or last error a previous release stored in
    /// clear; answers how many.
    func sealClearRows(limit: Int) throws -> Int {
        let result = try session.query(
            """
            SELECT \(Self.columns) FROM aerie.outbox WHERE tenant_id = $1::uuid AND (endpoint IS NOT NULL OR last_error IS NOT NULL)
            LIMIT $2 FOR UPDATE SKIP LOCKED
            """,
            [.text(tenantID.rawValue), .int(max(0, limit))])
        for row in 0..<result.rowCount {
            let item = try item(result, row)
            let id = item.id.lowercasedString
            try session.execute(
                """
                UPDATE aerie.outbox SET endpoint = NULL, endpoint_sealed = $3, destination = $4, last_error = NULL,
                    last_error_sealed = $5
                WHERE tenant_id = $1::uuid AND id = $2::uuid
                """,
                [
                    .text(tenantID.rawValue), .text(id),
                    try sealing.seal(item.endpoint, column: "endpoint", row: id).map(SQLValue.bytes) ?? .null,
                    .text(OutboxItem.destination(of: item.endpoint)),
                    try sealing.seal(item.lastError, column: "last_error", row: id).map(SQLValue.bytes) ?? .null,
                ])
        }
        return result.rowCount
    }

    func list(connectionId: UUID, limit: Int) throws -> [OutboxItem] {
        let result = try session.query(
            "SELECT \(Self.columns) FROM aerie.outbox WHERE tenant_id = $1::uuid AND connection_id = $2::uuid ORDER BY created_at, id LIMIT $3",
            [.text(tenantID.rawValue), .text(connectionId.lowercasedString), .int(max(0, limit))])
        return try (0..<result.rowCount).map { try item(result, $0) }
    }

    func deleteAll(connectionId: UUID) throws -> Int {
        try session.execute(
            "DELETE FROM aerie.outbox WHERE tenant_id = $1::uuid AND connection_id = $2::uuid",
            [.text(tenantID.rawValue), .text(connectionId.lowercasedString)])
    }

    private func item(_ r: PostgresResult, _ row: Int) throws -> OutboxItem {
        try Self.item(r, row, sealing: sealing)
    }

    /// A row of `columns`, its endpoint and last error opened (or a previous release's clear ones).
    private static func item(_ r: PostgresResult, _ row: Int, sealing: RowSealing) throws -> OutboxItem {
        guard let idText = r.string(row, 0), let id = UUID(text: idText),
            let endpoint = try r.bytes(row, 10).map({ try sealing.open($0, column: "endpoint", row: idText) }) ?? r.string(row, 2),
            let envelope = r.bytes(row, 3), let next = r.date(microseconds: row, 5),
            let status = r.string(row, 6).flatMap(OutboxItem.Status.init(rawValue:))
        else { throw AerieError.internalError(details: "malformed row in aerie.outbox") }
        let lastError = try r.bytes(row, 9).map { try sealing.open($0, column: "last_error", row: idText) } ?? r.string(row, 7)
        return OutboxItem(
            id: id, connectionId: r.uuid(row, 1), endpoint: endpoint, envelope: envelope,
            attempts: r.int(row, 4) ?? 0, nextAttemptAt: next, status: status, lastError: lastError,
            messageUid: r.uuid(row, 8), createdAt: r.date(microseconds: row, 11) ?? next)
    }
}

/// The rows one transaction enqueued, in order: handed to `OutboxSignal.committed` after its
/// `COMMIT`. One per run of the transaction's body (a body run again on a fresh connection
/// starts empty).
final class EnqueuedRows {
    var items: [OutboxItem] = []
}
