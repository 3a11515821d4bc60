import AerieCore
import Foundation
import Testing

@testable import MessagesPlugin

/// The shape check of `messages.send` and the basic message of `messages.sendText`, pure.
@Suite(.timeLimit(.minutes(5))) struct OutgoingMessageTests {
    @Test(arguments: [
        "https://didcomm.org/basicmessage/1.0/message",
        "did:sov:BzCbsNYhMrjHiqZDTUASHg;spec/questionanswer/1.0/answer",
        "https://example.org/protocols/my-family_x/12.3/my.message",
        "http://didcomm.org/issue-credential/2.0/request-credential",
    ])
    func messageTypesAreTaken(type: String) {
        #expect(OutgoingMessage.isMessageType(type))
    }

    @Test(arguments: [
        "", "hello", "https://didcomm.org/basicmessage/message", "https://didcomm.org/basicmessage/1/message",
        "https://didcomm.org/basicmessage/1.x/message", "https://didcomm.org/basicmessage/1.0/", "https:///b/1.0/m",
        "ftp://didcomm.org/basicmessage/1.0/message", "https://didcomm.org/basic message/1.0/message",
        "https://didcomm.org/basicmessage/1.0/message\n", "https://didcomm.org/basicmessage/1.0/mëssage",
        "https://didcomm.org/b/12345.0/m",
    ])
    func otherTypesAreRefused(type: String) {
        #expect(!OutgoingMessage.isMessageType(type))
    }

    @Test func typeLengthIsBounded() {
        let long = "https://didcomm.org/" + String(repeating: "a", count: 300) + "/1.0/m"
        #expect(!OutgoingMessage.isMessageType(long))
    }

    @Test func idIsFilledInAndKeptWhenGiven() throws {
        let filled = try OutgoingMessage.validated(["@type": "https://didcomm.org/basicmessage/1.0/message", "content": "x"], makeId: { "new-id" })
        #expect(filled["@id"] == "new-id")
        #expect(filled["content"] == "x")
        let kept = try OutgoingMessage.validated(["@type": "https://didcomm.org/basicmessage/1.0/message", "@id": "mine"])
        #expect(kept["@id"] == "mine")
    }

    @Test func refusalsNameTheField() {
        func field(_ message: JSONValue) -> String? {
            do {
                _ = try OutgoingMessage.validated(message)
                return nil
            } catch let error as AerieError {
                #expect(error.code == .invalidParams)
                return error.field
            } catch {
                return "?"
            }
        }
        let type: JSONValue = "https://didcomm.org/basicmessage/1.0/message"
        #expect(field("text") == "message")
        #expect(field(["@type": type, "content": .string(String(repeating: "a", count: OutgoingMessage.maxBytes))]) == "message")
        #expect(field(["@type": 1]) == "message.@type")
        #expect(field(["@type": "did:sov:BzCbsNYhMrjHiqZDTUASHg;spec/routing/1.0/forward"]) == "message.@type")
        #expect(field(["@type": type, "@id": ""]) == "message.@id")
        #expect(field(["@type": type, "@id": "a\u{7}b"]) == "message.@id")
        #expect(field(["@type": type, "~thread": ["thid": 5]]) == "message.~thread")
        #expect(field(["@type": type, "~thread": ["thid": "t", "pthid": "p"]]) == nil)
    }

    @Test func basicMessageHasRFC0095Fields() throws {
        let date = Date(timeIntervalSince1970: 1_547_577_721.25)
        let message = try OutgoingMessage.basicMessage(content: "hi", at: date)
        #expect(message["@type"] == "https://didcomm.org/basicmessage/1.0/message")
        #expect(message["content"] == "hi")
        #expect(message["sent_time"] == "2019-01-15 18:42:01.250000Z")
        #expect(message["~l10n"]?["locale"] == "en")
        #expect(message["@id"]?.stringValue?.isEmpty == false)
        #expect(throws: AerieError.self) { try OutgoingMessage.basicMessage(content: "") }
        #expect(throws: AerieError.self) { try OutgoingMessage.basicMessage(content: String(repeating: "é", count: 20_000)) }
    }

    /// The hand-worked date agrees with Foundation's Gregorian calendar in UTC: leap days,
    /// century years (1900 and 2100 are not leap years, 2000 is), year ends, before 1970, and
    /// 20,000 instants spread over 1900-2200.
    @Test func sentTimeAgreesWithTheGregorianCalendar() {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = TimeZone(identifier: "UTC")!
        func expected(_ date: Date) -> String {
            let c = calendar.dateComponents([.year, .month, .day, .hour, .minute, .second], from: date)
            let whole = date.timeIntervalSince1970.rounded(.down)
            let micros = Int((date.timeIntervalSince1970 - whole) * 1_000_000)
            return String(
                format: "%04d-%02d-%02d %02d:%02d:%02d.%06dZ", c.year!, c.month!, c.day!, c.hour!, c.minute!, c.second!, micros)
        }
        let fixed: [(String, Int, Int, Int)] = [
            ("2000-02-29", 2000, 2, 29), ("2000-03-01", 2000, 3, 1), ("1900-02-28", 1900, 2, 28), ("1900-03-01", 1900, 3, 1),
            ("2100-02-28", 2100, 2, 28), ("2100-03-01", 2100, 3, 1), ("2024-02-29", 2024, 2, 29), ("1969-12-31", 1969, 12, 31),
            ("1970-01-01", 1970, 1, 1), ("2026-12-31", 2026, 12, 31), ("1600-01-01", 1600, 1, 1),
        ]
        for (name, year, month, day) in fixed {
            let date = calendar.date(from: DateComponents(year: year, month: month, day: day, hour: 23, minute: 59, second: 59))!
            #expect(OutgoingMessage.sentTime(date) == expected(date), "\(name)")
            #expect(OutgoingMessage.sentTime(date).hasPrefix(name), "\(name)")
        }
        var generator = SystemRandomNumberGenerator()
        let start = calendar.date(from: DateComponents(year: 1900, month: 1, day: 1))!.timeIntervalSince1970
        let end = calendar.date(from: DateComponents(year: 2200, month: 1, day: 1))!.timeIntervalSince1970
        for _ in 0..<20_000 {
            let date = Date(timeIntervalSince1970: Double.random(in: start..<end, using: &generator).rounded(.down) + 0.5)
            #expect(OutgoingMessage.sentTime(date) == expected(date))
        }
    }
}
