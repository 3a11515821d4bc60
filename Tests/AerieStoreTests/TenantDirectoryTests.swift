import AerieCore
import AerieCrypto
import AerieStore
import AerieTesting
import Foundation
import Testing

@Suite(.timeLimit(.minutes(10))) struct TenantDirectoryTests {
    @Test func createGetAndConflicts() async throws {
        try await StoreFixture.with { fixture in
            let directory = fixture.runtime.tenants
            let token = randomBytes(32)
            let key: [UInt8] = [0, 1, 0x7f, 0x80, 0xff] + randomBytes(40)
            let id = TenantID.random()
            let before = Date()
            let dataKey = DataKey.generate()
            let created = try await directory.create(
                id: id, label: "Alice's wallet", sealer: dataKey.sealer(for: id), tokenHash: token, wrappedDataKey: key,
                masterKeyFingerprint: "mk1")
            #expect(created.id == id)
            // Sealed under the tenant's data key, handed out with the wrapped key that opens it.
            guard case .sealed(_, let wrapped) = created.label else { Issue.record("the label is stored in clear"); return }
            #expect(wrapped == key)
            #expect(try created.label.open(tenant: id) { id, _ in dataKey.sealer(for: id) } == "Alice's wallet")
            #expect(throws: AerieError.self) { try created.label.open(tenant: id) { id, _ in DataKey.generate().sealer(for: id) } }
            #expect(created.status == .active)
            #expect(created.masterKeyFingerprint == "mk1")
            #expect(abs(created.createdAt.timeIntervalSince(before)) < 60)
            #expect(try await directory.get(id) == created)
            #expect(try await directory.get(.random()) == nil)
            #expect(try await directory.wrappedDataKey(id) == key)
            #expect(try await directory.wrappedDataKey(.random()) == nil)

            // Same id, or same token hash: conflict.
            for (conflictID, conflictToken) in [(id, randomBytes(32)), (TenantID.random(), token)] {
                await #expect {
                    try await directory.create(
                        id: conflictID, label: "x", sealer: StoreFixture.labelSealer(conflictID), tokenHash: conflictToken, wrappedDataKey: key,
                        masterKeyFingerprint: "mk1")
                } throws: { ($0 as? AerieError)?.code == .conflict }
            }

            #expect(try await directory.replaceWrappedDataKey(id, with: [9, 9], masterKeyFingerprint: "mk2"))
            #expect(try await directory.wrappedDataKey(id) == [9, 9])
            #expect(try await directory.get(id)?.masterKeyFingerprint == "mk2")
        }
    }

    @Test func listPagesByID() async throws {
        try await StoreFixture.with { fixture in
            var ids: [TenantID] = []
            for index in 0..<5 { ids.append(try await fixture.createTenant("t\(index)").id) }
            ids.sort { $0.rawValue < $1.rawValue }
            var seen: [TenantID] = []
            var cursor: TenantID? = nil
            for _ in 0...ids.count {  // bounded: a cursor that never advances fails below instead of looping
                let page = try await fixture.runtime.tenants.list(after: cursor, limit: 2)
                #expect(page.count <= 2)
                seen += page.map(\.id)
                guard let last = page.last, page.count == 2 else { break }
                cursor = last.id
            }
            #expect(seen == ids)
            #expect(try await fixture.runtime.tenants.list(after: nil, limit: 0) == [])
        }
    }

    /// Backends, and one backend's tenants, page by id from a cursor: each combination of cursor
    /// and filter is a statement of its own (`SQLConditions`), so every one is walked here.
    @Test func backendsAndABackendsTenantsPageByID() async throws {
        try await StoreFixture.with { fixture in
            var backends: [BackendID] = []
            for index in 0..<5 {
                backends.append(try await fixture.runtime.backends.create(id: .random(), label: "b\(index)", tokenHash: randomBytes(32)).id)
            }
            backends.sort { $0.rawValue < $1.rawValue }
            var seenBackends: [BackendID] = []
            var backendCursor: BackendID? = nil
            for _ in 0...backends.count {  // bounded: a cursor that never advances fails below
                let page = try await fixture.runtime.backends.list(after: backendCursor, limit: 2)
                seenBackends += page.map(\.id)
                guard let last = page.last, page.count == 2 else { break }
                backendCursor = last.id
            }
            #expect(seenBackends == backends)

            let owner = backends[0]
            var owned: [TenantID] = []
            for index in 0..<5 {
                let id = TenantID.random()
                owned.append(
                    try await fixture.runtime.tenants.create(
                        id: id, label: "owned\(index)", sealer: StoreFixture.labelSealer(id), tokenHash: randomBytes(32),
                        wrappedDataKey: randomBytes(72),
                        masterKeyFingerprint: "test-master", backend: owner
                    ).id)
                _ = try await fixture.createTenant("other\(index)")  // no backend: never in the owner's pages
            }
            owned.sort { $0.rawValue < $1.rawValue }
            var seen: [TenantID] = []
            var cursor: TenantID? = nil
            for _ in 0...owned.count {
                let page = try await fixture.runtime.tenants.list(after: cursor, limit: 2, backend: owner)
                seen += page.map(\.id)
                guard let last = page.last, page.count == 2 else { break }
                cursor = last.id
            }
            #expect(seen == owned)
            #expect(try await fixture.runtime.tenants.list(after: nil, limit: 10, backend: backends[1]) == [])
        }
    }

    @Test func statusAndTokenRotationTakeEffectAtOnce() async throws {
        try await StoreFixture.with { fixture in
            let directory = fixture.runtime.tenants
            let token = randomBytes(32)
            let id = try await fixture.createTenant("A", tokenHash: token).id
            #expect(try await directory.authenticate(tokenHash: token)?.id == id)
            #expect(try await directory.isActive(id, tokenHash: token))
            #expect(try await directory.authenticate(tokenHash: randomBytes(32)) == nil)

            #expect(try await directory.setStatus(id, .suspended))
            #expect(try await directory.get(id)?.status == .suspended)
            #expect(try await directory.authenticate(tokenHash: token) == nil)
            #expect(try await !directory.isActive(id, tokenHash: token))
            #expect(try await directory.setStatus(id, .active))
            #expect(try await directory.isActive(id, tokenHash: token))

            let rotated = randomBytes(32)
            #expect(try await directory.replaceTokenHash(id, with: rotated))
            #expect(try await !directory.isActive(id, tokenHash: token))
            #expect(try await directory.authenticate(tokenHash: token) == nil)
            #expect(try await directory.isActive(id, tokenHash: rotated))
            #expect(try await directory.authenticate(tokenHash: rotated)?.id == id)

            let unknown = TenantID.random()
            #expect(try await !directory.replaceTokenHash(unknown, with: randomBytes(32)))
            #expect(try await !directory.setStatus(unknown, .suspended))
        }
    }

    @Test func deleteRemovesEveryRowOfThatTenantOnly() async throws {
        try await StoreFixture.with { fixture in
            let directory = fixture.runtime.tenants
            let tokenA = randomBytes(32)
            let a = try await fixture.createTenant("A", tokenHash: tokenA).id
            let b = try await fixture.createTenant("B").id
            try await fixture.runtime.sealed(a).transaction { transaction in
                for key in ["1", "2", "3"] { try transaction.settings.set(key, to: .string(key)) }
            }
            try await fixture.runtime.sealed(b).transaction { transaction in
                for key in ["1", "2"] { try transaction.settings.set(key, to: .string(key)) }
            }

            let counts = try #require(try await directory.delete(a))
            // Every tenant table is covered (later ones too), and only the settings held rows.
            #expect(Set(["connections", "events", "mailbox", "oob_invitations", "outbox", "tenant_keys", "tenant_settings", "tenant_usage"]).isSubset(of: counts.keys))
            #expect(counts["tenant_settings"] == 3)
            #expect(counts.filter { $0.key != "tenant_settings" }.values.allSatisfy { $0 == 0 }, "\(counts)")
            #expect(try await directory.get(a) == nil)
            #expect(try await !directory.isActive(a, tokenHash: tokenA))
            #expect(try await directory.delete(a) == nil)

            let remaining = try await fixture.runtime.sealed(b).transaction { try $0.settings.list(after: nil, limit: 10) }
            #expect(remaining.map(\.key) == ["1", "2"])
            #expect(try await directory.get(b) != nil)
            let all = try await fixture.asSuperuser { session in
                try session.query("SELECT tenant_id::text, count(*) FROM aerie.tenant_settings GROUP BY 1").allRows()
            }
            // The superuser bypasses RLS, so this sees every tenant's rows.
            #expect(all == [[b.rawValue, "2"]])
        }
    }

    @Test func adminCredential() async throws {
        try await StoreFixture.with { fixture in
            let directory = fixture.runtime.tenants
            #expect(try await directory.adminTokenHash() == nil)
            let first = randomBytes(32)
            #expect(try await directory.initializeAdminTokenHash(first))
            #expect(try await !directory.initializeAdminTokenHash(randomBytes(32)))
            #expect(try await directory.adminTokenHash() == first)
            let second = randomBytes(32)
            try await directory.setAdminTokenHash(second)
            #expect(try await directory.adminTokenHash() == second)
        }
    }

    @Test func concurrentAdminInitializationHasOneWinner() async throws {
        try await StoreFixture.with(maxConnections: 4) { fixture in
            let directory = fixture.runtime.tenants
            let wins = try await withThrowingTaskGroup(of: Bool.self) { group in
                for _ in 0..<8 { group.addTask { try await directory.initializeAdminTokenHash(randomBytes(32)) } }
                return try await group.reduce(0) { $0 + ($1 ? 1 : 0) }
            }
            #expect(wins == 1)
        }
    }

    @Test func deleteCoversTablesAddedLater() async throws {
        try await StoreFixture.with { fixture in
            // What a later migration would add: a tenant table and a child table referencing it.
            _ = try await TestDatabaseQuery.rows(
                fixture.database.ownerConninfo,
                """
                DO $$ BEGIN
                CREATE TABLE aerie.later_parents (
                    tenant_id uuid NOT NULL REFERENCES aerie.tenants (id), id int,
                    PRIMARY KEY (tenant_id, id));
                CREATE TABLE aerie.later_children (
                    tenant_id uuid NOT NULL, connection_id int, uid int,
                    PRIMARY KEY (tenant_id, uid),
                    FOREIGN KEY (tenant_id, connection_id) REFERENCES aerie.later_parents (tenant_id, id));
                ALTER TABLE aerie.later_parents ENABLE ROW LEVEL SECURITY;
                ALTER TABLE aerie.later_parents FORCE ROW LEVEL SECURITY;
                ALTER TABLE aerie.later_children ENABLE ROW LEVEL SECURITY;
                ALTER TABLE aerie.later_children FORCE ROW LEVEL SECURITY;
                CREATE POLICY tenant_isolation ON aerie.later_parents
                    USING (tenant_id = NULLIF(current_setting('aerie.tenant_id', true), '')::uuid)
                    WITH CHECK (tenant_id = NULLIF(current_setting('aerie.tenant_id', true), '')::uuid);
                CREATE POLICY tenant_isolation ON aerie.later_children
                    USING (tenant_id = NULLIF(current_setting('aerie.tenant_id', true), '')::uuid)
                    WITH CHECK (tenant_id = NULLIF(current_setting('aerie.tenant_id', true), '')::uuid);
                GRANT SELECT, INSERT, DELETE ON aerie.later_parents, aerie.later_children TO aerie_runtime;
                END $$
                """)
            let a = try await fixture.createTenant("A").id
            let b = try await fixture.createTenant("B").id
            for (tenant, messages) in [(a, 3), (b, 1)] {
                try await fixture.runtime.withSession(tenant: tenant) { session in
                    try session.execute("INSERT INTO aerie.later_parents VALUES ($1::uuid, 1)", [.text(tenant.rawValue)])
                    for uid in 0..<messages {
                        try session.execute(
                            "INSERT INTO aerie.later_children VALUES ($1::uuid, 1, $2::int)", [.text(tenant.rawValue), .int(uid)])
                    }
                    try session.execute(
                        "INSERT INTO aerie.tenant_settings VALUES ($1::uuid, 'k', '1')", [.text(tenant.rawValue)])
                }
            }
            let counts = try #require(try await fixture.runtime.tenants.delete(a))
            #expect(counts["later_children"] == 3 && counts["later_parents"] == 1 && counts["tenant_settings"] == 1, "\(counts)")
            #expect(
                counts.filter { !["later_children", "later_parents", "tenant_settings"].contains($0.key) }.values.allSatisfy { $0 == 0 },
                "\(counts)")
            let left = try await fixture.runtime.withSession(tenant: b) { session in
                try session.query(
                    "SELECT (SELECT count(*) FROM aerie.later_parents), (SELECT count(*) FROM aerie.later_children)"
                ).allRows()
            }
            #expect(left == [["1", "1"]])
        }
    }
}
