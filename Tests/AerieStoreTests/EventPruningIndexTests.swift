import AerieCore
import AerieStore
import AerieTesting
import Foundation
import Testing

/// The minutely pruning sweep reads the event log through indexes (schema/0046), not by a scan
/// of the whole log, and still deletes exactly what it did: numbered events older than the
/// cutoff, and those at or below their backend's acknowledged and webhook positions.
@Suite struct EventPruningIndexTests {
    @Test func pruningUsesIndexesAndDeletesWhatItShould() async throws {
        try await StoreFixture.with { fixture in
            let tenant = try await fixture.createLoggedTenant("pruned")
            let backend = try #require(tenant.backendId)
            let total = 30_000
            let plans = try await fixture.asSuperuser { session -> [String] in
                // 30,000 numbered events, one a second up to now: the oldest 100 before the
                // cutoff (`total - 100` seconds ago); acknowledged up to 250 and the webhook at
                // 200, so 200 is where acknowledged events end.
                _ = try session.execute(
                    """
                    INSERT INTO aerie.events (tenant_id, position, backend_id, kind, data, created_at)
                    SELECT $1::uuid, n, $2::uuid, 'connection', '{}'::jsonb, now() - make_interval(secs => $3::int4 - n)
                    FROM generate_series(1, $3::int4) AS n
                    """, [.text(tenant.id.rawValue), .text(backend.rawValue), .int(total)])
                _ = try session.execute(
                    "INSERT INTO aerie.backend_event_acks (backend_id, position) VALUES ($1::uuid, 250)", [.text(backend.rawValue)])
                _ = try session.execute(
                    """
                    INSERT INTO aerie.backend_webhooks (backend_id, url, secret_wrapped, generation, position)
                    VALUES ($1::uuid, 'https://example.com/hook', '\\x00'::bytea, gen_random_uuid(), 200)
                    """, [.text(backend.rawValue)])
                _ = try session.execute("ANALYZE aerie.events")
                let cutoff = "now() - make_interval(secs => \(total - 100))"
                func plan(_ sql: String) throws -> String {
                    let result = try session.query("EXPLAIN " + sql)
                    return (0..<result.rowCount).compactMap { result.string($0, 0) }.joined(separator: "\n")
                }
                // The two branches of aerie.prune_events, as the function runs them.
                return [
                    try plan(
                        "SELECT e.tenant_id, e.id FROM aerie.events e WHERE e.position IS NOT NULL AND e.created_at < \(cutoff) LIMIT 5000"),
                    try plan(
                        """
                        SELECT acked.tenant_id, acked.id FROM aerie.backend_event_acks a
                        LEFT JOIN aerie.backend_webhooks w ON w.backend_id = a.backend_id
                        CROSS JOIN LATERAL (
                            SELECT e.tenant_id, e.id FROM aerie.events e
                            WHERE e.backend_id = a.backend_id AND e.backend_id IS NOT NULL AND e.position IS NOT NULL
                              AND e.position <= least(a.position, coalesce(w.position, a.position))
                            LIMIT 5000) acked
                        LIMIT 5000
                        """),
                ]
            }
            #expect(plans[0].contains("events_created"), "\(plans[0])")
            #expect(!plans[0].contains("Seq Scan on events"), "\(plans[0])")
            // By backend and position, or by position alone when one backend holds the log.
            #expect(plans[1].contains("Index Scan using events_backend") || plans[1].contains("Index Scan using events_position"), "\(plans[1])")
            #expect(!plans[1].contains("Seq Scan on events"), "\(plans[1])")

            // The oldest 100 by age and 1...200 by acknowledgement (capped by the webhook): 200.
            let removed = try await fixture.runtime.events.prune(createdBefore: Date().addingTimeInterval(-Double(total - 100)), batch: 64)
            #expect(removed == 200)
            let left = try await fixture.asSuperuser { session in
                try session.query("SELECT min(position), count(*) FROM aerie.events").allRows()
            }
            #expect(left.first?[0] == "201", "\(left)")
            #expect(left.first?[1] == String(total - 200), "\(left)")
        }
    }
}
