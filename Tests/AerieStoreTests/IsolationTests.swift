import AerieCore
import AerieStore
import AerieTesting
import Logging
import Testing

/// Isolation is PostgreSQL's job: these tests go around the repositories with raw SQL as the
/// runtime role and show that row-level security still holds.
@Suite(.timeLimit(.minutes(10))) struct IsolationTests {
    @Test func runtimeRoleCannotBypassRowLevelSecurity() async throws {
        try await StoreFixture.with { fixture in
            try await fixture.runtime.verifyRuntimeRole()
            let roles = try await fixture.asSuperuser { session in
                try session.query(
                    "SELECT rolname, rolsuper, rolbypassrls, rolcanlogin FROM pg_roles WHERE rolname IN ('aerie_app', 'aerie_runtime') ORDER BY rolname"
                ).allRows()
            }
            #expect(roles == [["aerie_app", "f", "f", "t"], ["aerie_runtime", "f", "f", "f"]])
            let owners = try await fixture.asSuperuser { session in
                try session.query(
                    """
                    SELECT DISTINCT pg_get_userbyid(c.relowner) FROM pg_class c
                    JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = 'aerie'
                    UNION SELECT pg_get_userbyid(nspowner) FROM pg_namespace WHERE nspname = 'aerie'
                    """
                ).allRows()
            }
            #expect(owners == [["aerie_owner"]])
            let rls = try await fixture.asSuperuser { session in
                try session.query(
                    "SELECT relrowsecurity, relforcerowsecurity FROM pg_class WHERE oid = 'aerie.tenant_settings'::regclass"
                ).allRows()
            }
            #expect(rls == [["t", "t"]])
        }
    }

    @Test func startupCheckRefusesOwnerAndSuperuser() async throws {
        try await StoreFixture.with { fixture in
            for conninfo in [fixture.database.ownerConninfo, fixture.database.superuserConninfo] {
                let wrong = AerieDatabase(
                    configuration: DatabaseConfiguration(conninfo: conninfo, maxConnections: 1),
                    logger: Logger(label: "test"))
                await #expect(throws: DatabaseSetupError.self) { try await wrong.verifyRuntimeRole() }
                await wrong.shutdown()
            }
        }
    }

    @Test func tenantsSeeOnlyTheirOwnRows() async throws {
        try await StoreFixture.with { fixture in
            let a = try await fixture.createTenant("A").id
            let b = try await fixture.createTenant("B").id
            try await fixture.runtime.sealed(a).transaction { try $0.settings.set("colour", to: "red") }
            try await fixture.runtime.sealed(b).transaction { try $0.settings.set("colour", to: "blue") }
            try await fixture.runtime.sealed(b).transaction { try $0.settings.set("size", to: 2) }

            // No tenant set: nothing visible.
            let unscoped = try await fixture.runtime.withSession { session in
                try session.query("SELECT count(*) FROM aerie.tenant_settings").int(0, 0)
            }
            #expect(unscoped == 0)

            // Tenant A set: B's rows cannot be read, changed or deleted, even when named.
            let (visible, readB, updatedB, deletedB) = try await fixture.runtime.withSession(tenant: a) { session in
                let bText = SQLValue.text(b.rawValue)
                return (
                    try session.query("SELECT tenant_id::text FROM aerie.tenant_settings").allRows(),
                    try session.query("SELECT 1 FROM aerie.tenant_settings WHERE tenant_id = $1::uuid", [bText]).rowCount,
                    try session.execute(
                        "UPDATE aerie.tenant_settings SET value = '\"hacked\"' WHERE tenant_id = $1::uuid", [bText]),
                    try session.execute("DELETE FROM aerie.tenant_settings WHERE tenant_id = $1::uuid", [bText])
                )
            }
            #expect(visible == [[a.rawValue]])
            #expect(readB == 0)
            #expect(updatedB == 0)
            #expect(deletedB == 0)

            // Inserting a row for B while A is set fails the policy's WITH CHECK.
            await #expect(throws: AerieError.self) {
                try await fixture.runtime.withSession(tenant: a) { session in
                    try session.execute(
                        "INSERT INTO aerie.tenant_settings (tenant_id, key, value) VALUES ($1::uuid, 'evil', '1')",
                        [.text(b.rawValue)])
                }
            }
            // Nor can A move its own row over to B.
            await #expect(throws: AerieError.self) {
                try await fixture.runtime.withSession(tenant: a) { session in
                    try session.execute("UPDATE aerie.tenant_settings SET tenant_id = $1::uuid", [.text(b.rawValue)])
                }
            }

            let bRows = try await fixture.runtime.sealed(b).transaction { try $0.settings.list(after: nil, limit: 10) }
            #expect(bRows == [TenantSetting(key: "colour", value: "blue"), TenantSetting(key: "size", value: 2)])
            let aRows = try await fixture.runtime.sealed(a).transaction { try $0.settings.list(after: nil, limit: 10) }
            #expect(aRows == [TenantSetting(key: "colour", value: "red")])
        }
    }

    @Test func settingsRepository() async throws {
        try await StoreFixture.with { fixture in
            let tenant = fixture.runtime.sealed(try await fixture.createTenant("A").id)
            let value: JSONValue = ["nested": ["list": [1, .double(2.5), "x", nil, true]], "unicode": "ünï ✓"]
            try await tenant.transaction { transaction in
                #expect(try transaction.settings.get("missing") == nil)
                for key in ["b", "a", "d", "c"] { try transaction.settings.set(key, to: .string(key)) }
                try transaction.settings.set("a", to: value)
            }
            let (a, page1, page2, removed, removedAgain) = try await tenant.transaction { transaction in
                (
                    try transaction.settings.get("a"),
                    try transaction.settings.list(after: nil, limit: 2).map(\.key),
                    try transaction.settings.list(after: "b", limit: 10).map(\.key),
                    try transaction.settings.remove("c"),
                    try transaction.settings.remove("c")
                )
            }
            #expect(a == value)
            #expect(page1 == ["a", "b"])
            #expect(page2 == ["c", "d"])
            #expect(removed && !removedAgain)
        }
    }

    @Test func failedTransactionRollsBackEverything() async throws {
        struct Abort: Error {}
        // One connection, so the statements prepared by the rolled-back transaction are reused.
        try await StoreFixture.with(maxConnections: 1) { fixture in
            let tenant = fixture.runtime.sealed(try await fixture.createTenant("A").id)
            await #expect(throws: Abort.self) {
                try await tenant.transaction { transaction in
                    try transaction.settings.set("k", to: 1)
                    throw Abort()
                }
            }
            #expect(try await tenant.transaction { try $0.settings.get("k") } == nil)
            try await tenant.transaction { try $0.settings.set("k", to: 2) }
            #expect(try await tenant.transaction { try $0.settings.get("k") } == 2)
        }
    }
}
