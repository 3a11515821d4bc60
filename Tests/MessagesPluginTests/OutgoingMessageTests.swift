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
}
