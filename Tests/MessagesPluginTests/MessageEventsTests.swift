import AerieCore
@testable import MessagesPlugin
import Testing

/// How the messages plugin presents its event kinds to the server's push and event stream.
@Suite(.timeLimit(.minutes(10))) struct MessageEventsTests {
    static let question = "https://didcomm.org/questionanswer/1.0/question"

    @Test func aReceivedMessageIsPushedWithItsShortKind() throws {
        let shown = try #require(
            MessageEvents.received(["uid": "u1", "type": .string(Self.question), "pairwiseDID": "did:peer:x"]))
        #expect(shown.pushMethod == "messages.received")
        #expect(shown.fields == ["pairwiseDID": "did:peer:x", "uid": "u1", "type": "question"])
        #expect(shown.types == [Self.question, "question"])
        #expect(MessageEvents.received(["uid": "u1"]) == nil, "no type: not a message event")
    }

    @Test func aSentMessagesOutcomeIsDeliveredOrFailedWithTheReason() throws {
        let sent = try #require(
            MessageEvents.delivery(["uid": "u2", "status": "MS-102", "type": "https://didcomm.org/basicmessage/1.0/message"]))
        #expect(sent.pushMethod == "messages.delivered")
        #expect(sent.fields["statusCode"] == "MS-102")
        #expect(sent.fields["reason"] == nil)
        let failed = try #require(
            MessageEvents.delivery([
                "uid": "u3", "status": "MS-105", "type": "https://didcomm.org/basicmessage/1.0/message",
                "reason": "peer answered 500",
            ]))
        #expect(failed.pushMethod == "messages.deliveryFailed")
        #expect(failed.fields["reason"] == "peer answered 500")
    }

    @Test func anOutboxDeliveryRowIsStreamedButNotPushed() throws {
        let shown = try #require(MessageEvents.delivery(["outboxId": "o1", "status": "sent", "connectionId": "c1"]))
        #expect(shown.pushMethod == nil)
        #expect(shown.fields == ["outboxId": "o1", "connectionId": "c1", "status": "sent", "messageUid": .null])
    }
}
