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
            #expect(entries.map(\.messageId) == ["m-1", "m-2"])
            #expect(entries.allSatisfy { $0.pairwiseDid == "MYDID" && $0.theirDid == "THEIRDID" })
            #expect(try await b.transaction { try $0.mailbox.download(query) }.isEmpty)

            let page = try await a.transaction {
                try $0.mailbox.download(MailboxQuery(statuses: [MailboxMessage.received], after: entries[0].position, limit: 10))
            }
            #expect(page.map(\.messageId) == ["m-2"])

            let uids = entries.map(\.uid) + [stray.uid]
            #expect(try await b.transaction { try $0.mailbox.updateStatus(uids, pairwiseDid: "MYDID", to: MailboxMessage.reviewed) }.isEmpty)
            let updated = try await a.transaction { try $0.mailbox.updateStatus(uids, pairwiseDid: "MYDID", to: MailboxMessage.reviewed) }
            #expect(Set(updated) == Set(entries.map(\.uid)))

            #expect(try await b.transaction { try $0.mailbox.purgeReviewed(receivedBefore: Date().addingTimeInterval(60), limit: 100) } == 0)
            #expect(try await a.transaction { try $0.mailbox.purgeReviewed(receivedBefore: Date().addingTimeInterval(-60), limit: 100) } == 0)
            #expect(try await a.transaction { try $0.mailbox.purgeReviewed(receivedBefore: Date().addingTimeInterval(60), limit: 1) } == 1)
            #expect(try await a.transaction { try $0.mailbox.purgeReviewed(receivedBefore: Date().addingTimeInterval(60), limit: 100) } == 1)
            #expect(try await a.transaction { try $0.mailbox.get(stray.uid) } != nil)
        }
    }

    /// Hostile sealed rows (what a bug or a restored backup could leave): the payload's text is
    /// passed on as it stands, its invalid UTF-8 repaired (U+FFFD), so the download stays valid
    /// JSON whatever the payload holds; a `@type` that does not read is ignored (the row's clear
    /// type classifies it). A sealed object that is not JSON at all fails the read with an
    /// internal error naming the row, never its content; the other tenant reads on.
    @Test func hostileSealedPayloadsAreRepairedOrRefused() async throws {
        try await StoreFixture.with { fixture in
            let aID = try await fixture.createTenant("A").id
            let bID = try await fixture.createTenant("B").id
            let a = fixture.runtime.sealed(aID)
            let b = fixture.runtime.sealed(bID)
            var record = ConnectionStoreTests.record(invitationId: "inv-1", key: "KEY1")
            record.myDid = "MYDID"
            record.myVerkey = "MYVERKEY"
            let aRecord = record
            try await a.transaction { try $0.connections.insert(aRecord) }
            var bRecord = ConnectionStoreTests.record(invitationId: "inv-1", key: "KEY1")
            bRecord.myDid = "MYDID"
            bRecord.myVerkey = "MYVERKEY"
            let bCopy = bRecord
            try await b.transaction { try $0.connections.insert(bCopy) }
            func message(_ id: String, connection: UUID) -> MailboxMessage {
                MailboxMessage(
                    connectionId: connection, recipientVerkey: "MYVERKEY", senderVerkey: "SVK", messageId: id,
                    type: "https://didcomm.org/basicmessage/1.0/message", threadId: nil, payload: ["@id": .string(id)])
            }
            let messages = ["bad-escape", "bad-utf8", "string", "no-payload"].map { message($0, connection: aRecord.id) }
            for m in messages { _ = try await a.transaction { try $0.mailbox.insert(m) } }
            let bMessage = message("b's", connection: bCopy.id)
            _ = try await b.transaction { try $0.mailbox.insert(bMessage) }

            // Each row's sealed object replaced by hand-made plaintext, sealed for its own row.
            let plaintexts: [[UInt8]] = [
                Array(#"{"payload":{"@type":"bad \q escape","x":"\u00"},"threadId":"t"}"#.utf8),
                Array(#"{"payload":{"@type":"x","content":""#.utf8) + [0xC3, 0x28, 0xFF] + Array(#""},"senderVerkey":"S"}"#.utf8),
                Array(#"{"payload":"just text \" here"}"#.utf8),
                Array(#"{"threadId":"t"}"#.utf8),
            ]
            let sealer = TestKeys.sealer(aID)
            for (m, plaintext) in zip(messages, plaintexts) {
                try await Self.replaceSealed(fixture, tenant: aID, uid: m.uid, with: sealer, plaintext)
            }
            let query = MailboxQuery(statuses: [MailboxMessage.received], limit: 10)
            let entries = try await a.read { try $0.mailbox.download(query) }
            #expect(entries.map(\.messageId) == ["bad-escape", "bad-utf8", "string", "no-payload"])
            #expect(entries[0].payloadJSON == #"{"@type":"bad \q escape","x":"\u00"}"#)
            #expect(entries[0].payloadType == nil)
            #expect(entries[0].threadId == "t")
            #expect(entries[1].payloadJSON == #"{"@type":"x","content":""# + "\u{FFFD}(\u{FFFD}" + #""}"#)
            #expect(entries[1].payloadType == "x")
            #expect(entries[2].payloadJSON == #""just text \" here""#)
            #expect(entries[2].payloadType == nil)
            #expect(entries[3].payloadJSON == "null")
            #expect(entries[3].payloadType == nil)

            // Not an object at all: the read fails, naming the row and not its text.
            try await Self.replaceSealed(fixture, tenant: aID, uid: messages[0].uid, with: sealer, Array("not json, secret text".utf8))
            do {
                _ = try await a.read { try $0.mailbox.download(query) }
                Issue.record("a sealed value that is not JSON was read")
            } catch let error as AerieError {
                #expect(error.code == .internalError)
                #expect(String(reflecting: error).contains(messages[0].uid.lowercasedString))
                #expect(!String(reflecting: error).contains("secret text"))
            }
            #expect(try await b.read { try $0.mailbox.download(query) }.map(\.messageId) == ["b's"])
        }
    }

    static func replaceSealed(_ fixture: StoreFixture, tenant: TenantID, uid: UUID, with sealer: any ValueSealer, _ plaintext: [UInt8])
        async throws
    {
        let row = uid.lowercasedString
        let sealed = sealer.seal(plaintext, table: "mailbox", column: "sealed", row: row)
        _ = try await fixture.asSuperuser { session in
            try session.execute(
                "UPDATE aerie.mailbox SET sealed = $3 WHERE tenant_id = $1::uuid AND uid = $2::uuid",
                [.text(tenant.rawValue), .text(row), .bytes(sealed)])
        }
    }
}
