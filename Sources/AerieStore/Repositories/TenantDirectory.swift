import AerieCore
import Foundation

/// The global tenant table and the admin credential, for the server's admin and authentication
/// code. Runs as the runtime role: these tables have no row-level security, since a tenant must
/// be found before any tenant can be set.
public struct TenantDirectory: Sendable {
    let pool: ConnectionPool
    /// Keys this process made with their connections (`inboundRecipient`).
    let recentRecipients: RecentRecipients

    init(pool: ConnectionPool, recentRecipients: RecentRecipients = .off) {
        self.pool = pool
        self.recentRecipients = recentRecipients
    }

    /// Inserts an active tenant. A duplicate id or token hash throws `AerieError(.conflict)`.
    ///
    /// Throws `MasterKeyMismatch` (and inserts nothing) when existing tenants' data keys are
    /// wrapped by another master key: after a rotation, a server still holding the old key must
    /// not create tenants under it. `rewrapDataKeys` locks the table against inserts, and an
    /// insert's snapshot is taken after its lock, so the check cannot miss a rotation.
    /// `backend`: the backend that owns the new tenant (it must exist; else `notFound`).
    /// `sealer`: the new tenant's own (of the data key `wrappedDataKey` wraps), which seals its label.
    public func create(
        id: TenantID, label: String, sealer: any ValueSealer, tokenHash: [UInt8], wrappedDataKey: [UInt8],
        masterKeyFingerprint: String, backend: BackendID? = nil
    ) async throws -> TenantRecord {
        try await pool.transaction(tenant: nil) { session in
            if let backend,
                try session.query("SELECT 1 FROM aerie.backends WHERE id = $1::uuid FOR KEY SHARE", [.text(backend.rawValue)]).rowCount == 0
            {
                throw AerieError.notFound("no backend \(backend)")
            }
            let result = try session.query(
                """
                INSERT INTO aerie.tenants (id, label_sealed, token_hash, data_key_wrapped, master_key_fingerprint, backend_id)
                SELECT $1::uuid, $2::bytea, $3::bytea, $4::bytea, $5::text, $6::uuid
                WHERE NOT EXISTS (SELECT 1 FROM aerie.tenants WHERE master_key_fingerprint <> $5::text)
                RETURNING \(TenantRecord.columns)
                """,
                [
                    .text(id.rawValue), .bytes(StoredTenantLabel.seal(label, tenant: id, sealer: sealer)), .bytes(tokenHash), .bytes(wrappedDataKey), .text(masterKeyFingerprint),
                    .optionalText(backend?.rawValue),
                ])
            guard result.rowCount == 1 else {
                let other = try session.query(
                    "SELECT master_key_fingerprint FROM aerie.tenants WHERE master_key_fingerprint <> $1 LIMIT 1",
                    [.text(masterKeyFingerprint)])
                throw MasterKeyMismatch(offered: masterKeyFingerprint, inUse: other.string(0, 0) ?? "?")
            }
            return try TenantRecord(row: 0, of: result)
        }
    }

    public func get(_ id: TenantID) async throws -> TenantRecord? {
        try await pool.read { session in
            let result = try session.query(
                "SELECT \(TenantRecord.columns) FROM aerie.tenants WHERE id = $1::uuid", [.text(id.rawValue)])
            return try TenantRecord.all(in: result).first
        }
    }

    /// Tenants in id order, strictly after `after` (keyset paging: pass the last id of a page);
    /// only those of `backend` when given. Only the conditions given are in the statement
    /// (`SQLConditions`), so a page starts at its cursor in `tenants_pkey`.
    public func list(after: TenantID?, limit: Int, backend: BackendID? = nil) async throws -> [TenantRecord] {
        var conditions = SQLConditions()
        conditions.add(after.map { .text($0.rawValue) }) { "id > \($0)::uuid" }
        conditions.add(backend.map { .text($0.rawValue) }) { "backend_id = \($0)::uuid" }
        let limit = conditions.parameter(.int(max(0, limit)))
        let sql = "SELECT \(TenantRecord.columns) FROM aerie.tenants \(conditions.whereClause) ORDER BY tenants.id LIMIT \(limit)"
        let parameters = conditions.parameters
        return try await pool.read { session in
            try TenantRecord.all(in: session.query(sql, parameters))
        }
    }

    /// Rotates a tenant's token. Returns false when there is no such tenant.
    public func replaceTokenHash(_ id: TenantID, with tokenHash: [UInt8]) async throws -> Bool {
        try await update("token_hash = $2", id, [.bytes(tokenHash)])
    }

