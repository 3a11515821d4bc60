import AerieCore

/// Both sides of RFC 0160 and the requester side of RFC 0023 (didexchange) as a pure function: an event and the current state in, the new state and the actions to take out. It
/// owns every state a connection takes (connect, responses, problem reports, delivery failures,
/// handshake reuse, connectionless out-of-band, delete, the peer's hangup); the driver (`ConnectionService.commit`) does
/// the I/O: it writes the new state, enqueues what the actions send, marks the mailbox row that
/// caused the event reviewed, and after the commit wakes this process's waiters.
public enum ConnectionStateMachine {
    public enum Event: Sendable, Hashable {
        /// `connections.connect`: a Request is to be sent.
        case connect
        /// A Response whose `connection~sig` verified against the invitation key and whose
        /// `~thread.thid` is our Request's `@id`.
        case responseVerified
        /// A didexchange Response whose signed attachment verified against the invitation key and
        /// whose `~thread.thid` is our Request's `@id`.
        case exchangeResponseVerified
        /// A problem report from the peer, or a Response that failed verification.
        case problem(reason: String)
        /// The outbox gave up delivering a message of this connection.
        case deliveryFailed(reason: String)
        /// The inviter answered our handshake-reuse over this established connection.
        case reuseAccepted
        /// An out-of-band invitation without handshake (seed 004 row 4): the connection is made
        /// from the invitation's service, established at once.
        case connectionless
        /// Inviter: a checked Request reached an open invitation of ours; the Response is sent.
        case requestReceived
        /// Inviter: the invitee's first authenticated message after our Response.
        case peerConfirmed
        /// `connections.delete`, in any state.
        case delete
        /// The peer of an established connection ended it (DID Rotate `hangup`, RFC 0794).
        case hangup
    }

    public enum Action: Sendable, Hashable {
        case sendRequest
        /// A trust ping so the inviter moves its side to `active`.
        case sendTrustPing
        /// didexchange `complete`, so the inviter moves its side to `completed`.
        case sendComplete
        /// A connections/1.0 Response whose `connection~sig` the invitation key made.
        case sendResponse
        case recordFailure(reason: String)
        /// Removes the connection's row once its last state is written.
        case removeRecord
    }

    public struct Transition: Sendable, Hashable {
        public var state: ConnectionRecord.State
        public var actions: [Action]
    }

    /// Whether `event` applies in `state` (`apply` would not throw).
    public static func accepts(_ event: Event, in state: ConnectionRecord.State) -> Bool {
        (try? apply(event, in: state)) != nil
    }

    /// Throws `conflict` when the event does not apply in `state` (a check before the work an
    /// event needs; the driver applies the event itself in its transaction).
    public static func check(_ event: Event, in state: ConnectionRecord.State) throws {
        _ = try apply(event, in: state)
    }

    /// Throws `conflict` when the event does not apply in `state`.
    public static func apply(_ event: Event, in state: ConnectionRecord.State) throws -> Transition {
        switch (state, event) {
        case (.initialized, .connect):
            return Transition(state: .requested, actions: [.sendRequest])
        // A verified Response to our Request establishes the connection even after it failed:
        // the inviter's signature is the last word over a problem report (ACA-Py sends one for a
        // Request we sent again after a crash), a delivery we gave up on, or a forged Response.
        case (.requested, .responseVerified), (.responded, .responseVerified), (.failed, .responseVerified):
            return Transition(state: .accepted, actions: [.sendTrustPing])
        case (.requested, .exchangeResponseVerified), (.responded, .exchangeResponseVerified),
            (.failed, .exchangeResponseVerified):
            return Transition(state: .accepted, actions: [.sendComplete])
        case (.accepted, .reuseAccepted), (.reused, .reuseAccepted):
            return Transition(state: .reused, actions: [])
        case (.initialized, .connectionless):
            return Transition(state: .accepted, actions: [])
        case (.initialized, .requestReceived):
            return Transition(state: .responded, actions: [.sendResponse])
        case (.responded, .peerConfirmed):
            return Transition(state: .accepted, actions: [])
        case (_, .delete):
            return Transition(state: .deleted, actions: [.removeRecord])
        case (.accepted, .hangup), (.reused, .hangup):
            return Transition(state: .failed, actions: [.recordFailure(reason: "the peer ended the connection (hangup)")])
        case (.initialized, .problem(let reason)), (.requested, .problem(let reason)), (.responded, .problem(let reason)),
            (.initialized, .deliveryFailed(let reason)), (.requested, .deliveryFailed(let reason)),
            (.responded, .deliveryFailed(let reason)):
            return Transition(state: .failed, actions: [.recordFailure(reason: reason)])
        default:
            throw AerieError(
                .conflict, "the connection is \(state.rawValue); \(name(event)) does not apply",
                data: ["state": .int(Int64(state.number)), "stateName": .string(state.rawValue)])
        }
    }

    static func name(_ event: Event) -> String {
        switch event {
        case .connect: "connecting"
        case .responseVerified, .exchangeResponseVerified: "a response"
        case .problem: "a problem report"
        case .deliveryFailed: "a delivery failure"
        case .reuseAccepted: "a handshake reuse"
        case .connectionless: "a connectionless invitation"
        case .requestReceived: "a connection request"
        case .peerConfirmed: "the invitee's first message"
        case .delete: "deleting"
        case .hangup: "the peer's hangup"
        }
    }
}
