import AerieClient
import AerieCore
import AerieServer
import AerieTesting
import Foundation
import Testing

/// The credential and proof exchanges of a tenant with a backend are logged in the durable event
/// log like its connections, in the change's own transaction; a tenant without a backend logs
/// nothing. (Their trigger functions once called a function an earlier migration had dropped, so
/// every exchange of a backend's tenant failed.)
@Suite(.timeLimit(.minutes(5))) struct ExchangeEventLogTests {
    @Test func aBackendsTenantsExchangesAreLoggedAndAnOperatorsAreNot() async throws {
        try await LiveServer.with { server in
            let database = server.database.runtime()
            defer { Task { await database.shutdown() } }
            let backend = try await EventLogTests.backend(server, "exchanges", tenants: 1)
            defer { Task { await backend.session.close() } }
            let (other, otherID) = try await server.tenantClient(label: "no backend")
            await other.close()
            for tenant in [backend.tenants[0], otherID] {
                try await database.pool.transaction(tenant: tenant) { session in
                    _ = try session.execute(
                        """
                        INSERT INTO aerie.credential_exchanges (tenant_id, id, thread_hash, state, sealed)
                        VALUES ($1::uuid, gen_random_uuid(), '\\x01', 'offer-received', '\\x00')
                        """, [.text(tenant.rawValue)])
                    _ = try session.execute(
                        """
                        INSERT INTO aerie.proof_exchanges (tenant_id, id, thread_hash, state, sealed)
                        VALUES ($1::uuid, gen_random_uuid(), '\\x01', 'request-received', '\\x00')
                        """, [.text(tenant.rawValue)])
                    _ = try session.execute(
                        "UPDATE aerie.credential_exchanges SET state = 'abandoned' WHERE tenant_id = $1::uuid",
                        [.text(tenant.rawValue)])
                }
            }
            let logged = try await database.pool.transaction(tenant: backend.tenants[0]) { session in
                let rows = try session.query("SELECT kind, data->>'state' FROM aerie.events WHERE kind <> 'connection' ORDER BY id")
                return (0..<rows.rowCount).map { "\(rows.string($0, 0) ?? "") \(rows.string($0, 1) ?? "")" }
            }
            #expect(logged == ["issue-credential offer-received", "present-proof request-received", "issue-credential abandoned"])
            let unlogged = try await database.pool.transaction(tenant: otherID) { session in
                try session.query("SELECT count(*) FROM aerie.events").int(0, 0)
            }
            #expect(unlogged == 0)
        }
    }
}
