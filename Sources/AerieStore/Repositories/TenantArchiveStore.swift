import AerieCore

/// Reads a whole tenant out of the database and writes one in, for tenant archives (export,
/// import, move). Tables are found in the catalog like the tenant deletion's
/// (`TenantDirectory.tenantTables`), so a plugin's table comes along without a list to keep;
/// rows travel as `to_jsonb` text and go back in through `jsonb_populate_recordset`, their
/// sealed columns as they are: a tenant's sealed values are bound to its id and opened by its
/// data key, which the archive carries (sealed), so nothing is opened on the way.
public struct TenantArchiveStore: Sendable {
    let pool: ConnectionPool

    /// Tenant tables an archive leaves out: kept by triggers as rows go in (`tenant_usage`), or
    /// a log numbered by this database (`events`; the importing side logs its own).
    public static let derivedTables: Set<String> = ["tenant_usage", "events"]

    /// Rows read per statement while exporting: bounds the memory of one page.
    public static let pageSize = 500

    /// The tenant's own row as exported: everything but what the importing server replaces (its
    /// wrapped data key, master key fingerprint, status and owner).
    public struct TenantRow: Sendable {
        public var json: String
        public var wrappedDataKey: [UInt8]
        public var status: TenantStatus
    }

    /// Reads the tenant as of one snapshot: one REPEATABLE READ, READ ONLY transaction on a store
    /// thread, so the archive is consistent while the tenant goes on working. `begin` gets the
    /// tenant's row and the tables in the order an import inserts them (parents first), then
    /// `rows` every page of every table, as JSON object texts. Both run on the store thread and
    /// may block (they hand the pages on); what they throw ends the export. False: no such tenant.
    public func export(
        _ tenant: TenantID,
        begin: @escaping @Sendable (TenantRow, [String]) throws -> Void,
        rows: @escaping @Sendable (String, [String]) throws -> Void
    ) async throws -> Bool {
        let id = tenant.rawValue
        return try await pool.transaction(tenant: nil) { session in
            try session.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY")
            try session.query("SELECT set_config('aerie.tenant_id', $1, true)", [.text(id)])
            let found = try session.query(
                """
                SELECT (to_jsonb(t) - 'data_key_wrapped' - 'master_key_fingerprint' - 'status' - 'backend_id')::text,
                    data_key_wrapped, status FROM aerie.tenants t WHERE id = $1::uuid
                """, [.text(id)])
            guard found.rowCount == 1, let json = found.string(0, 0), let wrapped = found.bytes(0, 1),
                let status = found.string(0, 2).flatMap(TenantStatus.init(rawValue:))
            else { return false }
            let tables = try TenantDirectory.tenantTables(session).reversed().filter { !Self.derivedTables.contains($0) }
            try begin(TenantRow(json: json, wrappedDataKey: wrapped, status: status), Array(tables))
            for table in tables {
                let quoted = TenantDirectory.quoteIdentifier(table)
                // A cursor reads the table once, page by page, within the snapshot. The id is a
                // validated UUID (TenantID), so it can be written into the statement.
                try session.execute(
                    "DECLARE archive_rows NO SCROLL CURSOR FOR SELECT to_jsonb(t)::text FROM aerie.\(quoted) t "
                        + "WHERE tenant_id = '\(id)'::uuid")
                while true {
                    let page = try session.query("FETCH \(Self.pageSize) FROM archive_rows")
                    if page.rowCount > 0 { try rows(table, (0..<page.rowCount).compactMap { page.string($0, 0) }) }
                    if page.rowCount < Self.pageSize { break }
                }
                try session.execute("CLOSE archive_rows")
            }
            return true
        }
    }

    /// Writes one tenant in ONE transaction: `body` runs on a store thread with a writer and
    /// may block (it reads the archive as it arrives); anything it throws rolls everything back,
    /// so a refused archive leaves nothing. Answers what `body` answers, after `COMMIT`.
    public func importTenant<T: Sendable>(_ body: @escaping @Sendable (TenantImportWriter) throws -> T) async throws -> T {
        try await pool.transaction(tenant: nil) { session in
            try body(TenantImportWriter(session: session))
        }
    }