    /// Suspends or resumes a tenant. Returns false when there is no such tenant.
    public func setStatus(_ id: TenantID, _ status: TenantStatus) async throws -> Bool {
        try await update("status = $2", id, [.text(status.rawValue)])
    }

    /// Stores a data key rewrapped under another master key (master-key rotation).
    public func replaceWrappedDataKey(
        _ id: TenantID, with wrappedDataKey: [UInt8], masterKeyFingerprint: String
    ) async throws -> Bool {
        try await update(
            "data_key_wrapped = $2, master_key_fingerprint = $3", id,
            [.bytes(wrappedDataKey), .text(masterKeyFingerprint)])
    }

    /// The active tenant whose token hashes to `tokenHash`, if any (`session.authenticate`).
    public func authenticate(tokenHash: [UInt8]) async throws -> TenantRecord? {
        try await pool.read { session in
            let result = try session.query(
                "SELECT \(TenantRecord.columns) FROM aerie.tenants WHERE token_hash = $1 AND status = 'active'",
                [.bytes(tokenHash)])
            return try TenantRecord.all(in: result).first
        }
    }

    /// Whether the tenant still exists, is active and still has this token: checked on every
    /// call of an authenticated session, so suspension, deletion and rotation take effect at
    /// once. One primary-key lookup in one round trip.
    public func isActive(_ id: TenantID, tokenHash: [UInt8]) async throws -> Bool {
        try await pool.read { session in
            try session.query(
                "SELECT 1 FROM aerie.tenants WHERE id = $1::uuid AND token_hash = $2 AND status = 'active'",
                [.text(id.rawValue), .bytes(tokenHash)]
            ).rowCount == 1
        }
    }

    /// What the inbound endpoint reads of an envelope's recipients, in one round trip: the tenant
    /// holding the first of `verkeys` that any tenant holds (with its wrapped data key while
    /// active), and that tenant's first key of `verkeys` with its sealed secret and the connection
    /// it is our key of. The pipeline's first statement sets the tenant from
    /// `aerie.tenant_for_verkey` (SECURITY DEFINER, revealing only the tenant id) and read-only
    /// mode, so the second reads the keys and the connection under that tenant's row-level
    /// security, as `TenantDatabase.read` would; both are one implicit transaction. The read
    /// runs on its cached generic plan (`plan_cache_mode`, for this transaction only): its custom
    /// plans, the first five on each pooled connection, cost 0.4-1.5 ms each, more than
    /// running it. `sealer`
    /// unwraps the tenant's data key to open the connection's sealed columns (not called for a
    /// suspended tenant, whose rows are not returned).
    ///
    /// Without a round trip when `recent` and the first of `verkeys` is a key held in memory
    /// (`RecentRecipients`: made by this process with its connection moments ago, or read here
    /// before with its established connection): the answer is then marked `remembered` with the
    /// entry's origin, its connection as inserted or as read, perhaps changed since. No default: a
    /// caller asks for that answer knowingly. An answer read from the database whose connection
    /// is established is remembered (`InboundSenders.remembersAsRead`), unless something was
    /// invalidated while it was read.
    public func inboundRecipient(
        verkeys: [String], recent: Bool, sealer: @escaping @Sendable (TenantID, [UInt8]) throws -> any ValueSealer
    ) async throws -> InboundOwner? {
        guard let first = verkeys.first else { return nil }
        if recent, let held = recentRecipients.lookup(first) {
            return InboundOwner(
                tenant: held.tenant, activeWrappedDataKey: held.wrappedDataKey, recipient: held.recipient, remembered: held.origin)
        }
        let generation = recentRecipients.generation
        guard verkeys.count <= PostgresKeyRepository.maxLookup else {
            throw AerieError.invalidParams(
                "too many keys to look up at once (at most \(PostgresKeyRepository.maxLookup))", field: "verkeys")
        }
        let setTenant = """
            SELECT set_config('aerie.tenant_id', coalesce((
                SELECT f.tenant::text FROM unnest($1::text[]) WITH ORDINALITY AS u(verkey, n),
                    LATERAL (SELECT aerie.tenant_for_verkey(u.verkey) AS tenant) f
                WHERE f.tenant IS NOT NULL ORDER BY u.n LIMIT 1), ''), true),
                set_config('transaction_read_only', 'on', true), set_config('plan_cache_mode', 'force_generic_plan', true)
            """
        let read = """
            SELECT r.*, t.id::text AS owner_tenant, CASE WHEN t.status = 'active' THEN t.data_key_wrapped END AS owner_data_key
            FROM aerie.tenants t
            LEFT JOIN LATERAL (\(PostgresConnectionRepository.recipientsSQL(tenant: "t.id", verkeys: "$1::text[]"))) r
                ON t.status = 'active'
            WHERE t.id = NULLIF(current_setting('aerie.tenant_id', true), '')::uuid
            """
        return try await pool.withConnection { connection in
            let result: PostgresResult
            do {
                result = try connection.pipeline([(setTenant, [.textArray(verkeys)]), (read, [.textArray(verkeys)])])
            } catch let error as PostgresError {
                throw error.aerieError
            }
            // The tenant's columns by name: the recipients' columns before them are the connection
            // repository's to read.
            guard let tenantColumn = result.column(named: "owner_tenant"), let dataKeyColumn = result.column(named: "owner_data_key")
            else { throw AerieError.internalError(details: "the inbound recipient read lacks its tenant columns") }
            guard result.rowCount > 0, let tenant = result.string(0, tenantColumn).flatMap(TenantID.init) else { return nil }
            guard let wrapped = result.bytes(0, dataKeyColumn) else {
                return InboundOwner(tenant: tenant, activeWrappedDataKey: nil, recipient: nil)
            }
            let sealing = RowSealing(tenantID: tenant, sealer: try sealer(tenant, wrapped), table: "connections")
            let recipient = try PostgresConnectionRepository.firstRecipient(result, in: verkeys, sealing: sealing)
            if let generation, let recipient, let connection = recipient.connection,
                InboundSenders.remembersAsRead(connection, verkey: recipient.verkey),
                let row = Self.rowBytes(result, verkey: recipient.verkey), row <= RecentRecipients.largestRow
            {
                recentRecipients.remember(
                    read: RecentRecipients.Recipient(tenant: tenant, wrappedDataKey: wrapped, recipient: recipient, origin: .read),
                    generation: generation)
            }
            return InboundOwner(tenant: tenant, activeWrappedDataKey: wrapped, recipient: recipient)
        }
    }

