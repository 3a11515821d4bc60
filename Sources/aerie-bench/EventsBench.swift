import AerieClient
import AerieCore
import AerieServer
import AerieStore
import AerieTesting
import Foundation
import Logging
import Synchronization

/// `aerie-bench events`: the durable event log (issue 14). `writers` concurrent writers commit
/// one event each per transaction (a new connection row, as a tenant, spread over `tenants`
/// tenants of one backend) for `seconds`, while one backend session streams them: events/s
/// written and streamed, and how far the stream lags at the end. Then the same writes with the
/// log's insert turned off (its NOTIFY kept, as before the log): the write cost of the log. Last,
/// a fresh session replays everything from position 0.
struct EventsBench {
    var tenants: Int
    var writers: Int
    var seconds: Double

    func run() async throws -> String {
        let server = try await LiveServer.start(server: {
            $0.database.poolSize = AerieConfiguration().database.poolSize
            // The seeded tenants' labels are in the clear form and their data keys placeholders:
            // the background sealing would try (and fail) to seal every one during the runs.
            $0.secrets.sealingSweepInterval = nil
        })
        do {
            let report = try await measure(server)
            try await server.stop()
            return report
        } catch {
            try? await server.stop()
            throw error
        }
    }

    final class Counter: Sendable {
        private let state = Mutex<(count: Int, last: Int64, ordered: Bool, lastAt: ContinuousClock.Instant?)>((0, 0, true, nil))
        func add(_ position: Int64) {
            state.withLock { s in
                if position <= s.last { s.ordered = false }
                s.count += 1
                s.last = position
                s.lastAt = .now
            }
        }
        var snapshot: (count: Int, last: Int64, ordered: Bool, lastAt: ContinuousClock.Instant?) { state.withLock { $0 } }
    }

    static func follow(_ client: AerieClient, into counter: Counter) -> Task<Void, Never> {
        Task {
            for await n in client.notifications where n.method == "events.event" {
                if case .int(let position)? = n.params["position"] { counter.add(position) }
            }
        }
    }

    private func measure(_ server: LiveServer) async throws -> String {
        var lines: [String] = []
        let database = server.database.runtime(maxConnections: writers)
        let owner = AerieDatabase(
            configuration: DatabaseConfiguration(conninfo: server.database.ownerConninfo, maxConnections: 1), logger: Logger(label: "bench"))
        defer { Task { await database.shutdown(); await owner.shutdown() } }
        let admin = try await server.adminClient()
        let created = try await admin.call("admin.backends.create", params: ["label": "bench"])
        let token = created["token"]?.stringValue ?? ""
        let backend = try await server.client()
        try await backend.authenticate(token: token)
        var tenantIDs: [TenantID] = []
        for n in 0..<min(tenants, Self.createdTenants) {
            let tenant = try await backend.call("admin.tenants.create", params: ["label": .string("t\(n)")])
            if let id = tenant["tenantId"]?.stringValue.flatMap(TenantID.init) { tenantIDs.append(id) }
        }
        var seeding = ""
        if tenants > Self.createdTenants, let backendID = created["backendId"]?.stringValue {
            let start = ContinuousClock.now
            tenantIDs += try await Self.seed(tenants - Self.createdTenants, backend: backendID, owner: owner)
            seeding = String(format: " (%d seeded by SQL in %.1f s)", tenants - Self.createdTenants, Self.ms(ContinuousClock.now - start) / 1000)
        }
        let ids = tenantIDs

        let counter = Counter()
        let following = Self.follow(backend, into: counter)
        _ = try await backend.call("events.subscribe", params: ["after": 0])
        let (written, elapsed) = try await write(database, tenants: ids)
        // The stream's lag: until the last written event has arrived (at most 60 s more).
        let writeEnd = ContinuousClock.now
        for _ in 0..<6000 where counter.snapshot.count < written { try await Task.sleep(for: .milliseconds(10)) }
        let streamed = counter.snapshot
        let lag = (streamed.lastAt ?? writeEnd) - writeEnd
        following.cancel()
        lines.append(
            "events: \(writers) writers, \(ids.count) tenants of one backend\(seeding), \(Int(seconds)) s; one event per transaction (a new connection row)")
        lines.append(
            String(
                format: "  with the log: %d events written, %.0f events/s; streamed %d (in order: %@), last one %.0f ms after the writes ended",
                written, Double(written) / elapsed, streamed.count, streamed.ordered ? "yes" : "NO", Self.ms(lag)))

        // The same writes with the log but nobody streaming: what the insert and the numbering
        // cost, apart from the stream's CPU (server and client share the cores with the writers).
        _ = try await backend.call("events.unsubscribe")
        let (unstreamed, unstreamedElapsed) = try await write(database, tenants: ids)
        lines.append(
            String(
                format: "  with the log, no stream: %d written, %.0f events/s",
                unstreamed, Double(unstreamed) / unstreamedElapsed))

        // The same writes without the log's insert (the NOTIFY stays, as before the log): a rule
        // turns the triggers' INSERT into aerie.events into nothing, and is dropped after.
        try await owner.withSession { session in
            _ = try session.execute("CREATE RULE bench_without_event_log AS ON INSERT TO aerie.events DO INSTEAD NOTHING")
        }
        let (plain, plainElapsed) = try await write(database, tenants: ids)
        try await owner.withSession { session in _ = try session.execute("DROP RULE bench_without_event_log ON aerie.events") }
        lines.append(
            String(
                format: "  without the log's insert: %d written, %.0f transactions/s (the log costs %.0f%% of write throughput)",
                plain, Double(plain) / plainElapsed, 100 * (1 - (Double(written) / elapsed) / (Double(plain) / plainElapsed))))

        // The same writes with the sequencer held off (the bench holds its advisory lock): the
        // insert alone. The rows are numbered when it lets go.
        try await owner.withSession { session in _ = try session.query("SELECT pg_advisory_lock(7306431017)") }
        let (unnumbered, unnumberedElapsed) = try await write(database, tenants: ids)
        try await owner.withSession { session in _ = try session.query("SELECT pg_advisory_unlock(7306431017)") }
        lines.append(
            String(
                format: "  with the log's insert only (not numbered meanwhile): %d written, %.0f events/s",
                unnumbered, Double(unnumbered) / unnumberedElapsed))
        for _ in 0..<6000 {
            let waiting = try await owner.withSession { session in
                try session.query("SELECT count(*) FROM aerie.events WHERE position IS NULL").int(0, 0) ?? 0
            }
            if waiting == 0 { break }
            try await Task.sleep(for: .milliseconds(10))
        }

        // Replay of everything from position 0 on a new session.
        let replayer = try await server.client()
        try await replayer.authenticate(token: token)
        let replayed = Counter()
        let replaying = Self.follow(replayer, into: replayed)
        let replayStart = ContinuousClock.now
        _ = try await replayer.call("events.subscribe", params: ["after": 0])
        for _ in 0..<6000 where replayed.snapshot.count < written + unstreamed + unnumbered { try await Task.sleep(for: .milliseconds(10)) }
        let replayTime = (replayed.snapshot.lastAt ?? replayStart) - replayStart
        replaying.cancel()
        lines.append(
            String(
                format: "  replay from 0 on a new session: %d events in %.0f ms, %.0f events/s (in order: %@)", replayed.snapshot.count,
                Self.ms(replayTime), Double(replayed.snapshot.count) / max(0.001, Self.ms(replayTime) / 1000),
                replayed.snapshot.ordered ? "yes" : "NO"))
        await replayer.close()
        await backend.close()
        await admin.close()
        return lines.joined(separator: "\n")
    }

