import AerieStore
import AerieTesting
import Foundation
import Logging

/// The other tenants of the scale benchmarks (`scale`, `scale-writes`), seeded by SQL: tenants
/// with no usable token, each with connections in state 4 and their pairwise keys, in the clear
/// form of the previous release (readers take both forms) with triggers off, so the seeding
/// writes no events and no quota counts: what grows is the tables and indexes every read, write
/// and lookup goes through.
enum ScaleSeed {
    static func counts(_ server: LiveServer) async throws -> (tenants: Int, connections: Int) {
        try await withSuperuser(server) { superuser in
            try await superuser.withSession { session in
                (
                    try session.query("SELECT count(*) FROM aerie.tenants").int(0, 0) ?? 0,
                    try session.query("SELECT count(*) FROM aerie.connections").int(0, 0) ?? 0
                )
            }
        }
    }

    /// `body` with a superuser handle on `server`'s database, shut down after.
    static func withSuperuser<T: Sendable>(
        _ server: LiveServer, _ body: (AerieDatabase) async throws -> T
    ) async throws -> T {
        let superuser = AerieDatabase(
            configuration: DatabaseConfiguration(conninfo: server.database.superuserConninfo, maxConnections: 1),
            logger: Logger(label: "bench"))
        do {
            let value = try await body(superuser)
            await superuser.shutdown()
            return value
        } catch {
            await superuser.shutdown()
            throw error
        }
    }

    /// `count` more tenants in `server`'s database, each with `perTenant` connections and as
    /// many keys (`tenant_keys`, the inbound endpoint's verkey lookup), then the database
    /// vacuumed and analyzed, any autovacuum waited for and a checkpoint taken, so the runs
    /// share their window with none of the seeding's after-effects. Their placeholder data keys
    /// carry the bench tenant's master-key fingerprint, so a server starting on the database
    /// finds no foreign master key to warn about. Answers the seconds taken.
    static func seed(_ count: Int, perTenant: Int, _ server: LiveServer) async throws -> Double {
        let started = ContinuousClock.now
        try await withSuperuser(server) { superuser in
            if count > 0 { try await seed(count, perTenant: perTenant, superuser) }
            try await settle(superuser)
        }
        return MessagesBench.seconds(ContinuousClock.now - started)
    }

    /// Tenants go in batches, each with its connections and keys in one statement and one
    /// transaction (a statement of millions of rows would outlast the store's answer timeout).
    /// The secondary indexes of the seeded tables (not those of a primary key or unique
    /// constraint) are dropped while the rows go in and built again after: millions of rows in
    /// a dozen indexes an insert at a time take a long while, a sorted build minutes. (The
    /// rebuilt indexes are denser than indexes grown by inserts would be.)
    private static func seed(_ count: Int, perTenant: Int, _ superuser: AerieDatabase) async throws {
        let indexes = try await superuser.withSession { session in
            let secondary = try session.query(
                """
                SELECT i.indexrelid::regclass::text, pg_get_indexdef(i.indexrelid) FROM pg_index i
                WHERE i.indrelid IN ('aerie.connections'::regclass, 'aerie.tenant_keys'::regclass)
                  AND NOT EXISTS (SELECT 1 FROM pg_constraint c WHERE c.conindid = i.indexrelid)
                """)
            let indexes = (0..<secondary.rowCount).compactMap { row in
                secondary.string(row, 0).flatMap { name in secondary.string(row, 1).map { (name, $0) } }
            }
            for (name, _) in indexes { _ = try session.execute("DROP INDEX \(name)") }
            return indexes
        }
        let batch = max(1, 500_000 / max(1, perTenant))
        for first in stride(from: 1, through: count, by: batch) {
            let last = min(count, first + batch - 1)
            try await superuser.withSession { session in
                _ = try session.execute("SET LOCAL session_replication_role = replica")
                // Verkeys: 32 base58 characters (md5's hex without its zeros).
                _ = try session.query(
                    """
                    WITH tenants AS (
                        INSERT INTO aerie.tenants (id, label, token_hash, data_key_wrapped, master_key_fingerprint)
                        SELECT gen_random_uuid(), 'seeded ' || n, sha256(gen_random_uuid()::text::bytea), '\\x00'::bytea,
                               (SELECT max(master_key_fingerprint) FROM aerie.tenants)
                        FROM generate_series($1::int4, $2::int4) n
                        RETURNING id
                    ), connections AS (
                        INSERT INTO aerie.connections (tenant_id, id, state, invitation, invitation_kind, my_did, my_verkey, label)
                        SELECT t.id, gen_random_uuid(), 'accepted', '{}'::jsonb, 'connections/1.0', md5(random()::text),
                               translate(md5(random()::text), '0', 'z'), 'seeded'
                        FROM tenants t CROSS JOIN generate_series(1, $3::int4) n
                        RETURNING tenant_id, my_verkey
                    )
                    INSERT INTO aerie.tenant_keys (tenant_id, verkey, sealed_secret)
                    SELECT tenant_id, my_verkey, '\\x00'::bytea FROM connections
                    """, [.int(first), .int(last), .int(perTenant)])
            }
        }
        for (_, definition) in indexes {
            try await superuser.withSession { session in
                _ = try session.execute("SET LOCAL maintenance_work_mem = '512MB'")
                _ = try session.execute(definition)
            }
        }
    }

    /// VACUUM (ANALYZE) of the whole database (visibility map, hint bits, statistics) now,
    /// outside any transaction, rather than by autovacuum during the runs; then up to 2 minutes
    /// for an autovacuum the inserts started before it, and a CHECKPOINT (the seeding's dirty
    /// pages written before the runs, not during them).
    private static func settle(_ superuser: AerieDatabase) async throws {
        try await superuser.pool.withConnection { connection in
            try connection.script("VACUUM (ANALYZE)")
        }
        for _ in 0..<240 {
            let vacuuming = try await superuser.withSession { session in
                try session.query("SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'autovacuum worker'").int(0, 0) ?? 0
            }
            if vacuuming == 0 { break }
            try await Task.sleep(for: .milliseconds(500))
        }
        try await superuser.pool.withConnection { connection in
            try connection.script("CHECKPOINT")
        }
    }
}
