import AerieCore
import Foundation

/// What one invitation of ours takes from strangers (`maxUses`, `expiresAt`) and what it has taken
/// (`uses`) and refused (`refusedRequests`, by `InboundRefusal.Reason`): a row of
/// `aerie.invitation_limits` (the plugin's table) per invitation made by `createInvitation`; an
/// invitation without one (the invitation DID's, older ones) has no limits, and its row is made on
/// its first Request. Shown by `connections.get` of the invitation.
struct InvitationUses: Sendable, Equatable {
    /// Requests answered at most (nil: no limit).
    var maxUses: Int?
    /// Requests answered so far.
    var uses: Int = 0
    /// When Requests stop being answered (nil: never).
    var expiresAt: Date?
    /// Requests refused after they reached the invitation, by reason.
    var refusedRequests: [String: Int] = [:]

    init(maxUses: Int? = nil, uses: Int = 0, expiresAt: Date? = nil, refusedRequests: [String: Int] = [:]) {
        self.maxUses = maxUses
        self.uses = uses
        self.expiresAt = expiresAt
        self.refusedRequests = refusedRequests
    }

    /// Why a Request is refused now (`now` as the database tells it), nil when it may use the invitation.
    func refusal(at now: Date) -> InboundRefusal? {
        if let expiresAt, now >= expiresAt { return InboundRefusal(.expired, "the invitation expired") }
        if let maxUses, uses >= maxUses { return InboundRefusal(.usedUp, "the invitation was used \(maxUses) times, its limit") }
        return nil
    }

    /// As `connections.get` shows it, merged into the invitation's view.
    var json: JSONValue {
        var fields: [String: JSONValue] = [
            "uses": .int(Int64(uses)),
            "refusedRequests": .object(refusedRequests.mapValues { .int(Int64($0)) }),
        ]
        if let maxUses { fields["maxUses"] = .int(Int64(maxUses)) }
        if let expiresAt { fields["expiresAt"] = .string(expiresAt.formatted(Date.ISO8601FormatStyle())) }
        return .object(fields)
    }
}

/// `aerie.invitation_limits` over the transaction's SQL seam, and the count of the tenant's
/// connections waiting for their peer (`AERIE_PENDING_CONNECTIONS_MAX`).
struct InvitationUseStore {
    static let table = "invitation_limits"

    /// A connection answered (`responded`) longer ago than this no longer counts as pending: its
    /// peer is gone, and the connection stays for the tenant to see or delete.
    static let pendingWindowSeconds = 3600

