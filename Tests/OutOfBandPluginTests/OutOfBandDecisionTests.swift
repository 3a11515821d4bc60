import AerieCore
import Testing

@testable import OutOfBandPlugin

/// Seed 004's table, one test per row.
@Suite(.timeLimit(.minutes(10))) struct OutOfBandDecisionTests {
    func decide(_ handshake: Bool, _ attachment: Bool, _ exists: Bool) -> OutOfBandDecision.Row {
        OutOfBandDecision.decide(.init(handshakeProtocols: handshake, attachment: attachment, connectionExists: exists))
    }

    @Test func row1NeitherHandshakeNorAttachmentWithoutConnectionIsInvalid() {
        #expect(decide(false, false, false) == .init(number: 1, decision: .invalid))
    }

    @Test func row2NeitherHandshakeNorAttachmentWithConnectionIsInvalid() {
        #expect(decide(false, false, true) == .init(number: 2, decision: .invalid))
    }

    @Test func row3HandshakeOnlyConnects() {
        let row = decide(true, false, false)
        #expect(row == .init(number: 3, decision: .connect))
        #expect(row.decision.makesConnection && !row.decision.sendsReuse && !row.decision.runsAttachment)
    }

    @Test func row4AttachmentOnlyIsConnectionless() {
        let row = decide(false, true, false)
        #expect(row == .init(number: 4, decision: .connectionless))
        #expect(!row.decision.makesConnection && !row.decision.sendsReuse && row.decision.runsAttachment)
    }

    @Test func row5HandshakeAndAttachmentConnectsThenRuns() {
        let row = decide(true, true, false)
        #expect(row == .init(number: 5, decision: .connectThenRunAttachment))
        #expect(row.decision.makesConnection && row.decision.runsAttachment)
    }

    @Test func row6HandshakeWithConnectionReuses() {
        let row = decide(true, false, true)
        #expect(row == .init(number: 6, decision: .reuse))
        #expect(row.decision.sendsReuse && !row.decision.makesConnection && !row.decision.runsAttachment)
    }

    @Test func row7AttachmentWithConnectionRunsOnIt() {
        let row = decide(false, true, true)
        #expect(row == .init(number: 7, decision: .runAttachmentOnExisting))
        #expect(!row.decision.sendsReuse && !row.decision.makesConnection && row.decision.runsAttachment)
    }

    @Test func row8EverythingReusesThenRuns() {
        let row = decide(true, true, true)
        #expect(row == .init(number: 8, decision: .reuseThenRunAttachment))
        #expect(row.decision.sendsReuse && row.decision.runsAttachment)
    }

    @Test func storedRowNumbersReadBack() {
        for handshake in [false, true] {
            for attachment in [false, true] {
                for exists in [false, true] {
                    let row = decide(handshake, attachment, exists)
                    #expect(OutOfBandDecision.row(row.number) == row)
                }
            }
        }
        #expect(OutOfBandDecision.row(0) == nil)
        #expect(OutOfBandDecision.row(9) == nil)
    }
}