    /// Tenants made through `admin.tenants.create` (with real data keys); past this many, the
    /// rest are rows inserted by SQL (a placeholder data key: the bench writes only clear test
    /// rows for them), so 100,000 tenants take seconds.
    static let createdTenants = 100

    static func seed(_ count: Int, backend: String, owner: AerieDatabase) async throws -> [TenantID] {
        try await owner.withSession { session in
            let result = try session.query(
                """
                INSERT INTO aerie.tenants (id, label, token_hash, data_key_wrapped, master_key_fingerprint, backend_id)
                SELECT gen_random_uuid(), 'seeded ' || n, sha256(gen_random_uuid()::text::bytea), '\\x00'::bytea, 'seeded', $1::uuid
                FROM generate_series(1, $2::int4) n
                RETURNING id::text
                """, [.text(backend), .int(count)])
            return (0..<result.rowCount).compactMap { result.string($0, 0).flatMap(TenantID.init) }
        }
    }

    /// `writers` loops of one-row transactions for `seconds`; how many committed, and the time.
    private func write(_ database: AerieDatabase, tenants: [TenantID]) async throws -> (Int, Double) {
        let deadline = ContinuousClock.now + .milliseconds(Int(seconds * 1000))
        let start = ContinuousClock.now
        let total = try await withThrowingTaskGroup(of: Int.self) { group in
            for w in 0..<writers {
                group.addTask {
                    var n = 0
                    while ContinuousClock.now < deadline {
                        let tenant = tenants[(w + n * writers) % tenants.count]
                        try await database.pool.transaction(tenant: tenant) { session in
                            _ = try session.execute(
                                """
                                INSERT INTO aerie.connections (tenant_id, id, state, invitation, invitation_kind)
                                VALUES ($1::uuid, gen_random_uuid(), 'initialized', '{}', 'bench')
                                """, [.text(tenant.rawValue)])
                        }
                        n += 1
                    }
                    return n
                }
            }
            return try await group.reduce(0, +)
        }
        return (total, Self.ms(ContinuousClock.now - start) / 1000)
    }

    static func ms(_ duration: Duration) -> Double {
        let (seconds, attoseconds) = duration.components
        return Double(seconds) * 1000 + Double(attoseconds) / 1e15
    }
}
