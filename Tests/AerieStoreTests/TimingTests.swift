import AerieCore
import AerieStore
import AerieTesting
import Foundation
import Testing

/// Round-trip timings of the hot paths, printed for comparison. Opt-in (`AERIE_STORE_TIMING=1`)
/// since timings on a shared 2-core machine prove nothing by themselves.
@Suite(.enabled(if: ProcessInfo.processInfo.environment["AERIE_STORE_TIMING"] == "1"), .timeLimit(.minutes(10)))
struct TimingTests {
    @Test func tenantTransactionRoundTrip() async throws {
        try await StoreFixture.with(maxConnections: 1) { fixture in
            let token = randomBytes(32)
            let id = try await fixture.createTenant("A", tokenHash: token).id
            let tenant = fixture.runtime.sealed(id)
            try await tenant.transaction { try $0.settings.set("k", to: "v") }
            let iterations = 2000

            func measure(_ label: String, _ body: () async throws -> Void) async throws {
                for _ in 0..<100 { try await body() }  // warm up
                let start = ContinuousClock.now
                for _ in 0..<iterations { try await body() }
                let perCall = (ContinuousClock.now - start) / iterations
                print("timing: \(label): \(perCall.formatted(.units(allowed: [.microseconds], width: .narrow)))")
            }

            try await measure("isActive (1 round trip)") {
                _ = try await fixture.runtime.tenants.isActive(id, tokenHash: token)
            }
            try await measure("tenant transaction, settings.get (pipelined BEGIN+set_config+SELECT, COMMIT)") {
                _ = try await tenant.transaction { try $0.settings.get("k") }
            }
            try await measure("tenant transaction, settings.set") {
                try await tenant.transaction { try $0.settings.set("k", to: "v") }
            }
            try await measure("same read, one statement per round trip (BEGIN, set_config, SELECT, COMMIT)") {
                _ = try await fixture.runtime.pool.read { session in
                    try session.query("BEGIN")
                    try session.query("SELECT set_config('aerie.tenant_id', $1, true)", [.text(id.rawValue)])
                    let value = try session.query(
                        "SELECT value FROM aerie.tenant_settings WHERE tenant_id = $1::uuid AND key = $2",
                        [.text(id.rawValue), .text("k")]
                    ).string(0, 0)
                    try session.query("COMMIT")
                    return value
                }
            }
            try await measure("bare SELECT 1 through the pool") {
                _ = try await fixture.runtime.pool.read { try $0.query("SELECT 1").rowCount }
            }
        }
    }
}
