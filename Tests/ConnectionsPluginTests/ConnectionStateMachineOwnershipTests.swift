import AerieCore
import Testing

@testable import ConnectionsPlugin

/// Every state a connection takes comes from the state machine, without any I/O: the moves the
/// out-of-band and delete plugins ask for (reuse, connectionless, delete).
@Suite(.timeLimit(.minutes(5))) struct ConnectionStateMachineOwnershipTests {
    typealias Machine = ConnectionStateMachine

    static func connection(_ state: ConnectionRecord.State) -> ConnectionRecord {
        ConnectionRecord(state: state, invitation: ["@id": "inv-1"], invitationKind: "out-of-band", theirVerkey: "PEER")
    }

    @Test func reuseAcceptedMovesAnEstablishedConnectionToReused() throws {
        let reused = try Machine.apply(.reuseAccepted, to: Self.connection(.accepted))
        #expect(reused.record.state == .reused && reused.actions.isEmpty && reused.changes)
        // A redelivered handshake-reuse-accepted changes nothing more.
        #expect(try Machine.apply(.reuseAccepted, to: reused.record).record.state == .reused)
    }

    @Test(arguments: [ConnectionRecord.State.initialized, .requested, .responded, .failed, .deleted])
    func reuseNeedsAnEstablishedConnection(state: ConnectionRecord.State) async {
        #expect(!Machine.accepts(.reuseAccepted, to: Self.connection(state)))
        await expectAerieError(.conflict) { try Machine.check(.reuseAccepted, on: Self.connection(state)) }
    }

    @Test func aConnectionlessInvitationMakesAnAcceptedConnection() throws {
        let made = try Machine.apply(.connectionless, to: Self.connection(.initialized))
        #expect(made.record.state == .accepted && made.actions.isEmpty)
        for state in [ConnectionRecord.State.requested, .accepted, .reused, .failed] {
            #expect(!Machine.accepts(.connectionless, to: Self.connection(state)))
        }
    }

    /// `connections.delete` is a move too: from any state to `deleted`, whose one action removes
    /// the row once that last state is written (so its event is logged and waiters see it).
    @Test(arguments: [ConnectionRecord.State.initialized, .requested, .responded, .accepted, .reused, .failed])
    func deleteEndsEveryState(state: ConnectionRecord.State) throws {
        let deleted = try Machine.apply(.delete, to: Self.connection(state))
        #expect(deleted.record.state == .deleted && deleted.actions == [.removeRecord])
    }
}