    /// The size of the sealed row of `verkey`'s connection in an inbound recipient read, as
    /// `RecentRecipients.largestRow` bounds it for a connection made here; a row of the previous
    /// clear form, its columns' bytes.
    private static func rowBytes(_ result: PostgresResult, verkey: String) -> Int? {
        let columns = PostgresConnectionRepository.columnCount
        for row in 0..<result.rowCount where result.string(row, columns) == verkey {
            if let sealed = result.bytes(row, PostgresConnectionRepository.sealedColumn) { return sealed.count }
            return (0..<columns).reduce(0) { $0 + (result.raw(row, $1)?.count ?? 0) }
        }
        return nil
    }

    /// The wrapped data key of an active tenant, nil when the tenant is missing or suspended
    /// or (given `tokenHash`) its token changed: the per-call check of a tenant session, which
    /// also hands the call its tenant's key, in one primary-key lookup.
    public func activeWrappedDataKey(_ id: TenantID, tokenHash: [UInt8]?) async throws -> [UInt8]? {
        try await pool.read { session in
            let result: PostgresResult
            if let tokenHash {
                result = try session.query(
                    "SELECT data_key_wrapped FROM aerie.tenants WHERE id = $1::uuid AND token_hash = $2 AND status = 'active'",
                    [.text(id.rawValue), .bytes(tokenHash)])
            } else {
                result = try session.query(
                    "SELECT data_key_wrapped FROM aerie.tenants WHERE id = $1::uuid AND status = 'active'",
                    [.text(id.rawValue)])
            }
            return result.rowCount == 1 ? result.bytes(0, 0) : nil
        }
    }

    /// How many tenants' data keys each master key (by fingerprint) wraps.
    public func masterKeyFingerprints() async throws -> [String: Int] {
        try await pool.read { session in
            let result = try session.query(
                "SELECT master_key_fingerprint, count(*) FROM aerie.tenants GROUP BY 1")
            var counts: [String: Int] = [:]
            for row in 0..<result.rowCount {
                if let fingerprint = result.string(row, 0) { counts[fingerprint] = result.int(row, 1) ?? 0 }
            }
            return counts
        }
    }