    /// Marks the tenant `moving` (from active or suspended, or already moving: a move run again).
    /// False when there is no such tenant.
    public func beginMove(_ tenant: TenantID) async throws -> Bool {
        try await pool.transaction(tenant: nil) { session in
            try session.execute(
                "UPDATE aerie.tenants SET status = 'moving', updated_at = now() WHERE id = $1::uuid",
                [.text(tenant.rawValue)]) == 1
        }
    }

    /// Whether this server imported the archive `archiveID`.
    public func imported(archiveID: [UInt8]) async throws -> Bool {
        try await pool.read { session in
            try session.query("SELECT 1 FROM aerie.imported_archives WHERE archive_id = $1", [.bytes(archiveID)]).rowCount == 1
        }
    }

    /// Ends a move whose destination holds the tenant: records its keys as moved until `until`
    /// (`movedKey`), then deletes the tenant and all its rows with its wrapped data key (crypto-
    /// shredding), in one transaction. Only a tenant in `moving` is retired (`conflict`
    /// otherwise); nil when there is no such tenant.
    public func retire(_ tenant: TenantID, keysMovedUntilSeconds grace: Int) async throws -> [String: Int]? {
        let id = tenant.rawValue
        return try await pool.transaction(tenant: tenant) { session in
            let found = try session.query("SELECT status FROM aerie.tenants WHERE id = $1::uuid FOR UPDATE", [.text(id)])
            guard found.rowCount == 1 else { return nil }
            guard found.string(0, 0) == TenantStatus.moving.rawValue else {
                throw AerieError(.conflict, "the tenant is not being moved (start with admin.tenants.export {move: true})")
            }
            try session.execute("DELETE FROM aerie.moved_keys WHERE until < now()")
            if grace > 0 {
                try session.execute(
                    """
                    INSERT INTO aerie.moved_keys (verkey_hash, until)
                    SELECT sha256(convert_to(verkey, 'UTF8')), now() + make_interval(secs => $2) FROM aerie.tenant_keys
                    WHERE tenant_id = $1::uuid
                    ON CONFLICT (verkey_hash) DO UPDATE SET until = EXCLUDED.until
                    """, [.text(id), .int(grace)])
            }
            var counts: [String: Int] = [:]
            for table in try TenantDirectory.tenantTables(session) {
                counts[table] = try session.execute(
                    "DELETE FROM aerie.\(TenantDirectory.quoteIdentifier(table)) WHERE tenant_id = $1::uuid", [.text(id)])
            }
            try session.execute("DELETE FROM aerie.tenants WHERE id = $1::uuid", [.text(id)])
            return counts
        }
    }

    /// When any of `verkeys` belongs to a tenant moved away within its grace period, or to a
    /// tenant being moved, its messages are answered "retry later", not "unknown": the seconds
    /// to wait, at most `maxSeconds` and never past the end of the grace period. Nil: neither.
    public func movedKeysRetryAfter(verkeys: [String], maxSeconds: Int) async throws -> Int? {
        guard !verkeys.isEmpty else { return nil }
        return try await pool.read { session in
            try session.query(
                """
                SELECT min(s) FROM (
                    SELECT least($2::int, greatest(1, ceil(extract(epoch FROM until - now()))))::int AS s FROM aerie.moved_keys
                    WHERE until > now() AND verkey_hash IN (SELECT sha256(convert_to(k, 'UTF8')) FROM unnest($1::text[]) k)
                    UNION ALL
                    SELECT $2::int FROM unnest($1::text[]) k JOIN aerie.tenants t ON t.id = aerie.tenant_for_verkey(k)
                    WHERE t.status = 'moving'
                ) r
                """, [.textArray(verkeys), .int(maxSeconds)]
            ).int(0, 0)
        }
    }
}

/// Writes an imported tenant inside `TenantArchiveStore.importTenant`'s transaction. Valid only
/// inside that body.
public struct TenantImportWriter {
    let session: DatabaseSession

    /// Records the archive (a second import of it is a `conflict`) and checks `backend` exists.
    public func record(archiveID: [UInt8], backend: BackendID?) throws {
        let recorded = try session.query(
            "INSERT INTO aerie.imported_archives (archive_id) VALUES ($1) ON CONFLICT DO NOTHING RETURNING 1", [.bytes(archiveID)])
        guard recorded.rowCount == 1 else { throw AerieError(.conflict, "this archive was imported here already") }
        if let backend,
            try session.query("SELECT 1 FROM aerie.backends WHERE id = $1::uuid FOR KEY SHARE", [.text(backend.rawValue)]).rowCount == 0
        {
            throw AerieError.notFound("no backend \(backend)")
        }
    }