    static let migrations = [
        SchemaMigration(
            version: 39, name: "invitation_limits",
            sql: #"""
-- Limits of an invitation of ours (inviter role): Requests answered at most (max_uses), until when
-- (expires_at), how many were (uses, counted under the invitation's row lock) and how many were
-- refused once they reached it, by reason (refused: {"reason": count}). Tenant-owned, row-level
-- security as in 0001; it holds no tenant data in clear (counts and times).
CREATE TABLE aerie.invitation_limits (
    tenant_id       uuid        NOT NULL REFERENCES aerie.tenants (id),
    connection_id   uuid        NOT NULL,
    max_uses        int         CHECK (max_uses > 0),
    uses            int         NOT NULL DEFAULT 0,
    expires_at      timestamptz,
    refused         jsonb       NOT NULL DEFAULT '{}',
    PRIMARY KEY (tenant_id, connection_id)
);

ALTER TABLE aerie.invitation_limits ENABLE ROW LEVEL SECURITY;
ALTER TABLE aerie.invitation_limits FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON aerie.invitation_limits
    USING (tenant_id = NULLIF(current_setting('aerie.tenant_id', true), '')::uuid)
    WITH CHECK (tenant_id = NULLIF(current_setting('aerie.tenant_id', true), '')::uuid);
GRANT SELECT, INSERT, UPDATE, DELETE ON aerie.invitation_limits TO aerie_runtime;

-- The connections waiting for their peer's first answer, counted at each Request
-- (AERIE_PENDING_CONNECTIONS_MAX): only those rows, by tenant and age.
CREATE INDEX connections_responded ON aerie.connections (tenant_id, updated_at) WHERE state = 'responded';
"""#),
    ]

    let tenantID: TenantID
    let sql: any TenantSQL

    init(_ transaction: any TenantTransaction) {
        tenantID = transaction.tenantID
        sql = transaction.sql
    }

    func insert(_ limits: InvitationUses, for connection: UUID) throws {
        try sql.execute(
            """
            INSERT INTO aerie.invitation_limits (tenant_id, connection_id, max_uses, expires_at)
            VALUES ($1::uuid, $2::uuid, $3::int4, $4::timestamptz)
            """,
            [.text(tenantID.rawValue), .uuid(connection), limits.maxUses.map(SQLValue.int) ?? .null,
             .optionalText(limits.expiresAt?.formatted(Date.ISO8601FormatStyle()))])
    }

    /// The invitation's limits (nil: it has no row) and the database's time; with
    /// `pendingUpTo`, also the tenant's connections waiting for their peer's first answer
    /// (`responded` in the last `pendingWindowSeconds`), counted up to that many, in the same
    /// statement.
    func get(_ connection: UUID, pendingUpTo limit: Int? = nil) throws -> (limits: InvitationUses?, now: Date, pending: Int) {
        let pending = limit == nil ? "NULL::int8" : """
            (SELECT count(*) FROM (SELECT 1 FROM aerie.connections WHERE tenant_id = $1::uuid AND state = 'responded'
                AND updated_at > now() - make_interval(secs => $3::int4) LIMIT $4::int4) p)::int8
            """
        let rows = try sql.query(
            """
            SELECT (extract(epoch FROM now()) * 1000000)::int8, l.max_uses, l.uses,
                (extract(epoch FROM l.expires_at) * 1000000)::int8, l.refused::text, \(pending)
            FROM (SELECT 1) one LEFT JOIN aerie.invitation_limits l ON l.tenant_id = $1::uuid AND l.connection_id = $2::uuid
            """,
            [.text(tenantID.rawValue), .uuid(connection)] + (limit.map { [.int(Self.pendingWindowSeconds), .int($0)] } ?? []))
        let now = rows.date(microseconds: 0, 0) ?? Date()
        let count = rows.int(0, 5) ?? 0
        guard let uses = rows.int(0, 2) else { return (nil, now, count) }
        var refused: [String: Int] = [:]
        if let text = rows.string(0, 4), case .object(let counts)? = try? JSONValue(parsing: Array(text.utf8)) {
            for (reason, count) in counts { refused[reason] = count.intValue.map(Int.init) ?? 0 }
        }
        let found = InvitationUses(maxUses: rows.int(0, 1), uses: uses, expiresAt: rows.date(microseconds: 0, 3), refusedRequests: refused)
        return (found, now, count)
    }

    /// Counts one use (making the row of an invitation that has none).
    func use(_ connection: UUID) throws {
        try sql.execute(
            """
            INSERT INTO aerie.invitation_limits AS l (tenant_id, connection_id, uses) VALUES ($1::uuid, $2::uuid, 1)
            ON CONFLICT (tenant_id, connection_id) DO UPDATE SET uses = l.uses + 1
            """,
            [.text(tenantID.rawValue), .uuid(connection)])
    }

    /// Counts one refusal for `reason` (making the row of an invitation that has none).
    func refused(_ connection: UUID, reason: InboundRefusal.Reason) throws {
        try sql.execute(
            """
            INSERT INTO aerie.invitation_limits AS l (tenant_id, connection_id, refused)
            VALUES ($1::uuid, $2::uuid, jsonb_build_object($3::text, 1))
            ON CONFLICT (tenant_id, connection_id) DO UPDATE
            SET refused = l.refused || jsonb_build_object($3::text, COALESCE((l.refused ->> $3::text)::int, 0) + 1)
            """,
            [.text(tenantID.rawValue), .uuid(connection), .text(reason.rawValue)])
    }

    func delete(_ connection: UUID) throws -> Int {
        try sql.execute(
            "DELETE FROM aerie.invitation_limits WHERE tenant_id = $1::uuid AND connection_id = $2::uuid",
            [.text(tenantID.rawValue), .uuid(connection)])
    }

    static let storage = PluginStorage(
        migrations: migrations,
        connectionData: [ConnectionData(kind: table) { tx, record in try InvitationUseStore(tx).delete(record.id) }])
}