    /// Master-key rotation: offers every tenant's wrapped data key to `rewrap` and stores what
    /// it returns (nil: already under the new key, leave it) with `newFingerprint`, all in ONE
    /// transaction, so the database is either entirely before or entirely after the rotation.
    /// The table is locked against inserts and updates meanwhile (reads go on); tenant-owned
    /// tables such as the sealed keys are not touched. `rewrap` runs on a store thread and may
    /// run again for every tenant if the connection is lost before `COMMIT`; throwing from it
    /// rolls everything back.
    public func rewrapDataKeys(
        newFingerprint: String,
        _ rewrap: @escaping @Sendable (TenantID, [UInt8]) throws -> [UInt8]?
    ) async throws -> DataKeyRewrapCount {
        try await pool.transaction(tenant: nil) { session in
            try session.execute("LOCK TABLE aerie.tenants IN SHARE ROW EXCLUSIVE MODE")
            var count = DataKeyRewrapCount(rewrapped: 0, unchanged: 0)
            var after: TenantID? = nil
            while true {
                var conditions = SQLConditions()
                conditions.add(after.map { .text($0.rawValue) }) { "id > \($0)::uuid" }
                let limit = conditions.parameter(.int(Self.rewrapBatch))
                let page = try session.query(
                    "SELECT id::text, data_key_wrapped FROM aerie.tenants \(conditions.whereClause) ORDER BY tenants.id LIMIT \(limit)",
                    conditions.parameters)
                var updates: [(TenantID, [UInt8])] = []
                for row in 0..<page.rowCount {
                    guard let id = page.string(row, 0).flatMap(TenantID.init), let wrapped = page.bytes(row, 1) else {
                        throw AerieError.internalError(details: "malformed row in aerie.tenants")
                    }
                    after = id
                    if let rewrapped = try rewrap(id, wrapped) {
                        updates.append((id, rewrapped))
                    } else {
                        count.unchanged += 1
                    }
                }
                if !updates.isEmpty {
                    let rows = updates.indices.map { "($\(2 * $0 + 2)::uuid, $\(2 * $0 + 3)::bytea)" }
                    let updated = try session.execute(
                        """
                        UPDATE aerie.tenants t SET data_key_wrapped = v.wrapped, master_key_fingerprint = $1,
                            updated_at = now()
                        FROM (VALUES \(rows.joined(separator: ", "))) AS v (id, wrapped) WHERE t.id = v.id
                        """,
                        [.text(newFingerprint)] + updates.flatMap { [SQLValue.text($0.0.rawValue), .bytes($0.1)] })
                    guard updated == updates.count else {
                        throw AerieError.internalError(details: "rewrapped \(updated) of \(updates.count) tenants")
                    }
                    count.rewrapped += updated
                }
                if page.rowCount < Self.rewrapBatch { return count }
            }
        }
    }

    static let rewrapBatch = 500

    /// The tenant's data key, wrapped by the master key.
    public func wrappedDataKey(_ id: TenantID) async throws -> [UInt8]? {
        try await pool.read { session in
            let result = try session.query(
                "SELECT data_key_wrapped FROM aerie.tenants WHERE id = $1::uuid", [.text(id.rawValue)])
            return result.rowCount == 1 ? result.bytes(0, 0) : nil
        }
    }

    /// Deletes a tenant and every row it owns, in one transaction. Tenant tables are found in
    /// the catalog (every table in schema `aerie` with a `tenant_id` column), so tables added by
    /// later migrations are covered without a list to maintain. Returns rows deleted per table,
    /// or nil when there is no such tenant.
    public func delete(_ id: TenantID) async throws -> [String: Int]? {
        try await pool.transaction(tenant: id) { session in
            let exists = try session.query(
                "SELECT 1 FROM aerie.tenants WHERE id = $1::uuid FOR UPDATE", [.text(id.rawValue)])
            guard exists.rowCount == 1 else { return nil }
            var counts: [String: Int] = [:]
            for table in try Self.tenantTables(session) {
                counts[table] = try session.execute(
                    "DELETE FROM aerie.\(Self.quoteIdentifier(table)) WHERE tenant_id = $1::uuid",
                    [.text(id.rawValue)])
            }
            try session.execute("DELETE FROM aerie.tenants WHERE id = $1::uuid", [.text(id.rawValue)])
            return counts
        }
    }

    // MARK: - Admin credential

