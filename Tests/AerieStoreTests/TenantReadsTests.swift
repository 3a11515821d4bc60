import AerieCore
import AerieStore
import AerieTesting
import Foundation
import Testing

/// `TenantDatabase.read`: each statement a read-only transaction of its own, still confined to
/// the tenant by row-level security, and unable to write.
@Suite(.timeLimit(.minutes(10))) struct TenantReadsTests {
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

    /// `messages.download`'s read runs under `plan_cache_mode = force_generic_plan` (one statement
    /// per combination of filters): on a one-connection pool, A's downloads with every filter
    /// combination see only A's rows, B's only B's, with the payload as the text it was stored
    /// as, and the next user of the connection finds the planner's setting back at `auto`.
    @Test func genericPlanDownloadsStayScopedAndLeaveNothingBehind() async throws {
        try await StoreFixture.with(maxConnections: 1) { fixture in
            let a = fixture.runtime.sealed(try await fixture.createTenant("A").id)
            let b = fixture.runtime.sealed(try await fixture.createTenant("B").id)
            var uidsByTenant: [[UUID]] = []
            for (index, tenant) in [a, b].enumerated() {
                var record = ConnectionStoreTests.record(invitationId: "inv-\(index)", key: "KEY\(index)")
                record.myDid = "MYDID"
                record.myVerkey = "MYVERKEY"
                let stored = record
                try await tenant.transaction { try $0.connections.insert(stored) }
                var uids: [UUID] = []
                for n in 0..<3 {
                    let message = MailboxMessage(
                        connectionId: stored.id, recipientVerkey: "MYVERKEY", senderVerkey: nil, messageId: "m-\(index)-\(n)",
                        type: "https://didcomm.org/basicmessage/1.0/message", threadId: nil,
                        payload: ["@type": "https://didcomm.org/basicmessage/1.0/message", "content": .string("tenant \(index) \"\(n)\"")])
                    uids.append(try await tenant.transaction { try $0.mailbox.insert(message) }.uid)
                }
                uidsByTenant.append(uids)
            }
            let received = [MailboxMessage.received]
            let stored = uidsByTenant
            for _ in 0..<7 {  // past the plan cache's first five custom plans
                for (index, tenant) in [a, b].enumerated() {
                    let all = try await tenant.read { try $0.mailbox.download(MailboxQuery(statuses: received, limit: 10)) }
                    #expect(all.map(\.uid) == stored[index])
                    #expect(all.map(\.payloadType) == Array(repeating: "https://didcomm.org/basicmessage/1.0/message", count: 3))
                    #expect(try all.map { try $0.payload["content"] } == (0..<3).map { .string("tenant \(index) \"\($0)\"") })
                    let picked = try await tenant.read { tx in
                        try tx.mailbox.download(
                            MailboxQuery(statuses: received, uids: stored[1 - index] + [stored[index][1]], limit: 10))
                    }
                    #expect(picked.map(\.uid) == [stored[index][1]])
                    let first = all[0].position
                    let filtered = try await tenant.read { tx in
                        try tx.mailbox.download(MailboxQuery(statuses: received, pairwiseDids: ["MYDID"], after: first, limit: 1))
                    }
                    #expect(filtered.map(\.uid) == [stored[index][1]])
                }
            }
            let after = try await fixture.runtime.withSession { session in
                let settings = try session.query(
                    "SELECT current_setting('aerie.tenant_id', true), current_setting('transaction_read_only'), current_setting('plan_cache_mode')")
                return [settings.string(0, 0) ?? "", settings.string(0, 1) ?? "", settings.string(0, 2) ?? ""]
            }
            #expect(after == ["", "off", "auto"])
        }
    }

    /// A read is one implicit transaction (no `BEGIN`/`COMMIT`): its tenant and read-only settings
    /// end with it. On a one-connection pool, so every call reuses the same connection: right
    /// after A's read, an unscoped session sees no tenant and no rows, B's read sees only B's
    /// rows, and the next transaction can write.
    @Test func aPooledConnectionAfterAnotherTenantsReadKeepsNothingOfIt() async throws {
        try await StoreFixture.with(maxConnections: 1) { fixture in
            let a = try await fixture.createTenant("A").id
            let b = try await fixture.createTenant("B").id
            try await fixture.runtime.sealed(a).transaction { try $0.settings.set("k", to: "a's") }
            try await fixture.runtime.sealed(b).transaction { try $0.settings.set("only-b", to: "b's") }

            #expect(try await fixture.runtime.sealed(a).read { try $0.settings.get("k") } == "a's")
            let after = try await fixture.runtime.withSession { session in
                let settings = try session.query(
                    "SELECT current_setting('aerie.tenant_id', true), current_setting('transaction_read_only')")
                let rows = try session.query("SELECT count(*) FROM aerie.tenant_settings").int(0, 0)
                return [settings.string(0, 0) ?? "", settings.string(0, 1) ?? "", "\(rows ?? -1)"]
            }
            #expect(after == ["", "off", "0"])

            #expect(try await fixture.runtime.sealed(a).read { try $0.settings.get("k") } == "a's")
            let seenByB = try await fixture.runtime.sealed(b).read { tx in
                [try tx.settings.get("k"), try tx.settings.get("only-b")]
            }
            #expect(seenByB == [nil, "b's"])
            #expect(try await fixture.runtime.sealed(b).read { try $0.settings.list(after: nil, limit: 10) }.map(\.key) == ["only-b"])

            // A failed read leaves nothing behind either.
            await #expect(throws: AerieError.self) {
                try await fixture.runtime.sealed(a).read { try $0.settings.set("k", to: "written") }
            }
            try await fixture.runtime.sealed(b).transaction { try $0.settings.set("only-b", to: "b's again") }
            #expect(try await fixture.runtime.sealed(b).read { try $0.settings.get("only-b") } == "b's again")
            #expect(try await fixture.runtime.sealed(a).read { try $0.settings.get("only-b") } == nil)
        }
    }

    /// Tenant write transactions (`transaction`, and `transactionStatement`: the mark after
    /// delivery) run under `plan_cache_mode = force_generic_plan`, and only they: on a
    /// one-connection pool, so one cached plan per statement serves both tenants, A's and B's
    /// transactions alternate past the first five calls; each sees and counts only its own rows
    /// (row-level security reads the tenant at execution, not into the plan), the triggers inside
    /// saw the setting, and an unscoped session afterwards finds `auto` and no tenant.
    @Test func tenantWriteTransactionsUseGenericPlansForThemselvesAlone() async throws {
        try await StoreFixture.with(maxConnections: 1) { fixture in
            let a = try await fixture.createTenant("A").id
            let b = try await fixture.createTenant("B").id
            try await fixture.asSuperuser { session in
                try session.execute("CREATE TABLE public.seen_plan_modes (tenant text, mode text NOT NULL, op text NOT NULL)")
                try session.execute("GRANT INSERT, SELECT ON public.seen_plan_modes TO PUBLIC")
                try session.execute(
                    """
                    CREATE FUNCTION public.note_plan_mode() RETURNS trigger LANGUAGE plpgsql AS $$
                    BEGIN
                        INSERT INTO public.seen_plan_modes
                        VALUES (current_setting('aerie.tenant_id', true), current_setting('plan_cache_mode'), TG_OP);
                        RETURN NULL;
                    END $$
                    """)
                try session.execute(
                    "CREATE TRIGGER note_plan_mode AFTER INSERT OR UPDATE OR DELETE ON aerie.outbox FOR EACH ROW EXECUTE FUNCTION public.note_plan_mode()")
            }
            var rows: [TenantID: [OutboxItem]] = [a: [], b: []]
            for round in 0..<7 {  // past the plan cache's five custom plans
                for tenant in [a, b] {
                    let item = OutboxItem(connectionId: nil, endpoint: "http://peer/\(tenant.rawValue)/\(round)", envelope: [UInt8(round)])
                    let pending = try await fixture.runtime.sealed(tenant).transaction { tx in
                        try tx.outbox.enqueue(item)
                        return try tx.outbox.pendingForUpdate(item.id)
                    }
                    #expect(pending?.id == item.id)
                    rows[tenant, default: []].append(item)
                    try await fixture.runtime.markOutboxSent([tenant: [item.id]])
                    let others = rows[tenant == a ? b : a] ?? []
                    let seen = try await fixture.runtime.sealed(tenant).transaction { tx in
                        try (others + [item]).map { try tx.outbox.pendingForUpdate($0.id)?.id }
                    }
                    #expect(seen == Array(repeating: nil, count: others.count + 1))
                }
            }
            let after = try await fixture.runtime.withSession { session in
                let settings = try session.query(
                    "SELECT current_setting('aerie.tenant_id', true), current_setting('plan_cache_mode'), current_setting('transaction_read_only')")
                return [settings.string(0, 0) ?? "", settings.string(0, 1) ?? "", settings.string(0, 2) ?? ""]
            }
            #expect(after == ["", "auto", "off"])
            let seen = try await fixture.asSuperuser { session in
                let result = try session.query(
                    """
                    SELECT s.t || ' ' || s.n FROM (
                        SELECT coalesce(tenant, '-') || ' ' || op || ' ' || mode AS t, count(*) AS n
                        FROM public.seen_plan_modes GROUP BY 1) s
                    """)
                return (0..<result.rowCount).map { result.string($0, 0)! }
            }
            #expect(seen.sorted() == [
                "\(a.rawValue) INSERT force_generic_plan 7", "\(a.rawValue) DELETE force_generic_plan 7",
                "\(b.rawValue) INSERT force_generic_plan 7", "\(b.rawValue) DELETE force_generic_plan 7",
            ].sorted())
            // Each tenant's rows were its own: all delivered, none left pending.
            for tenant in [a, b] {
                let pending = try await fixture.asSuperuser { try StoreFixture.pendingOutboxRows($0, tenant) }
                #expect(pending == 0)
            }
        }
    }
}
