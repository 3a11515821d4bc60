import AerieCore
import Testing

@testable import ConnectionsPlugin

/// Every state a connection takes comes from the state machine, without any I/O: the moves the
/// out-of-band and delete plugins ask for (reuse, connectionless, delete) and the checks the driver runs first.
@Suite(.timeLimit(.minutes(5))) struct ConnectionStateMachineOwnershipTests {
    typealias Machine = ConnectionStateMachine

    @Test func reuseAcceptedMovesAnEstablishedConnectionToReused() throws {
        #expect(try Machine.apply(.reuseAccepted, in: .accepted) == .init(state: .reused, actions: []))
        // A redelivered handshake-reuse-accepted changes nothing more.
        #expect(try Machine.apply(.reuseAccepted, in: .reused) == .init(state: .reused, actions: []))
    }

    @Test(arguments: [ConnectionRecord.State.initialized, .requested, .responded, .failed, .deleted])
    func reuseNeedsAnEstablishedConnection(state: ConnectionRecord.State) {
        #expect(!Machine.accepts(.reuseAccepted, in: state))
        #expect(throws: AerieError.self) { try Machine.check(.reuseAccepted, in: state) }
    }

    @Test func aConnectionlessInvitationMakesAnAcceptedConnection() throws {
        #expect(try Machine.apply(.connectionless, in: .initialized) == .init(state: .accepted, actions: []))
        for state in [ConnectionRecord.State.requested, .accepted, .reused, .failed] {
            #expect(!Machine.accepts(.connectionless, in: state))
        }
    }

    @Test func establishedConnectionsRefuseLateFailuresAndConnects() {
        for state in [ConnectionRecord.State.accepted, .reused] {
            #expect(!Machine.accepts(.deliveryFailed(reason: "x"), in: state))
            #expect(!Machine.accepts(.problem(reason: "x"), in: state))
            #expect(!Machine.accepts(.connect, in: state))
        }
    }

    /// `connections.delete` is a move too: from any state to `deleted`, whose one action removes
    /// the row once that last state is written (so its event is logged and waiters see it).
    @Test(arguments: [ConnectionRecord.State.initialized, .requested, .responded, .accepted, .reused, .failed])
    func deleteEndsEveryState(state: ConnectionRecord.State) throws {
        #expect(try Machine.apply(.delete, in: state) == .init(state: .deleted, actions: [.removeRecord]))
    }

    @Test func everySendIsAnAction() throws {
        #expect(try Machine.apply(.connect, in: .initialized).actions == [.sendRequest])
        #expect(try Machine.apply(.exchangeResponseVerified, in: .requested).actions == [.sendComplete])
        #expect(try Machine.apply(.responseVerified, in: .responded).actions == [.sendTrustPing])
    }
}
