import AerieClient
import AerieCore
import AerieStore
import AerieTesting
import Foundation
import Testing

/// A send waiting for a retry keeps only its endpoint's `scheme://host:port` in clear (nothing of
/// the path and query, in a SELECT of every table or a pg_dump); the retry, claimed by the
/// delivery scan with the tenant's wrapped data key, opens the endpoint and delivers. Two
/// tenants, each to its own peer, through the real server.
@Suite(.timeLimit(.minutes(5))) struct SealedOutboxTests {
    @Test func aPendingSendsEndpointIsSealedAndItsRetryReachesTheFullURL() async throws {
        try await LiveServer.with(server: {
            $0.outbound.allowPrivateURLs = true
            $0.delivery.backoff = .milliseconds(500)
            $0.delivery.pollInterval = .milliseconds(100)
        }) { server in
            let (alice, aliceID) = try await server.tenantClient(label: "alice")
            let (bob, bobID) = try await server.tenantClient(label: "bob")
            defer { Task { await alice.close(); await bob.close() } }
            // Each tenant's peer is down (503) until its row has been retried.
            let inboxes = [try await PeerInbox(status: 503), try await PeerInbox(status: 503)]
            defer { Task { for inbox in inboxes { await inbox.stop() } } }
            var sent: [(client: AerieClient, tenant: TenantID, uid: String, token: String)] = []
            for (index, (client, tenant)) in [(alice, aliceID), (bob, bobID)].enumerated() {
                let inbox = inboxes[index]
                let token = "secret-path-token-\(UUID().uuidString.prefix(8))"
                let peer = try await TestPeer.connect(client, endpoint: "\(inbox.url)/inbox/\(token)?k=\(token)", key: inbox.key)
                let answer = try await client.call(
                    "messages.sendText", params: ["connectionId": .string(peer.connectionId), "content": "after the outage"])
                sent.append((client, tenant, try #require(answer["uid"]?.stringValue), token))
            }

            // Each tenant's send waits for a retry: its row holds the destination, nothing more.
            var rows: [[String?]] = []
            for _ in 0..<100 {
                rows = try await WalletFixture.asSuperuser(server.database) { session in
                    try session.query(
                        """
                        SELECT tenant_id::text, destination, endpoint, (endpoint_sealed IS NOT NULL)::text FROM aerie.outbox
                        WHERE attempts >= 1 AND message_uid IS NOT NULL ORDER BY destination
                        """
                    ).allRows()
                }
                if rows.count == 2 { break }
                try await Task.sleep(for: .milliseconds(50))
            }
            #expect(Set(rows.map { $0[1] }) == Set(inboxes.map { Optional($0.url) }), "\(rows)")
            #expect(rows.allSatisfy { $0[2] == nil && $0[3] == "true" }, "\(rows)")
            let tokens = sent.map(\.token)
            SealedStorageTests.expectNoSecrets(tokens, in: try await SealedStorageTests.everyRow(server.database), "a pending send")
            SealedStorageTests.expectNoSecrets(
                tokens, in: try SealedStorageTests.pgDump(server.database.superuserConninfo), "pg_dump of a pending send")

            // The peers are back: each retry reaches its tenant's peer at the full URL.
            for inbox in inboxes { inbox.setStatus(202) }
            for (index, send) in sent.enumerated() {
                let delivered = try await SendMessagesTests.waitForStatus(send.client, uid: send.uid, status: "MS-102")
                #expect(delivered != nil, "tenant \(index)'s send never arrived")
                #expect(inboxes[index].received.contains { $0.message["content"] == "after the outage" })
            }
        }
    }
}
