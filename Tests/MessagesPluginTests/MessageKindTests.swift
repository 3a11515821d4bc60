import AerieCore
import Foundation
@testable import MessagesPlugin
import Testing

@Suite(.timeLimit(.minutes(10))) struct MessageKindTests {
    @Test(arguments: [
        ("https://didcomm.org/connections/1.0/response", "connectionResponse"),
        ("did:sov:BzCbsNYhMrjHiqZDTUASHg;spec/connections/1.0/response", "connectionResponse"),
        ("https://didcomm.org/connections/1.0/invitation", "connectionInvitation"),
        ("https://didcomm.org/out-of-band/1.1/invitation", "connectionInvitation"),
        ("https://didcomm.org/issue-credential/1.0/offer-credential", "credOffer"),
        ("did:sov:BzCbsNYhMrjHiqZDTUASHg;spec/issue-credential/2.0/offer-credential", "credOffer"),
        ("https://didcomm.org/present-proof/1.0/request-presentation", "proofReq"),
        ("https://didcomm.org/present-proof/2.0/request-presentation", "proofReq"),
        ("https://didcomm.org/questionanswer/1.0/question", "question"),
        ("did:sov:BzCbsNYhMrjHiqZDTUASHg;spec/committedanswer/1.0/question", "question"),
        ("https://didcomm.org/issue-credential/1.0/issue-credential", "credential"),
        ("https://didcomm.org/issue-credential/2.0/issue-credential", "credential"),
        ("https://didcomm.org/notification/1.0/ack", "ack"),
        ("https://didcomm.org/present-proof/1.0/ack", "ack"),
        ("https://didcomm.org/out-of-band/1.1/handshake-reuse-accepted", "handshakeReuseAccepted"),
        ("https://didcomm.org/connections/1.0/problem_report", "problemReport"),
        ("https://didcomm.org/notification/1.0/problem-report", "problemReport"),
        ("https://didcomm.org/trust_ping/1.0/ping", "trustPing"),
        ("did:sov:BzCbsNYhMrjHiqZDTUASHg;spec/trust_ping/1.0/ping_response", "trustPing"),
        ("https://didcomm.org/basicmessage/1.0/message", "basicMessage"),
    ])
    func classifiesKnownKinds(type: String, kind: String) {
        #expect(MessageKind.classify(type) == kind)
    }

    @Test func keepsTheFullTypeOfAnythingElse() {
        for type in [
            "https://didcomm.org/issue-credential/1.0/propose-credential",
            "did:sov:BzCbsNYhMrjHiqZDTUASHg;spec/discover-features/1.0/query",
            "https://example.org/custom/1.0/thing", "nonsense",
        ] {
            #expect(MessageKind.classify(type) == type)
        }
    }

    @Test func everyMailboxTypeIsOneTheSDKKnows() {
        for type in MessageKind.mailboxTypes {
            #expect(MessageKind.classify(type) != type, "\(type)")
        }
        #expect(Set(MessageKind.mailboxTypes).count == MessageKind.mailboxTypes.count)
    }
}

@Suite(.timeLimit(.minutes(10))) struct MessagesParamsTests {
    func params(_ json: String) throws -> DownloadParams {
        try JSONDecoder().decode(DownloadParams.self, from: Data(json.utf8))
    }

    @Test func defaultsToPendingMessagesAndAHundredAtATime() throws {
        let query = try params("{}").query()
        #expect(query.statuses == ["MS-103"])
        #expect(query.uids == nil && query.pairwiseDids == nil && query.after == nil)
        #expect(query.limit == 100)
    }

    @Test func acceptsListsAndTheSDKsCommaSeparatedStrings() throws {
        let uid = UUID()
        let query = try params(#"{"status":["MS-103","MS-106"],"uids":"\#(uid.uuidString), ","pairwiseDids":["a","b"],"limit":500}"#).query()
        #expect(query.statuses == ["MS-103", "MS-106"])
        #expect(query.uids == [uid])
        #expect(query.pairwiseDids == ["a", "b"])
        #expect(query.limit == 500)
    }

    @Test func emptyFiltersMeanNoFilter() throws {
        let query = try params(#"{"status":"","uids":"","pairwiseDids":[]}"#).query()
        #expect(query.statuses == ["MS-103"])
        #expect(query.uids == nil && query.pairwiseDids == nil)
    }

    @Test func refusesInvalidValuesNamingTheField() throws {
        for (json, field) in [
            (#"{"status":"MS-107"}"#, "status"), (#"{"status":["MS-103","x"]}"#, "status"),
            (#"{"status":3}"#, "status"), (#"{"uids":["nope"]}"#, "uids"), (#"{"limit":0}"#, "limit"),
            (#"{"limit":501}"#, "limit"), (#"{"cursor":"garbage!"}"#, "cursor"), (#"{"pairwiseDids":[1]}"#, "pairwiseDids"),
        ] {
            do {
                _ = try params(json).query()
                Issue.record("expected invalid params for \(json)")
            } catch let error as AerieError {
                #expect(error.code == .invalidParams, "\(json)")
                #expect(error.field == field, "\(json)")
            }
        }
    }

    @Test func cursorsRoundTrip() throws {
        let position = MailboxPosition(receivedAtMicros: 1_763_771_000_123_456, uid: UUID())
        #expect(try MailboxCursor.decode(MailboxCursor.encode(position)) == position)
    }

    @Test func updateStatusIsBounded() throws {
        let uids = (0..<1001).map { _ in UUID().uuidString }
        let big = UpdateStatusParams(status: "MS-106", messages: [.init(pairwiseDID: "a", uids: uids)])
        #expect(throws: AerieError.self) { try big.validated() }
        #expect(throws: AerieError.self) { try UpdateStatusParams(status: "MS-100", messages: []).validated() }
        #expect(try UpdateStatusParams(status: "MS-106", messages: []).validated().status == "MS-106")
    }
}
