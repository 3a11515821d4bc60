import AerieCore
import AerieStore
import AerieTesting
import Foundation
import Testing

/// A received message stored on its own (`TenantDatabase.store`) is announced after its commit,
/// in the commit's round trip, instead of by it (schema/0076, `announceEventsAfterCommit`): the
/// event is heard once per message stored, for its own tenant, never for a store that rolled
/// back, and nothing is left kept on the pooled connection for the next transaction.
@Suite(.timeLimit(.minutes(10))) struct MessageEventsAfterCommitTests {
    static let verkey = "4koTsSeuhTvYcnNUCpzeazsjzGEh143q1WEDaWKNe8TT"

    static func receipt(_ connection: ConnectionRecord, _ id: String) -> InboundReceipt {
        InboundReceipt(
            message: MailboxMessage(
                uid: UUID(), connectionId: connection.id, recipientVerkey: verkey, senderVerkey: "THEIRS", messageId: id,
                type: "https://didcomm.org/basicmessage/1.0/message", threadId: nil, payload: ["@id": .string(id), "content": "hi"]))
    }

    /// What the pooled connection keeps for an announcement after commit (nothing, between
    /// transactions).
    static func kept(_ pool: AerieDatabase) async throws -> String {
        try await pool.pool.withConnection { try $0.query("SELECT coalesce(current_setting('aerie.notify_pending', true), '')").string(0, 0) ?? "?" }
    }

    @Test func aStoredMessageIsAnnouncedOnceAfterItsCommitForItsTenant() async throws {
        try await StoreFixture.with(maxConnections: 1) { fixture in
            let aID = try await fixture.createTenant("A").id
            let bID = try await fixture.createTenant("B").id
            let (a, b) = (fixture.runtime.sealed(aID), fixture.runtime.sealed(bID))
            let connection = InboundPathStoreTests.connection(myVerkey: Self.verkey, thread: "a")
            try await a.transaction { try $0.connections.insert(connection) }
            try await b.transaction { try $0.connections.insert(connection) }
            let (heard, listener) = try await fixture.listen()
            defer { listener.stop() }

            // Still one round trip: the announcement travels after the commit's Sync.
            let roundTrips = { try await fixture.runtime.pool.withConnection { $0.roundTripCount } }
            let first = Self.receipt(connection, "m-1")
            let before = try await roundTrips()
            #expect(try await a.store(first) == .new(first.message.uid))
            #expect(try await roundTrips() - before == 1)
            let other = Self.receipt(connection, "m-1")
            #expect(try await b.store(other) == .new(other.message.uid))
            // A copy stored before: the store ahead rolls back, the claim finds the row; nothing new.
            #expect(try await a.store(Self.receipt(connection, "m-1")) == .alreadyHandled(first.message.uid))

            let events = try await heard.parsed(kind: "message", atLeast: 2)
            try await Task.sleep(for: .milliseconds(300))
            let all = try await heard.parsed(kind: "message", atLeast: 2)
            #expect(all.count == 2, "\(all)")
            #expect(events.first?["tenant"] == .string(aID.rawValue) && events.first?["uid"] == .string(first.message.uid.lowercasedString))
            #expect(events.first?["pairwiseDID"] == .string("DID-a"))
            #expect(events.last?["tenant"] == .string(bID.rawValue) && events.last?["uid"] == .string(other.message.uid.lowercasedString))
            #expect(try await Self.kept(fixture.runtime) == "")
        }
    }

    /// Alone on the pool, a store's event goes with its commit; while other work holds a
    /// connection, after it (the store's transaction asked for it: a trigger of the test's own,
    /// as the superuser, records what the insert saw). Either way it is heard once.
    @Test func theEventGoesAfterTheCommitOnlyWhileOtherWorkIsInFlight() async throws {
        try await StoreFixture.with(maxConnections: 2) { fixture in
            let aID = try await fixture.createTenant("A").id
            let a = fixture.runtime.sealed(aID)
            let connection = InboundPathStoreTests.connection(myVerkey: Self.verkey, thread: "a")
            try await a.transaction { try $0.connections.insert(connection) }
            try await fixture.asSuperuser { session in
                try session.execute("CREATE TABLE public.asked (uid uuid, setting text)")
                try session.execute(
                    """
                    CREATE FUNCTION public.record_asked() RETURNS trigger LANGUAGE plpgsql SECURITY DEFINER AS $$
                    BEGIN
                        INSERT INTO public.asked VALUES (NEW.uid, coalesce(current_setting('aerie.notify_after_commit', true), ''));
                        RETURN NULL;
                    END $$
                    """)
                try session.execute("CREATE TRIGGER record_asked AFTER INSERT ON aerie.mailbox FOR EACH ROW EXECUTE FUNCTION public.record_asked()")
            }
            let (heard, listener) = try await fixture.listen()
            defer { listener.stop() }

            let alone = Self.receipt(connection, "m-1")
            #expect(try await a.store(alone) == .new(alone.message.uid))
            let busy = Task { try await fixture.runtime.pool.withConnection { _ = try $0.query("SELECT pg_sleep(1)") } }
            for _ in 0..<500 where fixture.runtime.pool.usage.inUse < 1 { try await Task.sleep(for: .milliseconds(10)) }
            let meeting = Self.receipt(connection, "m-2")
            #expect(try await a.store(meeting) == .new(meeting.message.uid))
            try await busy.value

            let asked = try await fixture.asSuperuser { try $0.query("SELECT uid::text, setting FROM public.asked ORDER BY setting").allRows() }
            #expect(asked == [[alone.message.uid.lowercasedString, ""], [meeting.message.uid.lowercasedString, "on"]])
            let uids = try await heard.parsed(kind: "message", atLeast: 2).compactMap { $0["uid"]?.stringValue }
            #expect(uids == [alone.message.uid, meeting.message.uid].map(\.lowercasedString))
            #expect(try await Self.kept(fixture.runtime) == "")
        }
    }

    /// A store refused by the quota (its transaction rolled back) announces nothing, and leaves
    /// nothing on the connection that the next tenant's store, on the same connection, would send.
    /// The pool's other connection is held meanwhile, so the stores ask for announcements after
    /// their commits, all on the one connection left.
    @Test func aRolledBackStoreAnnouncesNothing() async throws {
        try await StoreFixture.with { fixture in
            let aID = try await fixture.createTenant("A").id
            let bID = try await fixture.createTenant("B").id
            let connection = InboundPathStoreTests.connection(myVerkey: Self.verkey, thread: "a")
            try await fixture.runtime.sealed(aID).transaction { try $0.connections.insert(connection) }
            try await fixture.runtime.sealed(bID).transaction { try $0.connections.insert(connection) }
            let (heard, listener) = try await fixture.listen()
            defer { listener.stop() }
            try await withPool(
                fixture.database.runtimeConninfo, maxConnections: 2,
                quotas: DatabaseConfiguration.Quotas(mailboxMessages: 1, mailboxBytes: 0, outboxPending: 0)
            ) { pool in
                let (a, b) = (pool.sealed(aID), pool.sealed(bID))
                let busy = Task { try await pool.pool.withConnection { _ = try $0.query("SELECT pg_sleep(1.5)") } }
                for _ in 0..<500 where pool.pool.usage.inUse < 1 { try await Task.sleep(for: .milliseconds(10)) }
                let kept = Self.receipt(connection, "m-1")
                #expect(try await a.store(kept) == .new(kept.message.uid))
                let refused = Self.receipt(connection, "m-2")
                await #expect(throws: AerieError.self) { try await a.store(refused) }
                #expect(try await Self.kept(pool) == "")
                let others = Self.receipt(connection, "m-2")
                #expect(try await b.store(others) == .new(others.message.uid))
                try await busy.value

                _ = try await heard.parsed(kind: "message", atLeast: 2)
                try await Task.sleep(for: .milliseconds(300))
                let uids = try await heard.parsed(kind: "message", atLeast: 2).compactMap { $0["uid"]?.stringValue }
                #expect(uids == [kept.message.uid.lowercasedString, others.message.uid.lowercasedString])
            }
        }
    }

    /// The mechanism on its own: a transaction that asked for it NOTIFYs nothing at its commit;
    /// the event waits in the session for `aerie.notify_pending_events()`. A transaction that did
    /// not ask announces at its commit, as before. Asked after the transaction began (its `BEGIN`
    /// and first statement sent), the announcement follows its `COMMIT`.
    @Test func theEventWaitsForItsAnnouncementAfterTheCommit() async throws {
        try await StoreFixture.with(maxConnections: 1) { fixture in
            let aID = try await fixture.createTenant("A").id
            let (heard, listener) = try await fixture.listen()
            defer { listener.stop() }
            try await fixture.runtime.pool.withConnection { try Self.insert($0, aID, "later", announcingAfterCommit: true) }
            try await Task.sleep(for: .milliseconds(300))
            #expect(try await heard.parsed(kind: "message", atLeast: 0).isEmpty)
            #expect(try await Self.kept(fixture.runtime).contains("\"kind\": \"message\""))

            try await fixture.runtime.pool.withConnection { _ = try $0.query("SELECT aerie.notify_pending_events()") }
            #expect(try await heard.parsed(kind: "message", atLeast: 1).count == 1)
            #expect(try await Self.kept(fixture.runtime) == "")

            try await fixture.runtime.pool.withConnection { try Self.insert($0, aID, "now", announcingAfterCommit: false) }
            #expect(try await heard.parsed(kind: "message", atLeast: 2).count == 2)

            // Through DatabaseSession: asked once the transaction has begun, then a COMMIT.
            let message = MailboxQuotaTests.message()
            try await fixture.runtime.pool.transaction(tenant: aID) { session in
                _ = try session.query("SELECT 1")
                try session.announceEventsAfterCommit()
                _ = try session.query(
                    """
                    INSERT INTO aerie.mailbox (tenant_id, uid, recipient_verkey, message_id, type, payload)
                    VALUES ($1::uuid, $2::uuid, 'K', 'through-session', 't', '{"content":"x"}')
                    """, [.text(aID.rawValue), .text(message.uid.lowercasedString)])
            }
            let events = try await heard.parsed(kind: "message", atLeast: 3)
            #expect(events.count == 3 && events.last?["uid"] == .string(message.uid.lowercasedString))
            #expect(try await Self.kept(fixture.runtime) == "")
        }
    }

    /// A message of `tenant` inserted in a transaction of its own on `connection`, which asks for
    /// its event after the commit or not.
    static func insert(_ connection: PostgresConnection, _ tenant: TenantID, _ id: String, announcingAfterCommit: Bool) throws {
        try connection.query("BEGIN")
        try connection.query(
            "SELECT set_config('aerie.tenant_id', $1, true), set_config('aerie.notify_after_commit', $2, true)",
            [.text(tenant.rawValue), .text(announcingAfterCommit ? "on" : "off")])
        try connection.query(
            """
            INSERT INTO aerie.mailbox (tenant_id, uid, recipient_verkey, message_id, type, payload)
            VALUES ($1::uuid, gen_random_uuid(), 'K', $2, 't', '{"content":"x"}')
            """, [.text(tenant.rawValue), .text(id)])
        try connection.query("COMMIT")
    }
}
