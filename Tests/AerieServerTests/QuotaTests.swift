import AerieClient
import AerieCore
import AerieCrypto
import AerieStore
import AerieTesting
import Foundation
import Testing

/// Per-tenant quotas (issue 13 item 4, schema/0020, the outbox's since schema/0034): a full mailbox refuses new inbound
/// messages with 503 and stores nothing (the peer retries; once there is room the same message
/// is taken); a tenant with too many messages waiting to be sent gets `quota_exceeded` from the
/// call that would send one, with nothing stored; another tenant is not affected.
@Suite(.timeLimit(.minutes(10))) struct QuotaTests {
    /// The tenant's mailbox count (the sum of its `aerie.tenant_usage` stripes) and its pending outbox rows (what the
    /// outbox quota counts, schema/0034).
    static func usage(_ server: LiveServer, tenant: TenantID) async throws -> [String?] {
        let rows = try await WalletFixture.asSuperuser(server.database) { session in
            try session.query(
                """
                SELECT (SELECT sum(u.mailbox_messages)::text FROM aerie.tenant_usage u WHERE u.tenant_id = $1::uuid),
                    (SELECT count(*) FROM aerie.outbox o WHERE o.tenant_id = $1::uuid AND o.status = 'pending')::text
                """,
                [.text(tenant.rawValue)]
            ).allRows()
        }
        return rows.first ?? []
    }

    @Test func aFullMailboxRefusesWithRetryableStatusAndLosesNothing() async throws {
        try await LiveServer.with(server: {
            $0.delivery.enabled = false
            $0.database.quotas = DatabaseConfiguration.Quotas(mailboxMessages: 4, mailboxBytes: 0, outboxPending: 0)
        }) { server in
            let (alice, aliceID) = try await server.tenantClient(label: "alice")
            let (bob, bobID) = try await server.tenantClient(label: "bob")
            defer { Task { await alice.close(); await bob.close() } }
            let alicePeer = try await TestPeer.connect(alice)
            let bobPeer = try await TestPeer.connect(bob)
            let port = server.didcommPort
            let before = try await DIDCommEndpointTests.mailboxCount(server, tenant: aliceID)
            #expect(before < 4)

            var statuses: [Int] = []
            for index in 0..<6 {
                let message = SenderAuthenticationTests.basic("quota-\(index)", "message \(index)")
                statuses.append(try await DIDCommEndpointTests.post(try alicePeer.pack(message), to: port))
            }
            let room = 4 - before
            #expect(statuses == Array(repeating: 202, count: room) + Array(repeating: 503, count: 6 - room), "\(statuses)")
            #expect(try await DIDCommEndpointTests.mailboxCount(server, tenant: aliceID) == 4)
            #expect(try await Self.usage(server, tenant: aliceID).first == "4")
            // Bob's mailbox is his own.
            let bobs = try bobPeer.pack(SenderAuthenticationTests.basic("bob-1", "hello bob"))
            #expect(try await DIDCommEndpointTests.post(bobs, to: port) == 202)

            // Room is made (a message removed); the refused message, sent again, is taken.
            _ = try await WalletFixture.asSuperuser(server.database) { session in
                try session.execute(
                    "DELETE FROM aerie.mailbox WHERE tenant_id = $1::uuid AND message_id = 'quota-0'", [.text(aliceID.rawValue)])
            }
            #expect(try await Self.usage(server, tenant: aliceID).first == "3")
            let retried = try alicePeer.pack(SenderAuthenticationTests.basic("quota-\(room)", "message \(room)"))
            #expect(try await DIDCommEndpointTests.post(retried, to: port) == 202)
            let contents = try await SenderAuthenticationTests.downloaded(alice).compactMap(\.content)
            #expect(contents.contains("message \(room)"))
            #expect(try await Self.usage(server, tenant: bobID).first == String(try await DIDCommEndpointTests.mailboxCount(server, tenant: bobID)))
        }
    }

    /// Peers posting at once into the last free places: exactly the room is taken (202), every
    /// other message is refused with 503 and stored nowhere, and the count equals the rows.
    @Test func concurrentInboundAtTheLimitTakesExactlyTheRoom() async throws {
        try await LiveServer.with(server: {
            $0.delivery.enabled = false
            $0.database.quotas = DatabaseConfiguration.Quotas(mailboxMessages: 6, mailboxBytes: 0, outboxPending: 0)
        }) { server in
            let (alice, aliceID) = try await server.tenantClient(label: "alice")
            defer { Task { await alice.close() } }
            let peer = try await TestPeer.connect(alice)
            let port = server.didcommPort
            let room = 6 - (try await DIDCommEndpointTests.mailboxCount(server, tenant: aliceID))
            let bodies = try (0..<16).map { try peer.pack(SenderAuthenticationTests.basic("race-\($0)", "message \($0)")) }
            let statuses = try await withThrowingTaskGroup(of: Int.self) { group in
                for body in bodies { group.addTask { try await DIDCommEndpointTests.post(body, to: port) } }
                return try await group.reduce(into: [Int]()) { $0.append($1) }
            }
            #expect(statuses.filter { $0 == 202 }.count == room, "\(statuses)")
            #expect(statuses.filter { $0 == 503 }.count == 16 - room, "\(statuses)")
            #expect(try await DIDCommEndpointTests.mailboxCount(server, tenant: aliceID) == 6)
            #expect(try await Self.usage(server, tenant: aliceID).first == "6")
        }
    }

    @Test func tooManyMessagesWaitingToBeSentIsQuotaExceeded() async throws {
        try await LiveServer.with(server: {
            $0.delivery.enabled = false
            $0.database.quotas = DatabaseConfiguration.Quotas(mailboxMessages: 0, mailboxBytes: 0, outboxPending: 2)
        }) { server in
            let (alice, aliceID) = try await server.tenantClient(label: "alice")
            let (bob, _) = try await server.tenantClient(label: "bob")
            defer { Task { await alice.close(); await bob.close() } }
            for _ in 0..<2 {
                let accepted = try await alice.call(
                    "connections.accept", params: ["invitation": try OutboundAddressPolicyTests.invitation(endpoint: "http://127.0.0.1:9/")])
                #expect(accepted["state"] == 2)
            }
            let refused = await OutboundAddressPolicyTests.rpcError {
                try await alice.call(
                    "connections.accept", params: ["invitation": try OutboundAddressPolicyTests.invitation(endpoint: "http://127.0.0.1:9/")])
            }
            #expect(refused?.stableCode == "quota_exceeded", "\(String(describing: refused))")
            #expect(refused?.code == -32031)
            #expect(refused?.message.contains("AERIE_OUTBOX_MAX_PENDING") == true, "\(String(describing: refused))")
            // Nothing of the refused call was stored.
            #expect(try await OutboundAddressPolicyTests.count("connections", tenant: aliceID, server) == 2)
            #expect(try await OutboundAddressPolicyTests.count("outbox", tenant: aliceID, server) == 2)
            #expect(try await Self.usage(server, tenant: aliceID).last == "2")
            // Bob is not affected by Alice's queue.
            let bobs = try await bob.call(
                "connections.accept", params: ["invitation": try OutboundAddressPolicyTests.invitation(endpoint: "http://127.0.0.1:9/")])
            #expect(bobs["state"] == 2)
            // A sent (or failed) row leaves the queue.
            _ = try await WalletFixture.asSuperuser(server.database) { session in
                try session.execute(
                    "UPDATE aerie.outbox SET status = 'failed' WHERE tenant_id = $1::uuid AND id = (SELECT id FROM aerie.outbox WHERE tenant_id = $1::uuid LIMIT 1)",
                    [.text(aliceID.rawValue)])
            }
            #expect(try await Self.usage(server, tenant: aliceID).last == "1")
            let third = try await alice.call(
                "connections.accept", params: ["invitation": try OutboundAddressPolicyTests.invitation(endpoint: "http://127.0.0.1:9/")])
            #expect(third["state"] == 2)
        }
    }
}
