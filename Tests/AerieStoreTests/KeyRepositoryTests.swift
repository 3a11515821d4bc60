import AerieCore
import AerieStore
import AerieTesting
import Foundation
import Testing

/// `aerie.tenant_keys` and the verkey lookup, below the wallet: what the store guarantees
/// whatever the caller does.
@Suite(.timeLimit(.minutes(10))) struct KeyRepositoryTests {
    static let verkeyA = "4koTsSeuhTvYcnNUCpzeazsjzGEh143q1WEDaWKNe8TT"
    static let verkeyB = "BQmpqZg6EAy7ytEaKEEyefAPqSDSKjxvUkXFdV451fYV"
    static let verkeyC = "HZEwrF5NWokpVPaega4bHYjpVvRSuhR2cqNk2T94E4WH"

    @Test func keysAreConfinedToTheirTenant() async throws {
        try await StoreFixture.with { fixture in
            let a = try await fixture.createTenant("A").id
            let b = try await fixture.createTenant("B").id
            try await fixture.runtime.sealed(a).transaction { transaction in
                try transaction.keys.insert(verkey: Self.verkeyA, sealedSecret: [1, 2, 3])
                try transaction.keys.insert(verkey: Self.verkeyC, sealedSecret: [7])
            }
            try await fixture.runtime.sealed(b).transaction {
                try $0.keys.insert(verkey: Self.verkeyB, sealedSecret: [4, 5])
            }

            let (aList, aOwn, aOther, aBoth) = try await fixture.runtime.sealed(a).transaction { tx in
                (
                    try tx.keys.list(after: nil, limit: 10).map(\.verkey),
                    try tx.keys.sealedSecret(verkey: Self.verkeyA),
                    try tx.keys.sealedSecret(verkey: Self.verkeyB),
                    try tx.keys.sealedSecrets(verkeys: [Self.verkeyB, Self.verkeyA, "x\"y\\z,{}", "NULL", ""])
                )
            }
            #expect(aList == [Self.verkeyA, Self.verkeyC])
            #expect(aOwn == [1, 2, 3])
            #expect(aOther == nil)
            #expect(aBoth == [Self.verkeyA: [1, 2, 3]])
            #expect(
                try await fixture.runtime.sealed(a).transaction { try $0.keys.list(after: Self.verkeyA, limit: 10) }
                    .map(\.verkey) == [Self.verkeyC])
            #expect(
                try await fixture.runtime.sealed(b).transaction { try $0.keys.remove(verkey: Self.verkeyA) } == false)
            #expect(
                try await fixture.runtime.sealed(b).transaction { try $0.keys.list(after: nil, limit: 10) }.map(
                    \.verkey) == [Self.verkeyB])

            // One owner per verkey, whoever asks; the message does not say who holds it.
            let taken = await #expect(throws: AerieError.self) {
                try await fixture.runtime.sealed(b).transaction {
                    try $0.keys.insert(verkey: Self.verkeyA, sealedSecret: [9])
                }
            }
            #expect(taken?.code == .conflict)
            #expect(taken?.message == "the key already exists")

            // Only verkey-shaped text is stored.
            await #expect(throws: AerieError.self) {
                try await fixture.runtime.sealed(b).transaction {
                    try $0.keys.insert(verkey: "not-a-verkey", sealedSecret: [9])
                }
            }

            #expect(try await fixture.runtime.tenants.owner(ofVerkey: Self.verkeyA) == a)
            #expect(try await fixture.runtime.tenants.owner(ofVerkey: Self.verkeyB) == b)
            #expect(try await fixture.runtime.tenants.owner(ofVerkey: "x") == nil)
            #expect(try await fixture.runtime.sealed(a).transaction { try $0.keys.remove(verkey: Self.verkeyA) })
            #expect(try await fixture.runtime.tenants.owner(ofVerkey: Self.verkeyA) == nil)
        }
    }

    @Test func schemaKeepsTheKeysTableLockedDown() async throws {
        try await StoreFixture.with { fixture in
            let facts = try await fixture.asSuperuser { session in
                try session.query(
                    """
                    SELECT c.relrowsecurity, c.relforcerowsecurity,
                        has_table_privilege('aerie_runtime', 'aerie.tenant_keys', 'UPDATE'),
                        has_table_privilege('aerie_runtime', 'aerie.tenant_keys', 'SELECT'),
                        p.prosecdef, array_to_string(p.proconfig, ','), pg_get_userbyid(p.proowner),
                        has_function_privilege('aerie_runtime', p.oid, 'EXECUTE'),
                        has_function_privilege('public', p.oid, 'EXECUTE')
                    FROM pg_class c, pg_proc p
                    WHERE c.oid = 'aerie.tenant_keys'::regclass AND p.oid = 'aerie.tenant_for_verkey(text)'::regprocedure
                    """
                ).allRows()
            }
            #expect(facts == [["t", "t", "f", "t", "t", "search_path=pg_catalog, pg_temp", "aerie_owner", "t", "f"]])

            // Every tenant table (a tenant_id column) has forced row-level security.
            let unprotected = try await fixture.asSuperuser { session in
                try session.query(
                    """
                    SELECT c.relname FROM pg_class c
                    JOIN pg_namespace n ON n.oid = c.relnamespace
                    JOIN pg_attribute a ON a.attrelid = c.oid AND a.attname = 'tenant_id'
                    WHERE n.nspname = 'aerie' AND c.relkind = 'r' AND NOT (c.relrowsecurity AND c.relforcerowsecurity)
                    """
                ).allRows()
            }
            #expect(unprotected == [])
        }
    }
}
