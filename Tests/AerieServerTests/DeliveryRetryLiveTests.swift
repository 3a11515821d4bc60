import AerieClient
import AerieCore
import AerieServer
import AerieStore
import AerieTesting
import Foundation
import Testing

/// A peer's short outage or full mailbox loses nothing (`DeliveryRetry`), on real servers and
/// real PostgreSQL, with short retry settings: the sender keeps trying until its horizon ends,
/// and the message arrives once the peer takes it.
@Suite(.serialized, .timeLimit(.minutes(10))) struct DeliveryRetryLiveTests {
    static func configure(_ config: inout AerieConfiguration) {
        config.outbound.allowPrivateURLs = true
        config.delivery.backoff = .milliseconds(100)
        config.delivery.maxBackoff = .milliseconds(500)
        config.delivery.horizon = .seconds(120)
        config.delivery.pollInterval = .milliseconds(200)
    }

    /// The outbox row of the sent message `uid`: attempts and last error.
    /// The send's outbox row: its attempts, and whether its last error is recorded (sealed at
    /// rest, so only its presence is read here).
    static func outboxRow(_ server: LiveServer, tenant: TenantID, uid: String) async throws -> (attempts: Int, errorRecorded: Bool)? {
        let rows = try await WalletFixture.asSuperuser(server.database) { session in
            try session.query(
                """
                SELECT attempts::text, (last_error_sealed IS NOT NULL OR last_error IS NOT NULL)::text
                FROM aerie.outbox WHERE tenant_id = $1::uuid AND message_uid = $2::uuid
                """,
                [.text(tenant.rawValue), .text(uid)]
            ).allRows()
        }
        return rows.first.map { (Int($0[0] ?? "") ?? -1, $0[1] == "true") }
    }

    static func status(_ client: AerieClient, uid: String) async throws -> String? {
        let download = try await client.call("messages.download", params: ["uids": [.string(uid)], "status": SendMessagesTests.sentStatuses])
        return SendMessagesTests.messages(download)[uid]?["statusCode"]?.stringValue
    }

    /// Connects `invitee` (on its server) to `inviter`'s new invitation; answers the inviter's
    /// and the invitee's connection ids once both are established.
    static func connect(_ inviter: AerieClient, _ invitee: AerieClient) async throws -> (inviter: String, invitee: String) {
        let created = try await inviter.call("connections.createInvitation", params: ["label": "inviter"])
        let inviterSide = try #require(created["connectionId"]?.stringValue)
        let accepted = try await invitee.call(
            "connections.accept", params: ["url": created["invitationUrl"]!, "wait": true, "timeoutSeconds": 30])
        #expect(accepted["state"] == 4, "\(accepted)")
        _ = try await InviterTests.waitForState(inviter, inviterSide, 4)
        return (inviterSide, try #require(accepted["connectionId"]?.stringValue))
    }

    /// The loss: Bob's server answers 503 while his mailbox is full
    /// (`AERIE_MAILBOX_MAX_MESSAGES`). Alice's basic message waits, retried, instead of ending
    /// `MS-105`; once Bob makes room (deletes another connection and its messages) it arrives.
    @Test func aMessageToAFullMailboxWaitsAndArrivesOnceThereIsRoom() async throws {
        let quota = 12
        try await LiveServer.with(server: Self.configure) { server in
            let peerServer = try await server.sibling { $0.database.quotas.mailboxMessages = quota }
            do {
                let (alice, aliceID) = try await server.tenantClient(label: "alice")
                let (carol, _) = try await server.tenantClient(label: "carol")
                let (bob, bobID) = try await peerServer.tenantClient(label: "bob")
                defer { Task { await alice.close(); await carol.close(); await bob.close() } }
                let (aliceSide, _) = try await Self.connect(alice, bob)
                let (carolSide, bobToCarol) = try await Self.connect(carol, bob)

                // Carol fills Bob's mailbox to the last place.
                let used = try await DIDCommEndpointTests.mailboxCount(peerServer, tenant: bobID)
                try #require(used < quota, "the handshakes alone took \(used) places")
                for n in used..<quota {
                    let sent = try await carol.call("messages.sendText", params: ["connectionId": .string(carolSide), "content": .string("fill \(n)")])
                    let uid = try #require(sent["uid"]?.stringValue)
                    #expect(try await SendMessagesTests.waitForStatus(carol, uid: uid, status: "MS-102") != nil, "fill \(n)")
                }
                #expect(try await DIDCommEndpointTests.mailboxCount(peerServer, tenant: bobID) == quota)

                let sent = try await alice.call("messages.sendText", params: ["connectionId": .string(aliceSide), "content": "worth the wait"])
                let uid = try #require(sent["uid"]?.stringValue)
                // Past the six tries after which it used to fail.
                try await Task.sleep(for: .seconds(4))
                #expect(try await Self.status(alice, uid: uid) == "MS-101")
                let row = try #require(try await Self.outboxRow(server, tenant: aliceID, uid: uid))
                #expect(row.attempts >= 6, "\(row)")
                #expect(row.errorRecorded, "\(row)")
                #expect(try await InviterTests.receives(bob, content: "worth the wait") == false)

                // Bob makes room: the message arrives at the next try.
                _ = try await bob.call("connections.delete", params: ["connectionId": .string(bobToCarol)])
                #expect(try await SendMessagesTests.waitForStatus(alice, uid: uid, status: "MS-102") != nil)
                #expect(try await InviterTests.receives(bob, content: "worth the wait"))
                #expect(try await Self.outboxRow(server, tenant: aliceID, uid: uid) == nil)
            } catch {
                try? await peerServer.stop()
                throw error
            }
            try await peerServer.stop()
        }
    }

    /// A peer answering 503 is a retry, not a loss: the message arrives when the peer recovers.
    /// One that stays down fails, `MS-105`, only when the horizon ends, not before; one that
    /// refuses the message itself (400) fails at once.
    @Test func serviceUnavailableIsRetriedUntilTheHorizonAndARefusalIsFinal() async throws {
        let recovering = try await PeerInbox(status: 503)
        let down = try await PeerInbox(status: 503)
        let refusing = try await PeerInbox(status: 400)
        defer { Task { await recovering.stop(); await down.stop(); await refusing.stop() } }
        try await LiveServer.with(server: {
            Self.configure(&$0)
            $0.delivery.horizon = .seconds(4)
        }) { server in
            let (alice, _) = try await server.tenantClient(label: "alice")
            defer { Task { await alice.close() } }
            var uids: [String] = []
            for inbox in [recovering, down, refusing] {
                let peer = try await TestPeer.connect(alice, endpoint: inbox.url, key: inbox.key)
                let sent = try await alice.call("messages.sendText", params: ["connectionId": .string(peer.connectionId), "content": "hello"])
                uids.append(try #require(sent["uid"]?.stringValue))
            }
            let started = ContinuousClock.now
            #expect(try await SendMessagesTests.waitForStatus(alice, uid: uids[2], status: "MS-105") != nil)
            #expect(refusing.received.filter { $0.message["content"] == "hello" }.count == 1)

            try await Task.sleep(for: .seconds(1))
            #expect(try await Self.status(alice, uid: uids[0]) == "MS-101")
            recovering.setStatus(202)
            #expect(try await SendMessagesTests.waitForStatus(alice, uid: uids[0], status: "MS-102") != nil)

            var failedAt: ContinuousClock.Instant?
            for _ in 0..<200 {
                if try await Self.status(alice, uid: uids[1]) == "MS-105" {
                    failedAt = .now
                    break
                }
                try await Task.sleep(for: .milliseconds(50))
            }
            let failed = try #require(failedAt, "the message to the peer that stayed down never failed")
            // Not before the horizon (4 s from the send), and soon after it.
            #expect(failed - started >= .seconds(3.5), "failed after \(failed - started)")
            #expect(down.received.filter { $0.message["content"] == "hello" }.count >= 6)
        }
    }
}
