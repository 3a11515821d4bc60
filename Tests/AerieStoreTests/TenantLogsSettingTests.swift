import AerieCore
import AerieStore
import AerieTesting
import Foundation
import Testing

/// schema/0035: every tenant write transaction says whether its tenant logs events
/// (`aerie.tenant_logs`: 'off' for a tenant without a backend), and the triggers that log skip
/// their insert only when it says 'off'. Two tenants: A has a backend, B is the operator's.
@Suite(.timeLimit(.minutes(10))) struct TenantLogsSettingTests {
    static let setting = "SELECT current_setting('aerie.tenant_logs', true)"

    @Test func everyTenantTransactionSaysWhetherItsTenantLogs() async throws {
        try await StoreFixture.with(maxConnections: 1) { fixture in
            let a = try await fixture.createLoggedTenant("A").id
            let b = try await fixture.createTenant("B").id
            let pool = fixture.runtime.pool
            for (tenant, expected) in [(a, "on"), (b, "off")] {
                let inTransaction = try await pool.transaction(tenant: tenant) { try $0.query(Self.setting).string(0, 0) }
                #expect(inTransaction == expected)
                // A one-statement transaction (the outbox's lease and mark) fires no trigger that
                // logs and does not say: a statement there that did would log by the row.
                for durable in [true, false] {
                    let inOneStatement = try await pool.transactionStatement(tenant: tenant, durable: durable, Self.setting, []) {
                        $0.string(0, 0)
                    }
                    #expect(inOneStatement == nil || inOneStatement == "", "durable: \(durable)")
                }
            }
            // It ends with its transaction: the next user of the (one) connection finds it unset.
            let after = try await pool.read { try $0.query(Self.setting).string(0, 0) }
            #expect(after == nil || after == "")
        }
    }

    @Test func theTriggersSkipTheLogOnlyWhenTheTransactionSaysOff() async throws {
        try await StoreFixture.with(maxConnections: 1) { fixture in
            let a = try await fixture.createLoggedTenant("A").id
            let b = try await fixture.createTenant("B").id
            let (heard, listener) = try await fixture.listen()
            defer { listener.stop() }

            /// A new connection of `tenant` in a tenant transaction, with `aerie.tenant_logs` as the
            /// transaction set it, or overridden by `override` first ('' as if never set).
            @Sendable func insertConnection(_ tenant: TenantID, override: String? = nil) async throws -> String {
                let id = UUID().uuidString.lowercased()
                try await fixture.runtime.pool.transaction(tenant: tenant) { session in
                    if let override {
                        _ = try session.query("SELECT set_config('aerie.tenant_logs', $1, true)", [.text(override)])
                    }
                    _ = try session.execute(
                        """
                        INSERT INTO aerie.connections (tenant_id, id, state, invitation, invitation_kind)
                        VALUES ($1::uuid, $2::uuid, 'initialized', '{}', 'test')
                        """, [.text(tenant.rawValue), .text(id)])
                }
                return id
            }
            let saidA = try await insertConnection(a)
            let saidB = try await insertConnection(b)
            // Not said (an operator's, a migration's or an older server's transaction): the
            // tenant's row decides, as before schema/0035.
            let unsaidA = try await insertConnection(a, override: "")
            let unsaidB = try await insertConnection(b, override: "")
            // Said 'on' for a tenant without a backend: still nothing to log (no backend to log for).
            let forcedB = try await insertConnection(b, override: "on")
            // Said 'off' skips the log, whatever the tenant: what the setting is trusted with.
            let offA = try await insertConnection(a, override: "off")

            let logged: @Sendable (TenantID) async throws -> [String] = { tenant in
                try await fixture.asSuperuser { session in
                    let rows = try session.query(
                        "SELECT data->>'connectionId' FROM aerie.events WHERE tenant_id = $1::uuid AND kind = 'connection' ORDER BY id",
                        [.text(tenant.rawValue)])
                    return (0..<rows.rowCount).compactMap { rows.string($0, 0) }
                }
            }
            #expect(try await logged(a) == [saidA, unsaidA])
            #expect(try await logged(b).isEmpty)

            // Every one of them is NOTIFYd, logged or not (sessions' pushes, caches, waits).
            let notified = try await heard.parsed(kind: "connection", atLeast: 6)
            #expect(Set(notified.compactMap { $0["connectionId"]?.stringValue }) == [saidA, saidB, unsaidA, unsaidB, forcedB, offA])
            #expect(notified.filter { $0["tenant"] == .string(b.rawValue) }.count == 3)
        }
    }
}
