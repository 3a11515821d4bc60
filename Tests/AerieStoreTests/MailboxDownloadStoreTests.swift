import AerieCore
import AerieStore
import AerieTesting
import Foundation
import Testing

/// `MailboxRepository.download`, `updateStatus(_:pairwiseDid:to:)` and `purgeReviewed` on a real
/// PostgreSQL, with two tenants.
@Suite(.timeLimit(.minutes(10))) struct MailboxDownloadStoreTests {
    @Test func messagesStoredBeforeTheLinkBelongToTheConnectionOfTheirVerkey() async throws {
        try await StoreFixture.with { fixture in
            let a = fixture.runtime.sealed(try await fixture.createTenant("A").id)
            let b = fixture.runtime.sealed(try await fixture.createTenant("B").id)
            var record = ConnectionStoreTests.record(invitationId: "inv-1", key: "KEY1")
            record.myDid = "MYDID"
            record.myVerkey = "MYVERKEY"
            record.theirDid = "THEIRDID"
            let aRecord = record
            let linked = MailboxMessage(
                connectionId: aRecord.id, recipientVerkey: "MYVERKEY", senderVerkey: nil, messageId: "m-1",
                type: "https://didcomm.org/basicmessage/1.0/message", threadId: nil, payload: ["@id": "m-1"])
            let unlinked = MailboxMessage(
                connectionId: nil, recipientVerkey: "MYVERKEY", senderVerkey: nil, messageId: "m-2",
                type: "https://didcomm.org/basicmessage/1.0/message", threadId: nil, payload: ["@id": "m-2"])
            let stray = MailboxMessage(
                connectionId: nil, recipientVerkey: "OTHER", senderVerkey: nil, messageId: "m-3",
                type: "https://didcomm.org/basicmessage/1.0/message", threadId: nil, payload: ["@id": "m-3"])
            // One transaction each: arrival order is the transaction's now().
            try await a.transaction { try $0.connections.insert(aRecord) }
            for message in [linked, unlinked, stray] {
                _ = try await a.transaction { try $0.mailbox.insert(message) }
            }
            // B has a connection with the same pairwise DID and verkey: still sees nothing of A's.
            var bRecord = ConnectionStoreTests.record(invitationId: "inv-1", key: "KEY1")
            bRecord.myDid = "MYDID"
            bRecord.myVerkey = "MYVERKEY"
            let bCopy = bRecord
            try await b.transaction { try $0.connections.insert(bCopy) }

            let query = MailboxQuery(statuses: [MailboxMessage.received], limit: 10)
            let entries = try await a.transaction { try $0.mailbox.download(query) }
            #expect(entries.map(\.message.messageId) == ["m-1", "m-2"])
            #expect(entries.allSatisfy { $0.pairwiseDid == "MYDID" && $0.theirDid == "THEIRDID" })
            #expect(try await b.transaction { try $0.mailbox.download(query) }.isEmpty)

            let page = try await a.transaction {
                try $0.mailbox.download(MailboxQuery(statuses: [MailboxMessage.received], after: entries[0].position, limit: 10))
            }
            #expect(page.map(\.message.messageId) == ["m-2"])

            let uids = entries.map(\.message.uid) + [stray.uid]
            #expect(try await b.transaction { try $0.mailbox.updateStatus(uids, pairwiseDid: "MYDID", to: MailboxMessage.reviewed) }.isEmpty)
            let updated = try await a.transaction { try $0.mailbox.updateStatus(uids, pairwiseDid: "MYDID", to: MailboxMessage.reviewed) }
            #expect(Set(updated) == Set(entries.map(\.message.uid)))

            #expect(try await b.transaction { try $0.mailbox.purgeReviewed(receivedBefore: Date().addingTimeInterval(60), limit: 100) } == 0)
            #expect(try await a.transaction { try $0.mailbox.purgeReviewed(receivedBefore: Date().addingTimeInterval(-60), limit: 100) } == 0)
            #expect(try await a.transaction { try $0.mailbox.purgeReviewed(receivedBefore: Date().addingTimeInterval(60), limit: 1) } == 1)
            #expect(try await a.transaction { try $0.mailbox.purgeReviewed(receivedBefore: Date().addingTimeInterval(60), limit: 100) } == 1)
            #expect(try await a.transaction { try $0.mailbox.get(stray.uid) } != nil)
        }
    }
}
