import AerieCore
import AerieStore
import AerieTesting
import Foundation
import Testing

/// `TenantDatabase.read`: each statement a read-only transaction of its own, still confined to
/// the tenant by row-level security, and unable to write.
@Suite struct TenantReadsTests {
    @Test func readsSeeOnlyTheirTenantAndCannotWrite() async throws {
        try await StoreFixture.with { fixture in
            let a = try await fixture.createTenant("A").id
            let b = try await fixture.createTenant("B").id
            try await fixture.runtime.sealed(a).transaction { try $0.settings.set("k", to: "a's") }
            try await fixture.runtime.sealed(b).transaction { try $0.settings.set("k", to: "b's") }
            // Two statements, each its own transaction, both scoped to the tenant.
            let seenByA = try await fixture.runtime.sealed(a).read { tx in
                [try tx.settings.get("k"), try tx.settings.get("k")]
            }
            #expect(seenByA == ["a's", "a's"])
            #expect(try await fixture.runtime.sealed(b).read { try $0.settings.get("k") } == "b's")
            await #expect(throws: AerieError.self) {
                try await fixture.runtime.sealed(a).read { try $0.settings.set("k", to: "written") }
            }
            #expect(try await fixture.runtime.sealed(a).read { try $0.settings.get("k") } == "a's")
        }
    }
}