    /// Whether a tenant of this id is here already.
    public func exists(_ tenant: TenantID) throws -> Bool {
        try session.query("SELECT 1 FROM aerie.tenants WHERE id = $1::uuid", [.text(tenant.rawValue)]).rowCount == 1
    }

    /// Creates the tenant from its exported row (`tenant` its id here, its label sealed for it)
    /// with this server's wrapped data key, active, owned by `backend`, with `tokenHash` when
    /// given (a tenant imported under a new id gets a new token), and scopes the rest of the
    /// transaction to it. A tenant of that id already here is a `conflict`.
    public func begin(
        tenant: TenantID, row: String, wrappedDataKey: [UInt8], masterKeyFingerprint: String, backend: BackendID?,
        tokenHash: [UInt8]? = nil
    ) throws {
        guard try !exists(tenant) else {
            throw AerieError(.conflict, "a tenant with this id exists here already (import it with a new id: newId)")
        }
        try session.execute(
            """
            INSERT INTO aerie.tenants SELECT * FROM jsonb_populate_record(NULL::aerie.tenants, $1::jsonb || jsonb_build_object(
                'id', $2::text, 'data_key_wrapped', '\\x' || encode($3::bytea, 'hex'), 'master_key_fingerprint', $4::text,
                'status', 'active', 'backend_id', $5::text, 'updated_at', now())
                || CASE WHEN $6::bytea IS NULL THEN '{}'::jsonb
                    ELSE jsonb_build_object('token_hash', '\\x' || encode($6::bytea, 'hex')) END)
            """,
            [
                .text(row), .text(tenant.rawValue), .bytes(wrappedDataKey), .text(masterKeyFingerprint), .optionalText(backend?.rawValue),
                tokenHash.map(SQLValue.bytes) ?? .null,
            ])
        // `aerie.importing_tenant`: the mailbox's row trigger neither counts nor announces what
        // the import writes (`countImportedMailbox` counts it once, schema/0069). `aerie.tenant_logs`
        // as every tenant transaction sets it: the exchange tables' triggers read it.
        try session.query(
            """
            SELECT set_config('aerie.tenant_id', $1, true), set_config('aerie.imported_connection', 'on', true),
                set_config('aerie.importing_tenant', 'on', true), \(DatabaseSession.tenantLogsSetting)
            """,
            [.text(tenant.rawValue)])
    }

    /// Refuses keys this server already routes to a tenant (one verkey has one owner): a tenant
    /// imported under a new id next to the one it was copied from, or keys taken since.
    public func refuseRoutedKeys(_ verkeys: [String]) throws {
        guard !verkeys.isEmpty else { return }
        let taken = try session.query(
            "SELECT k FROM unnest($1::text[]) k WHERE aerie.tenant_for_verkey(k) IS NOT NULL LIMIT 1", [.textArray(verkeys)])
        if let key = taken.string(0, 0) {
            throw AerieError(
                .conflict, "a key of the archive belongs to another tenant of this server; two tenants cannot own one key",
                details: "verkey \(key)")
        }
    }

    /// Counts the imported mailbox into the tenant's usage in one statement and checks it against
    /// the mailbox quota (`quota_exceeded`, rolling the import back), as the row trigger does
    /// for each message written otherwise.
    public func countImportedMailbox() throws {
        try session.query("SELECT aerie.count_imported_mailbox()")
    }

    /// The tenant tables of this database, as an export names them.
    public func tables() throws -> Set<String> {
        Set(try TenantDirectory.tenantTables(session))
    }

    /// Inserts `rows` (JSON object texts, as exported) into `table`, which must be a tenant table
    /// here; every row must be the tenant's (row-level security refuses any other).
    public func insert(table: String, rows: [String]) throws {
        guard !rows.isEmpty else { return }
        let quoted = TenantDirectory.quoteIdentifier(table)
        try session.execute(
            "INSERT INTO aerie.\(quoted) SELECT * FROM jsonb_populate_recordset(NULL::aerie.\(quoted), $1::jsonb)",
            [.text("[" + rows.joined(separator: ",") + "]")])
    }
}
