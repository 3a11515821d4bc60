import AerieCore

/// The rules of an out-of-band record's state, without I/O: the state a decision-table row starts
/// in, and what each later event (the connection settling, the inviter's handshake-reuse-accepted
/// or problem report) changes and asks to be done. `OutOfBandService` reads and writes; this
/// decides.
///
/// `connecting` -> `done` | `failed` (the handshake's outcome, or a problem report);
/// `reuse-sent` -> `reused` | `failed`; rows that need no answer start `done`.
public enum OutOfBandStateMachine {
    public typealias State = OutOfBandRecord.State

    public enum Event: Sendable, Equatable {
        /// The record's connection is now in `state` (`failureReason`: why it failed).
        case connectionSettled(ConnectionRecord.State, failureReason: String?)
        /// A handshake-reuse-accepted naming the record by `~thread.pthid`, with `~thread.thid`,
        /// over the record's connection as read locked (nil: gone), packed to `recipientVerkey`.
        case reuseAccepted(threadId: String?, connection: ConnectionRecord?, recipientVerkey: String)
        /// An out-of-band problem report naming the record by `~thread.pthid`, over the record's
        /// connection (nil: gone), packed to `recipientVerkey`.
        case problemReported(reason: String, connection: ConnectionRecord?, recipientVerkey: String)
    }

    /// What the driver does, in order, once the record took the transition's state.
    public enum Action: Sendable, Equatable {
        /// Write the record.
        case storeRecord
        /// Move the connection to `reused` (`ConnectionMove.reuseAccepted`), the answer reviewed.
        case reuseConnection
        /// Mark the inbound message that caused the transition reviewed (`MS-106`).
        case reviewMessage
    }

    public struct Transition: Sendable, Equatable {
        public var state: State
        /// Set with `failed`; nil leaves the record's reason as it is.
        public var failureReason: String?
        public var actions: [Action]
    }

    /// The state a record of `decision` is stored in; nil for an invalid invitation (rows 1 and
    /// 2), which stores nothing.
    public static func initialState(for decision: OutOfBandDecision) -> State? {
        switch decision {
        case .invalid: nil
        // The handshake's outcome is awaited.
        case .connect, .connectThenRunAttachment: .connecting
        // The inviter's handshake-reuse-accepted (or problem report) is awaited.
        case .reuse, .reuseThenRunAttachment: .reuseSent
        // Made or used at once: nothing to wait for.
        case .connectionless, .runAttachmentOnExisting: .done
        }
    }

    /// Whether a record in `state` still waits for the inviter (a reuse's wait goes on).
    public static func awaitsInviter(_ state: State) -> Bool {
        switch state {
        case .connecting, .reuseSent: true
        case .reused, .done, .failed: false
        }
    }

    /// What `event` does to `record`; nil when it does not apply (nothing changes, nothing is
    /// written: a late or foreign answer, a copy of one already applied is handled as the first).
    public static func apply(_ event: Event, to record: OutOfBandRecord) -> Transition? {
        switch event {
        case .connectionSettled(let connectionState, let reason):
            // Only a record waiting for its handshake follows its connection.
            guard record.state == .connecting else { return nil }
            switch connectionState {
            case .accepted, .reused: return Transition(state: .done, actions: [.storeRecord])
            case .failed: return Transition(state: .failed, failureReason: reason, actions: [.storeRecord])
            default: return nil
            }
        case .reuseAccepted(let threadId, let connection, let recipientVerkey):
            // A copy after the first (`reused`) applies again: the connection move is idempotent.
            guard record.state == .reuseSent || record.state == .reused,
                threadId == nil || threadId == record.reuseMessageId,
                let connection, connection.id == record.connectionId, connection.myVerkey == recipientVerkey,
                OutOfBandService.isEstablished(connection)
            else { return nil }
            return Transition(state: .reused, actions: [.storeRecord, .reuseConnection])
        case .problemReported(let reason, let connection, let recipientVerkey):
            guard record.state == .reuseSent || record.state == .connecting,
                let connection, connection.id == record.connectionId, connection.myVerkey == recipientVerkey
            else { return nil }
            return Transition(state: .failed, failureReason: reason, actions: [.storeRecord, .reviewMessage])
        }
    }
}

extension OutOfBandRecord {
    /// The record after `transition`.
    func taking(_ transition: OutOfBandStateMachine.Transition) -> OutOfBandRecord {
        var next = self
        next.state = transition.state
        if let reason = transition.failureReason { next.failureReason = reason }
        return next
    }
}
