import AerieCore
import AerieStore
import AerieTesting
import Foundation
import Testing

/// Sent messages in `aerie.mailbox` (schema/0016) and the outbox statements that carry their
/// delivery outcome, on a real PostgreSQL, with two tenants.
@Suite(.timeLimit(.minutes(10))) struct SentMessageStoreTests {
    static let basic = "https://didcomm.org/basicmessage/1.0/message"

    @Test func deliveryOutcomeMovesTheSentMessageInTheSameStatement() async throws {
        try await StoreFixture.with { fixture in
            let aID = try await fixture.createTenant("A").id
            let a = fixture.runtime.sealed(aID)
            let b = fixture.runtime.sealed(try await fixture.createTenant("B").id)
            var record = ConnectionStoreTests.record(invitationId: "inv-1", key: "KEY1")
            record.state = .accepted
            record.myDid = "MYDID"
            record.myVerkey = "MYVERKEY"
            record.theirVerkey = "THEIRKEY"
            let connection = record
            try await a.transaction { try $0.connections.insert(connection) }
            let sent: @Sendable (String, String?) -> MailboxMessage = { id, thread in
                MailboxMessage(
                    connectionId: connection.id, recipientVerkey: "THEIRKEY", senderVerkey: "MYVERKEY", messageId: id,
                    type: Self.basic, threadId: thread, status: MailboxMessage.queued, payload: ["@id": .string(id)], direction: .sent)
            }
            let delivered = sent("s-1", nil)
            let failing = sent("s-2", "t-1")
            let deliveredRow = OutboxItem(connectionId: connection.id, endpoint: "http://peer", envelope: [1], messageUid: delivered.uid)
            let failingRow = OutboxItem(connectionId: connection.id, endpoint: "http://peer", envelope: [2], messageUid: failing.uid)
            let duplicate = try await a.transaction { tx -> Bool in
                #expect(try tx.mailbox.insertSent(delivered))
                try tx.outbox.enqueue(deliveredRow)
                #expect(try tx.mailbox.insertSent(failing))
                try tx.outbox.enqueue(failingRow)
                return try tx.mailbox.insertSent(sent("s-1", nil))  // the same @id to the same peer
            }
            #expect(!duplicate)
            let rows = try await a.transaction { try $0.outbox.list(connectionId: connection.id, limit: 10) }
            #expect(Set(rows.map(\.messageUid)) == [delivered.uid, failing.uid])

            try await fixture.runtime.markOutboxSent(deliveredRow.id, tenant: aID)
            try await a.transaction { tx in
                try tx.outbox.recordFailure(failingRow.id, attempts: 1, nextAttemptAt: Date().addingTimeInterval(60), error: "HTTP 500")
            }
            var now = try await a.transaction { tx in (try tx.mailbox.get(delivered.uid), try tx.mailbox.get(failing.uid)) }
            #expect(now.0?.status == MailboxMessage.sent && now.0?.direction == .sent)
            #expect(now.1?.status == MailboxMessage.queued && now.1?.deliveryError == nil, "a retried failure stays queued")
            try await a.transaction { tx in
                try tx.outbox.recordFailure(failingRow.id, attempts: 2, nextAttemptAt: nil, error: "connection refused")
            }
            now = try await a.transaction { tx in (try tx.mailbox.get(delivered.uid), try tx.mailbox.get(failing.uid)) }
            #expect(now.1?.status == MailboxMessage.deliveryFailed)
            #expect(now.1?.deliveryError == "connection refused")

            // A sent message's status is its delivery's; a reply is only ever a received message.
            #expect(try await a.transaction { try $0.mailbox.updateStatus([delivered.uid], pairwiseDid: "MYDID", to: MailboxMessage.reviewed) }.isEmpty)
            #expect(try await a.transaction { try $0.mailbox.receivedReply(connectionId: connection.id, threadId: "t-1", type: Self.basic) } == nil)
            let reply = MailboxMessage(
                connectionId: connection.id, recipientVerkey: "MYVERKEY", senderVerkey: "THEIRKEY", messageId: "r-1", type: Self.basic,
                threadId: "t-1", payload: ["@id": "r-1"])
            _ = try await a.transaction { try $0.mailbox.insert(reply) }
            #expect(try await a.transaction { try $0.mailbox.receivedReply(connectionId: connection.id, threadId: "t-1", type: Self.basic) }?.uid == reply.uid)
            // Received-message readers: the default download lists only the received one.
            let pending = try await a.transaction { try $0.mailbox.download(MailboxQuery(statuses: [MailboxMessage.received], limit: 10)) }
            #expect(pending.map(\.message.uid) == [reply.uid])

            // Tenant B sees none of it, and cannot move it.
            #expect(try await b.transaction { try $0.mailbox.get(delivered.uid) } == nil)
            #expect(try await b.transaction {
                try $0.mailbox.download(MailboxQuery(statuses: ["MS-101", "MS-102", "MS-103", "MS-105"], limit: 10))
            }.isEmpty)
            try await fixture.runtime.markOutboxSent(failingRow.id, tenant: fixture.createTenant("C").id)
            #expect(try await a.transaction { try $0.mailbox.get(failing.uid) }?.status == MailboxMessage.deliveryFailed)
        }
    }
}
