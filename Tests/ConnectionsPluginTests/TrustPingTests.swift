import AerieCore
import Testing

@testable import ConnectionsPlugin

/// RFC 0048 messages, pure.
@Suite(.timeLimit(.minutes(5))) struct TrustPingTests {
    @Test func responseIsRequestedUnlessExplicitlyFalse() {
        #expect(TrustPing.responseRequested(["@type": "https://didcomm.org/trust_ping/1.0/ping", "@id": "p"]))
        #expect(TrustPing.responseRequested(["@id": "p", "response_requested": true]))
        #expect(TrustPing.responseRequested(["@id": "p", "response_requested": "false"]))  // not a boolean: the default
        #expect(!TrustPing.responseRequested(["@id": "p", "response_requested": false]))
    }

    @Test func pingAsksAndResponseThreadsToThePing() {
        let ping = TrustPing.ping(id: "p-1", comment: String(repeating: "c", count: 5000))
        #expect(ping["response_requested"] == true)
        #expect(ping["@type"] == "https://didcomm.org/trust_ping/1.0/ping")
        #expect(ping["comment"]?.stringValue?.count == TrustPing.maxCommentBytes)
        let response = TrustPing.response(to: "p-1", id: "r-1")
        #expect(response == ["@type": "https://didcomm.org/trust_ping/1.0/ping_response", "@id": "r-1", "~thread": ["thid": "p-1"]])
    }
}
