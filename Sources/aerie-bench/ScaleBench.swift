import AerieServer
import AerieStore
import AerieTesting
import Foundation
import Logging
import NIOCore

/// `aerie-bench scale` (issue 16 goal 5): the bench tenant's `connections.get`,
/// `connections.list` and `session.authenticate`, paced below saturation, first in a database of
/// 100 tenants, then after seeding up to `tenants` tenants holding `connections` connections in
/// all; the p99 of each against its 100-tenant figure (target <= 1.5x).
///
/// The other tenants' rows are seeded by SQL in the clear form of the previous release (readers
/// take both forms; a row sealed needs its tenant's data key) with triggers off, so the seeding
/// writes no events: what grows is the tables and indexes every read and lookup goes through.
struct ScaleBench {
    var tenants: Int
    var connections: Int
    var sessions: Int
    var seconds: Double
    var ratePerSession: Double

    static let smallTenants = 100

    func run() async throws -> String {
        let server = try await LiveServer.start(
            rpc: { $0.authTimeoutSeconds = 3600 },
            server: {
                $0.databasePoolSize = AerieConfiguration().databasePoolSize
                // The seeded rows are in the clear form under placeholder keys: the background
                // sealing would try (and fail) to seal every seeded tenant during the runs.
                $0.sealingSweepInterval = nil
            })
        let rpc = RPCBench(sessions: sessions, seconds: seconds, warmup: 1, pacedRatePerSession: ratePerSession)
        let (token, connectionId) = try await rpc.benchTenant(server)
        let superuser = AerieDatabase(
            configuration: DatabaseConfiguration(conninfo: server.database.superuserConninfo, maxConnections: 1),
            logger: Logger(label: "bench"))
        let perTenant = max(1, connections / max(1, tenants))
        var lines = [
            "scale: \(sessions) sessions x \(Int(ratePerSession)) req/s paced, \(Int(seconds)) s per target; "
                + "\(Self.smallTenants) tenants, then \(tenants) tenants with \(perTenant) connections each"
        ]
        do {
            let seedSmall = try await seed(Self.smallTenants - 1, perTenant: perTenant, superuser)
            let small = try await measureAll(rpc, server: server, token: token, connectionId: connectionId)
            let seedLarge = try await seed(max(0, tenants - Self.smallTenants), perTenant: perTenant, superuser)
            let counts: [Int] = try await superuser.withSession { session in
                [
                    try session.query("SELECT count(*) FROM aerie.tenants").int(0, 0) ?? 0,
                    try session.query("SELECT count(*) FROM aerie.connections").int(0, 0) ?? 0,
                ]
            }
            let large = try await measureAll(rpc, server: server, token: token, connectionId: connectionId)
            lines.append(String(format: "  seeded by SQL in %.1f s, then %.1f s: %d tenants, %d connections", seedSmall, seedLarge, counts[0], counts[1]))
            lines.append("  target                    small p50 µs  p99 µs   large p50 µs  p99 µs   p99 large/small")
            for (s, l) in zip(small, large) {
                lines.append(
                    "  " + s.name.padding(toLength: 24, withPad: " ", startingAt: 0)
                        + String(format: "%12.0f %7.0f %14.0f %7.0f   %.2f (target <= 1.5)", s.p50, s.p99, l.p50, l.p99, l.p99 / s.p99))
            }
            lines.append(String(format: "  answered per second (offered %.0f): small %@, large %@", Double(sessions) * ratePerSession,
                                small.map { String(format: "%.0f", $0.rate) }.joined(separator: "/"),
                                large.map { String(format: "%.0f", $0.rate) }.joined(separator: "/")))
        } catch {
            await superuser.shutdown()
            try? await server.stop()
            throw error
        }
        await superuser.shutdown()
        try await server.stop()
        return lines.joined(separator: "\n")
    }

    private func measureAll(_ rpc: RPCBench, server: LiveServer, token: String, connectionId: String) async throws -> [RPCBench.Outcome] {
        let interval = TimeAmount.nanoseconds(Int64(1e9 / ratePerSession))
        let auth = #"{"jsonrpc":"2.0","id":0,"method":"session.authenticate","params":{"token":"\#(token)"}}"#
        let get = #"{"jsonrpc":"2.0","id":1,"method":"connections.get","params":{"connectionId":"\#(connectionId)"}}"#
        let list = #"{"jsonrpc":"2.0","id":1,"method":"connections.list","params":{"limit":\#(RPCBench.listedConnections)}}"#
        return [
            try await rpc.measure(name: "connections.get", port: server.port, setup: auth, line: get, interval: interval),
            try await rpc.measure(name: "connections.list (20)", port: server.port, setup: auth, line: list, interval: interval),
            try await rpc.measure(name: "session.authenticate", port: server.port, setup: nil, line: auth, interval: interval),
        ]
    }

    /// `count` more tenants (active, no usable token), each with `perTenant` connections in
    /// state 4; triggers off while seeding (no events, no quota counts). Answers the seconds taken.
    private func seed(_ count: Int, perTenant: Int, _ superuser: AerieDatabase) async throws -> Double {
        guard count > 0 else { return 0 }
        let started = ContinuousClock.now
        try await superuser.withSession { session in
            _ = try session.execute("SET session_replication_role = replica")
            _ = try session.query(
                """
                INSERT INTO aerie.tenants (id, label, token_hash, data_key_wrapped, master_key_fingerprint)
                SELECT gen_random_uuid(), 'seeded ' || n, sha256(gen_random_uuid()::text::bytea), '\\x00'::bytea, 'seeded'
                FROM generate_series(1, $1::int4) n
                """, [.int(count)])
            _ = try session.query(
                """
                INSERT INTO aerie.connections (tenant_id, id, state, invitation, invitation_kind, my_did, my_verkey, label)
                SELECT t.id, gen_random_uuid(), 'accepted', '{}'::jsonb, 'connections/1.0', md5(random()::text),
                       md5(random()::text), 'seeded'
                FROM aerie.tenants t CROSS JOIN generate_series(1, $1::int4) n
                WHERE t.label LIKE 'seeded %' AND NOT EXISTS (SELECT 1 FROM aerie.connections c WHERE c.tenant_id = t.id)
                """, [.int(perTenant)])
            _ = try session.execute("SET session_replication_role = origin")
            _ = try session.execute("ANALYZE aerie.tenants")
            _ = try session.execute("ANALYZE aerie.connections")
        }
        // A million inserted rows set autovacuum off on these tables; the runs wait for it, or it
        // would run during them (up to 2 minutes).
        for _ in 0..<240 {
            let vacuuming = try await superuser.withSession { session in
                try session.query("SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'autovacuum worker'").int(0, 0) ?? 0
            }
            if vacuuming == 0 { break }
            try await Task.sleep(for: .milliseconds(500))
        }
        let elapsed = ContinuousClock.now - started
        return Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
    }
}
