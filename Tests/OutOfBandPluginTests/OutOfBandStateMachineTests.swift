import AerieCore
import Foundation
import Testing

@testable import OutOfBandPlugin

/// The out-of-band record's rules, one test per rule, without I/O.
@Suite(.timeLimit(.minutes(10))) struct OutOfBandStateMachineTests {
    typealias Machine = OutOfBandStateMachine

    let connection = ConnectionRecord(
        state: .accepted, invitation: .null, invitationKind: "out-of-band", myVerkey: "ourKey", theirVerkey: "theirKey")

    func record(_ state: OutOfBandRecord.State, reuseMessageId: String? = "reuse-1") -> OutOfBandRecord {
        OutOfBandRecord(
            invitationId: "invitation-1", connectionId: connection.id, decisionRow: 6, state: state, reuseMessageId: reuseMessageId,
            invitation: .null)
    }

    @Test func eachRowStartsInTheStateItWaitsIn() {
        #expect(Machine.initialState(for: .invalid) == nil)
        #expect(Machine.initialState(for: .connect) == .connecting)
        #expect(Machine.initialState(for: .connectThenRunAttachment) == .connecting)
        #expect(Machine.initialState(for: .reuse) == .reuseSent)
        #expect(Machine.initialState(for: .reuseThenRunAttachment) == .reuseSent)
        #expect(Machine.initialState(for: .connectionless) == .done)
        #expect(Machine.initialState(for: .runAttachmentOnExisting) == .done)
    }

    @Test func onlyConnectingAndReuseSentAwaitTheInviter() {
        #expect(Machine.awaitsInviter(.connecting) && Machine.awaitsInviter(.reuseSent))
        #expect(!Machine.awaitsInviter(.reused) && !Machine.awaitsInviter(.done) && !Machine.awaitsInviter(.failed))
    }

    @Test func aConnectingRecordFollowsItsConnection() throws {
        let accepted = Machine.apply(.connectionSettled(.accepted, failureReason: nil), to: record(.connecting))
        #expect(accepted == .init(state: .done, failureReason: nil, actions: [.storeRecord]))
        #expect(Machine.apply(.connectionSettled(.reused, failureReason: nil), to: record(.connecting))?.state == .done)
        let failed = Machine.apply(.connectionSettled(.failed, failureReason: "no answer"), to: record(.connecting))
        #expect(failed == .init(state: .failed, failureReason: "no answer", actions: [.storeRecord]))
        #expect(record(.connecting).taking(try #require(failed)).failureReason == "no answer")
        for pending in [ConnectionRecord.State.initialized, .requested, .responded] {
            #expect(Machine.apply(.connectionSettled(pending, failureReason: nil), to: record(.connecting)) == nil)
        }
    }

    @Test func aSettledRecordIgnoresItsConnection() {
        for state in [OutOfBandRecord.State.done, .failed, .reuseSent, .reused] {
            #expect(Machine.apply(.connectionSettled(.accepted, failureReason: nil), to: record(state)) == nil)
            #expect(Machine.apply(.connectionSettled(.failed, failureReason: "late"), to: record(state)) == nil)
        }
    }

    @Test func reuseAcceptedOverTheConnectionReusesIt() {
        let event = Machine.Event.reuseAccepted(threadId: "reuse-1", connection: connection, recipientVerkey: "ourKey")
        let expected = Machine.Transition(state: .reused, failureReason: nil, actions: [.storeRecord, .reuseConnection])
        #expect(Machine.apply(event, to: record(.reuseSent)) == expected)
        #expect(Machine.apply(event, to: record(.reused)) == expected, "a copy applies as the first did")
        let noThread = Machine.Event.reuseAccepted(threadId: nil, connection: connection, recipientVerkey: "ourKey")
        #expect(Machine.apply(noThread, to: record(.reuseSent)) == expected, "an answer without ~thread.thid is matched by pthid")
    }

    @Test func reuseAcceptedIsRefusedUnlessItAnswersThisReuse() {
        let event = Machine.Event.reuseAccepted(threadId: "reuse-1", connection: connection, recipientVerkey: "ourKey")
        for state in [OutOfBandRecord.State.connecting, .done, .failed] {
            #expect(Machine.apply(event, to: record(state)) == nil, "\(state) sent no reuse")
        }
        let otherThread = Machine.Event.reuseAccepted(threadId: "reuse-2", connection: connection, recipientVerkey: "ourKey")
        #expect(Machine.apply(otherThread, to: record(.reuseSent)) == nil)
        let otherKey = Machine.Event.reuseAccepted(threadId: "reuse-1", connection: connection, recipientVerkey: "strangerKey")
        #expect(Machine.apply(otherKey, to: record(.reuseSent)) == nil, "packed to a key of another connection")
        let gone = Machine.Event.reuseAccepted(threadId: "reuse-1", connection: nil, recipientVerkey: "ourKey")
        #expect(Machine.apply(gone, to: record(.reuseSent)) == nil)
        var failed = connection
        failed.state = .failed
        let notEstablished = Machine.Event.reuseAccepted(threadId: "reuse-1", connection: failed, recipientVerkey: "ourKey")
        #expect(Machine.apply(notEstablished, to: record(.reuseSent)) == nil)
        var other = connection
        other.id = UUID.random()
        let elsewhere = Machine.Event.reuseAccepted(threadId: "reuse-1", connection: other, recipientVerkey: "ourKey")
        #expect(Machine.apply(elsewhere, to: record(.reuseSent)) == nil, "over another connection than the record's")
    }

    @Test func aProblemReportFailsWhatWaitsForTheInviter() {
        let event = Machine.Event.problemReported(reason: "no thanks", connection: connection, recipientVerkey: "ourKey")
        let expected = Machine.Transition(state: .failed, failureReason: "no thanks", actions: [.storeRecord, .reviewMessage])
        #expect(Machine.apply(event, to: record(.reuseSent)) == expected)
        #expect(Machine.apply(event, to: record(.connecting)) == expected)
        var failed = connection
        failed.state = .failed
        let overFailed = Machine.Event.problemReported(reason: "no thanks", connection: failed, recipientVerkey: "ourKey")
        #expect(Machine.apply(overFailed, to: record(.connecting)) == expected, "the connection's own state does not matter")
    }

    @Test func aProblemReportIsIgnoredOnceSettledOrFromElsewhere() {
        let event = Machine.Event.problemReported(reason: "late", connection: connection, recipientVerkey: "ourKey")
        for state in [OutOfBandRecord.State.reused, .done, .failed] {
            #expect(Machine.apply(event, to: record(state)) == nil)
        }
        let otherKey = Machine.Event.problemReported(reason: "x", connection: connection, recipientVerkey: "strangerKey")
        #expect(Machine.apply(otherKey, to: record(.reuseSent)) == nil)
        let gone = Machine.Event.problemReported(reason: "x", connection: nil, recipientVerkey: "ourKey")
        #expect(Machine.apply(gone, to: record(.reuseSent)) == nil)
    }
}