    /// The hash of the admin token, if one was set.
    public func adminTokenHash() async throws -> [UInt8]? {
        try await pool.read { session in
            let result = try session.query("SELECT token_hash FROM aerie.admin_credentials")
            return result.rowCount == 1 ? result.bytes(0, 0) : nil
        }
    }

    /// Sets (or replaces) the admin token hash.
    public func setAdminTokenHash(_ tokenHash: [UInt8]) async throws {
        _ = try await pool.transaction(tenant: nil) { session in
            try session.execute(
                """
                INSERT INTO aerie.admin_credentials (token_hash) VALUES ($1)
                ON CONFLICT (singleton) DO UPDATE SET token_hash = EXCLUDED.token_hash, created_at = now()
                """,
                [.bytes(tokenHash)])
        }
    }

    /// Sets the admin token hash only if none exists; returns false when one already did. Safe
    /// when several servers start at once: exactly one of them wins.
    public func initializeAdminTokenHash(_ tokenHash: [UInt8]) async throws -> Bool {
        try await pool.transaction(tenant: nil) { session in
            try session.execute(
                "INSERT INTO aerie.admin_credentials (token_hash) VALUES ($1) ON CONFLICT (singleton) DO NOTHING",
                [.bytes(tokenHash)]) == 1
        }
    }

    // MARK: - Helpers

    private func update(_ assignments: String, _ id: TenantID, _ values: [SQLValue]) async throws -> Bool {
        try await pool.transaction(tenant: nil) { session in
            try session.execute(
                "UPDATE aerie.tenants SET \(assignments), updated_at = now() WHERE id = $1::uuid",
                [.text(id.rawValue)] + values) == 1
        }
    }

    /// Tables in schema `aerie` with a `tenant_id` column (partitioned tables once, not per
    /// partition), ordered so that a table comes before any table its foreign keys reference
    /// (children are emptied before their parents).
    static func tenantTables(_ session: DatabaseSession) throws -> [String] {
        let tables = try session.query(
            """
            SELECT c.relname FROM pg_class c
            JOIN pg_namespace n ON n.oid = c.relnamespace
            JOIN pg_attribute a ON a.attrelid = c.oid AND a.attname = 'tenant_id' AND NOT a.attisdropped
            WHERE n.nspname = 'aerie' AND c.relkind IN ('r', 'p') AND NOT c.relispartition
            ORDER BY c.relname
            """)
        let names = (0..<tables.rowCount).compactMap { tables.string($0, 0) }
        let references = try session.query(
            """
            SELECT child.relname, parent.relname FROM pg_constraint k
            JOIN pg_class child ON child.oid = k.conrelid
            JOIN pg_class parent ON parent.oid = k.confrelid
            JOIN pg_namespace n ON n.oid = child.relnamespace
            WHERE k.contype = 'f' AND n.nspname = 'aerie' AND k.conrelid <> k.confrelid
            """)
        var parents: [String: Set<String>] = [:]
        for row in 0..<references.rowCount {
            if let child = references.string(row, 0), let parent = references.string(row, 1) {
                parents[child, default: []].insert(parent)
            }
        }
        return childrenFirst(names, parents: parents)
    }

    /// Orders `tables` so that every table precedes the tables it references.
    static func childrenFirst(_ tables: [String], parents: [String: Set<String>]) -> [String] {
        var remaining = tables
        var ordered: [String] = []
        while !remaining.isEmpty {
            // A table is ready once no remaining table references it.
            let referenced = Set(remaining.flatMap { parents[$0] ?? [] })
            let ready = remaining.filter { !referenced.contains($0) }
            let next = ready.isEmpty ? remaining : ready  // a cycle: fall back to name order
            ordered += next
            remaining.removeAll { next.contains($0) }
        }
        return ordered
    }

    static func quoteIdentifier(_ name: String) -> String {
        "\"" + name.replacingOccurrences(of: "\"", with: "\"\"") + "\""
    }
}

/// The tenant an inbound envelope is for and what it holds of it (`TenantDirectory.inboundRecipient`).
public struct InboundOwner: Sendable {
    public var tenant: TenantID
    /// Nil when the tenant is suspended (then nothing else is read).
    public var activeWrappedDataKey: [UInt8]?
    /// The tenant's first key among the recipients, its sealed secret and its connection.
    public var recipient: InboundRecipient?
    /// Answered by `RecentRecipients`, not read now: the entry's origin, its connection as
    /// inserted or as read then, which may have changed since (see there). Nil: read now.
    package var remembered: RecentRecipients.Origin? = nil
}
