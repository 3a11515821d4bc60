import AerieCore
import Foundation
@testable import MessagesPlugin
import Testing

/// The download's text, written straight from the mailbox's entries, is the seed's shape: each
/// message as the dictionary-built view had it (`expectedView`, kept here as the reference), the
/// text byte for byte what `JSONValue.serialized()` gives for that tree.
@Suite(.timeLimit(.minutes(10))) struct DownloadTextTests {
    static let basic = "https://didcomm.org/basicmessage/1.0/message"

    /// `type`: the `@type` as the sender wrote it (in the default payload); the entry stores it
    /// normalised, as every writer of the mailbox does.
    static func entry(
        _ id: String, pairwise: String, their: String? = "did:their", type: String = basic, payloadJSON: String? = nil,
        thread: String? = nil, status: String = MailboxMessage.received, direction: MailboxMessage.Direction = .received,
        deliveryError: String? = nil
    ) -> MailboxEntry {
        let payload = payloadJSON ?? JSONValue.object(["@id": .string(id), "@type": .string(type)]).jsonString
        return MailboxEntry(
            uid: UUID(), messageId: id, type: InboundMessage.normalizedType(type), threadId: thread, status: status,
            direction: direction, deliveryError: deliveryError, pairwiseDid: pairwise, theirDid: their, receivedAtMicros: 1,
            payloadJSON: payload)
    }

    /// The view as the plugin built it before it wrote text.
    static func expectedView(_ entry: MailboxEntry) -> JSONValue {
        let sent = entry.direction == .sent
        var fields: [String: JSONValue] = [
            "statusCode": .string(entry.status),
            "payload": .null,
            "senderDID": (sent ? entry.pairwiseDid : entry.theirDid).map(JSONValue.string) ?? .null,
            "uid": .string(entry.uid.lowercasedString),
            "type": .string(MessageKind.classify(entry.payloadType ?? entry.type)),
            "refMsgId": entry.threadId.flatMap { $0 == entry.messageId ? nil : JSONValue.string($0) } ?? .null,
            "deliveryDetails": .array(entry.deliveryError.map { [["statusCode": .string(entry.status), "reason": .string($0)]] } ?? []),
            "decryptedPayload": .string(entry.payloadJSON),
        ]
        if sent { fields["direction"] = "sent" }
        return .object(fields)
    }

    static func expectedGrouped(_ entries: [MailboxEntry]) -> JSONValue {
        var order: [String] = []
        var groups: [String: [JSONValue]] = [:]
        for entry in entries {
            if groups[entry.pairwiseDid] == nil { order.append(entry.pairwiseDid) }
            groups[entry.pairwiseDid, default: []].append(expectedView(entry))
        }
        return .array(order.map { ["pairwiseDID": .string($0), "msgs": .array(groups[$0] ?? [])] })
    }

    static func written(_ entries: [MailboxEntry]) -> JSONText {
        JSONText { MessageMailbox.writeGrouped(entries, into: &$0) }
    }

    @Test func everyKindOfMessageIsWrittenAsTheViewWas() throws {
        let question = "did:sov:BzCbsNYhMrjHiqZDTUASHg;spec/questionanswer/1.0/question"
        let awkward = #"{"@type":"\#(question)","content":"quote \" backslash \\ newline \n control \u0001 é 😀 \u2028 </script>"}"#
        let entries = [
            Self.entry("m1", pairwise: "did:a", thread: "m1"),
            Self.entry("m2", pairwise: "did:b", their: nil, thread: "m1"),
            Self.entry("m3", pairwise: "did:a", type: "https://didcomm.org/issue-credential/1.0/offer-credential"),
            Self.entry("m4", pairwise: "did:c", type: question, payloadJSON: awkward),
            Self.entry("m5", pairwise: "did:b", payloadJSON: "null"),
            Self.entry("m6", pairwise: "did:a", type: "did:sov:x;spec/unknown/1.0/thing"),
            Self.entry("m7", pairwise: "did:c", status: MailboxMessage.queued, direction: .sent),
            Self.entry(
                "m8", pairwise: "did:a", status: MailboxMessage.deliveryFailed, direction: .sent,
                deliveryError: "peer said \"no\"\n"),
            Self.entry("m9", pairwise: "did:c", payloadJSON: "[1,\"two\"]"),
        ]
        let text = Self.written(entries)
        let expected = Self.expectedGrouped(entries)
        #expect(String(decoding: text.bytes, as: UTF8.self) == expected.jsonString)
        #expect(try text.value == expected)
        // Connections in the order of their first message, each with its messages in order.
        guard case .array(let groups) = try text.value else {
            Issue.record("not an array")
            return
        }
        #expect(groups.map { $0["pairwiseDID"] } == ["did:a", "did:b", "did:c"])
        if case .array(let first)? = groups[0]["msgs"] { #expect(first.count == 4) } else { Issue.record("no msgs") }
        // The payload travels as its text: parsed back, it is what was stored.
        let m4 = try #require(groups[2]["msgs"]?[0])
        #expect(m4["decryptedPayload"]?.stringValue == awkward)
        #expect(m4["type"] == "question")
        #expect(groups[0]["msgs"]?[2]?["type"] == "did:sov:x;spec/unknown/1.0/thing")
        #expect(groups[0]["msgs"]?[3]?["deliveryDetails"] == [["reason": "peer said \"no\"\n", "statusCode": "MS-105"]])
        #expect(groups[0]["msgs"]?[3]?["direction"] == "sent")
        #expect(groups[0]["msgs"]?[0]?["direction"] == nil)
    }

    @Test func anEmptyPageIsAnEmptyArray() throws {
        #expect(Self.written([]).bytes == Array("[]".utf8))
    }

    /// Many connections, interleaved: grouping goes through the dictionary, not only the last group.
    @Test func interleavedConnectionsGroupByFirstArrival() throws {
        let entries = (0..<200).map { Self.entry("m\($0)", pairwise: "did:\($0 * 7 % 13)") }
        let text = Self.written(entries)
        #expect(String(decoding: text.bytes, as: UTF8.self) == Self.expectedGrouped(entries).jsonString)
    }
}

extension JSONValue {
    fileprivate subscript(index: Int) -> JSONValue? {
        guard case .array(let values) = self, values.indices.contains(index) else { return nil }
        return values[index]
    }
}
