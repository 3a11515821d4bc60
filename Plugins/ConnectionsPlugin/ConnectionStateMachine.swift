import AerieCore
import AerieCrypto

/// Both sides of RFC 0160 and both of RFC 0023 (didexchange) as a pure function: an event and the
/// connection's record in, the record after it and the actions to take out (postgres-nio's
/// `ConnectionStateMachine` is the model). It owns every state a connection takes (connect,
/// responses, problem reports, delivery failures, handshake reuse, connectionless out-of-band,
/// delete, the peer's hangup) and every rule that decides one: the state an event applies in,
/// which connection a Response or problem report may change (role, handshake, thread), which
/// events change nothing. Each event carries what its actions need (the key a connect stores, the
/// packed message a send enqueues), so an action never lacks its payload. The one driver,
/// `ConnectionService.run`, executes a transition in the caller's transaction.
public enum ConnectionStateMachine {
    public enum Event: Sendable {
        /// `connections.connect`: our Request, packed from a new pairwise key.
        case connect(Request)
        /// A connections/1.0 Response whose `connection~sig` verified against the invitation key.
        case responseVerified(Answer)
        /// A didexchange Response whose signed attachment verified against the invitation key.
        case exchangeResponseVerified(Answer)
        /// A problem report from the peer, or a Response that failed verification.
        case problem(Problem)
        /// The outbox gave up delivering a message of this connection.
        case deliveryFailed(reason: String)
        /// The inviter answered our handshake-reuse over this established connection.
        case reuseAccepted
        /// An out-of-band invitation without handshake (seed 004 row 4): the connection is made
        /// from the invitation's service, established at once.
        case connectionless
        /// Inviter: a checked Request reached an open invitation of ours; our Response, packed
        /// from a new pairwise key, answers it.
        case requestReceived(RequestAnswer)
        /// Inviter: the invitee's first authenticated message after our Response.
        case peerConfirmed
        /// `connections.delete`, in any state.
        case delete
        /// The peer of an established connection ended it (DID Rotate `hangup`, RFC 0794).
        case hangup
    }

    /// Our Request: the handshake it starts, the pairwise key and DID it was made with, its `@id`
    /// (the thread) and the packed message.
    public struct Request: Sendable {
        public var handshake: HandshakeProtocol
        public var key: PendingKey
        public var did: String
        public var requestId: String
        public var message: Outbound
    }

    /// A verified Response: the `~thread.thid` it names, the peer its signed connection names and
    /// our reply to that peer (a trust ping so the inviter moves to `active`, or didexchange
    /// `complete` so it moves to `completed`).
    public struct Answer: Sendable {
        public var threadId: String?
        public var peer: ConnectionMessages.PeerConnection
        public var reply: Outbound
    }

    /// Why a connection being set up fails: the reason recorded, the peer's report as received
    /// (nil for a Response we refused) and the `~thread.thid` it names.
    public struct Problem: Sendable {
        public var reason: String
        public var report: JSONValue?
        public var threadId: String?

        public init(reason: String, report: JSONValue? = nil, threadId: String? = nil) {
            self.reason = reason
            self.report = report
            self.threadId = threadId
        }
    }

    /// Inviter: the Request answered (sent to `invitationKey`) and our Response to it, packed from
    /// `key` and signed by the invitation key.
    public struct RequestAnswer: Sendable {
        public var requester: ConnectionMessages.Requester
        public var handshake: HandshakeProtocol
        public var invitationKey: String
        public var key: PendingKey
        public var did: String
        public var response: Outbound
    }

    public enum Action: Sendable, Equatable {
        /// Stores our new pairwise key with the state change.
        case storeKey(PendingKey)
        /// Enqueues the packed message to the peer (Request, Response, trust ping, `complete`).
        case send(Outbound)
        /// Removes the connection's row once its last state is written.
        case removeRecord
        /// Deletes a key of ours that has nothing left to receive (a used single-use invitation's).
        case removeKey(String)

        public static func == (a: Action, b: Action) -> Bool {
            switch (a, b) {
            case (.storeKey(let x), .storeKey(let y)): x.verkey == y.verkey
            case (.send(let x), .send(let y)): x == y
            case (.removeRecord, .removeRecord): true
            case (.removeKey(let x), .removeKey(let y)): x == y
            default: false
            }
        }
    }

    /// The record as the event leaves it (its state, and what the event brought: keys, peer,
    /// thread, failure) and what to do in the same transaction.
    public struct Transition: Sendable {
        public var record: ConnectionRecord
        public var actions: [Action]
        /// The record is a new connection, inserted rather than updated (a multi-use invitation
        /// makes one per Request).
        public var inserts = false
        /// False for an event that changes nothing and is no error: nothing is written.
        public var changes = true

        static func unchanged(_ record: ConnectionRecord) -> Transition {
            Transition(record: record, actions: [], changes: false)
        }
    }

    /// Applies `event` to `current`. Some events change nothing and are no error (`changes`
    /// false): a delivery failure of a Request to an open invitation of ours, which stays open for
    /// the next; a confirmation of a connection not waiting for one. Throws `conflict` when the
    /// event does not apply.
    public static func apply(_ event: Event, to current: ConnectionRecord) throws -> Transition {
        var next = current
        var actions: [Action] = []
        var inserts = false
        switch event {
        case .connect(let request):
            try checkConnect(current)
            next.myDid = request.did
            next.myVerkey = request.key.verkey
            next.threadId = request.requestId
            next.handshakeProtocol = request.handshake.rawValue
            actions = [.storeKey(request.key), .send(request.message)]
        case .responseVerified(let answer), .exchangeResponseVerified(let answer):
            _ = try checkResponse(exchange: event.isExchangeResponse, threadId: answer.threadId, on: current)
            next.theirDid = answer.peer.did
            next.theirVerkey = answer.peer.verkey
            next.theirEndpoint = answer.peer.endpoint
            next.theirRoutingKeys = answer.peer.routingKeys
            next.failureReason = nil
            next.problemReport = nil
            actions = [.send(answer.reply)]
        case .problem(let problem):
            try checkThread(problem.threadId, on: current)
            if let report = problem.report { next.problemReport = report }
            next.failureReason = problem.reason
        case .deliveryFailed(let reason):
            // A Request the server gave up handling fails no open invitation of ours: the
            // invitation (multi-use, or still unused) stays for the next Request.
            if current.isOpenInvitation { return .unchanged(current) }
            next.failureReason = reason
        case .hangup:
            next.failureReason = "the peer ended the connection (hangup)"
        case .requestReceived(let answer):
            try checkRequest(answer.handshake, at: answer.invitationKey, to: current)
            try checkRequester(answer.requester, of: current)
            if current.multiUse == true {
                // Multi-use: a new connection per Request, the invitation stays open.
                next = newConnection(from: current, parentThreadId: answer.requester.parentThreadId)
                inserts = true
            } else {
                // Single-use: the invitation itself becomes the connection, and its key, with
                // nothing left to receive, goes (so it no longer even routes to the tenant).
                actions = [.removeKey(answer.invitationKey)]
            }
            next.myDid = answer.did
            next.myVerkey = answer.key.verkey
            next.threadId = answer.requester.threadId
            next.theirDid = answer.requester.peer.did
            next.theirVerkey = answer.requester.peer.verkey
            next.theirEndpoint = answer.requester.peer.endpoint
            next.theirRoutingKeys = answer.requester.peer.routingKeys
            next.label = answer.requester.label
            next.handshakeProtocol = answer.handshake.rawValue
            next.multiUse = nil
            actions += [.storeKey(answer.key), .send(answer.response)]
        case .peerConfirmed:
            guard current.awaitsPeerConfirmation else { return .unchanged(current) }
        case .delete:
            actions = [.removeRecord]
        case .reuseAccepted, .connectionless:
            break
        }
        next.state = try state(after: event.kind, in: next.state)
        return Transition(record: next, actions: actions, inserts: inserts)
    }

    /// Whether `event` changes `current` (`apply` would not throw, and would write).
    public static func accepts(_ event: Event, to current: ConnectionRecord) -> Bool {
        (try? apply(event, to: current))?.changes ?? false
    }

    /// Throws `conflict` when `event` does not apply to `current`: a check before the work that
    /// follows (the driver applies the event itself in its transaction, on the row as locked).
    public static func check(_ event: Event, on current: ConnectionRecord) throws {
        _ = try apply(event, to: current)
    }

    /// The rule of `connect`, checked before the key is made and the Request packed.
    public static func checkConnect(_ current: ConnectionRecord) throws {
        _ = try state(after: .connect, in: current.state)
    }

    /// What a Response is checked against, as the rules found it on the connection: the key its
    /// signature must verify against (the invitation's) and our pairwise key, which sent the
    /// Request and packs the reply.
    public struct ExpectedResponse: Sendable, Hashable {
        public var invitationKey: String
        public var myVerkey: String
    }

    /// The rules of a connections/1.0 Response naming `threadId`, checked before its signature is
    /// verified (and again by `apply`, on the row as locked).
    public static func checkResponse(threadId: String?, on current: ConnectionRecord) throws -> ExpectedResponse {
        try checkResponse(exchange: false, threadId: threadId, on: current).expected
    }

    /// The rules of a didexchange Response naming `threadId`, checked before its signed attachment
    /// is verified; also answers our Request's `@id`, the thread our `complete` names.
    public static func checkExchangeResponse(threadId: String?, on current: ConnectionRecord) throws
        -> (expected: ExpectedResponse, requestId: String)
    {
        let (expected, requestId) = try checkResponse(exchange: true, threadId: threadId, on: current)
        guard let requestId else { throw notRequested }
        return (expected, requestId)
    }

    /// A Response (`exchange`: didexchange's, else connections/1.0's) applies to a connection
    /// that sent a Request (not to an invitation of ours), over that handshake, on its thread, in
    /// a state a Response applies in.
    private static func checkResponse(exchange: Bool, threadId: String?, on current: ConnectionRecord) throws
        -> (expected: ExpectedResponse, requestId: String?)
    {
        // Responses answer our Requests: an inviter-side connection sent none (its problem
        // reports are the invitee's).
        if current.isInviter {
            throw AerieError(.conflict, "the connection was made from an invitation of ours; a response does not apply")
        }
        try checkThread(threadId, on: current)
        let usesExchange = current.handshakeProtocol.flatMap(HandshakeProtocol.init(rawValue:))?.isDIDExchange ?? false
        if exchange != usesExchange {
            throw AerieError(
                .conflict,
                exchange
                    ? "the connection does not use didexchange; a didexchange response does not apply"
                    : "the connection uses didexchange; a connections/1.0 response does not apply")
        }
        // didexchange's `complete` names our Request's thread.
        guard let invitationKey = current.firstRecipientKey, let myVerkey = current.myVerkey,
            !exchange || current.threadId != nil
        else { throw notRequested }
        _ = try state(after: .response, in: current.state)
        return (ExpectedResponse(invitationKey: invitationKey, myVerkey: myVerkey), current.threadId)
    }

    private static var notRequested: AerieError { AerieError(.conflict, "the connection has not sent a request") }

    /// The rules of a Request reaching an invitation of ours at `invitationKey`, checked before it
    /// is read (and again by `apply`, on the row as locked): the invitation is still open, that is
    /// its key, and it offers the Request's handshake. Else `InboundSender.Refused`: a Request
    /// that reaches a single-use invitation another Request used (they raced) is refused like
    /// every later one.
    public static func checkRequest(_ handshake: HandshakeProtocol, at invitationKey: String, to invitation: ConnectionRecord)
        throws
    {
        guard invitation.isOpenInvitation, invitation.myVerkey == invitationKey, offers(invitation, handshake) else {
            throw InboundSender.Refused()
        }
    }

    /// A Request naming another invitation (`~thread.pthid`) than the one it was sent to does not
    /// apply to it.
    public static func checkRequester(_ requester: ConnectionMessages.Requester, of invitation: ConnectionRecord) throws {
        if let parent = requester.parentThreadId, let invitationId = invitation.invitation["@id"]?.stringValue,
            parent != invitationId
        {
            throw AerieError(.conflict, "the request names another invitation (~thread.pthid) than the one it was sent to")
        }
    }

    /// Whether an invitation of ours offers `handshake`: connections/1.0 for ours of RFC 0160,
    /// the listed `handshake_protocols` for an out-of-band one; every handshake Aerie answers for
    /// the tenant's invitation DID (no `@id`: it serves every `useDid` invitation, whichever
    /// handshakes each offered, and records made before didexchange 1.0 was offered list only 1.1).
    static func offers(_ invitation: ConnectionRecord, _ handshake: HandshakeProtocol) -> Bool {
        switch Invitation.Kind(rawValue: invitation.invitationKind) {
        case .aries?: return handshake == .connections10
        case .outOfBand? where invitation.invitation["@id"] == nil:
            return true
        case .outOfBand?:
            guard case .array(let offered)? = invitation.invitation["handshake_protocols"] else { return false }
            return offered.contains { $0.stringValue.map(InboundMessage.normalizedType) == handshake.rawValue }
        default: return false
        }
    }

    /// The connection a multi-use invitation makes for a Request: the invitation's, with its alias
    /// (the invitation DID's record has no `@id` of its own: the connection keeps the invitation
    /// the Request names, `parentThreadId`, and no alias).
    private static func newConnection(from invitation: ConnectionRecord, parentThreadId: String?) -> ConnectionRecord {
        let invitationId = invitation.invitation["@id"]?.stringValue
        var invitationJSON = invitation.invitation
        if invitationId == nil, let parentThreadId, case .object(var fields) = invitationJSON {
            fields["@id"] = .string(parentThreadId)
            invitationJSON = .object(fields)
        }
        return ConnectionRecord(
            invitation: invitationJSON, invitationKind: invitation.invitationKind, role: .inviter,
            alias: invitationId == nil ? nil : invitation.alias)
    }

    /// A message naming another thread (`~thread.thid`) than our Request's is not about this
    /// connection's handshake.
    static func checkThread(_ threadId: String?, on current: ConnectionRecord) throws {
        if let threadId, let mine = current.threadId, threadId != mine {
            throw AerieError(.conflict, "the message belongs to another thread than this connection's request")
        }
    }

    /// An event without its payload: what the table of states is written over.
    enum Kind {
        case connect, response, problem, deliveryFailed, reuseAccepted, connectionless, requestReceived, peerConfirmed, delete,
            hangup

        var name: String {
            switch self {
            case .connect: "connecting"
            case .response: "a response"
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

    /// The state an event moves a connection in `state` to; `conflict` when it does not apply.
    private static func state(after event: Kind, in state: ConnectionRecord.State) throws -> ConnectionRecord.State {
        switch (state, event) {
        case (.initialized, .connect):
            return .requested
        // A verified Response to our Request establishes the connection even after it failed:
        // the inviter's signature is the last word over a problem report (ACA-Py sends one for a
        // Request we sent again after a crash), a delivery we gave up on, or a forged Response.
        case (.requested, .response), (.responded, .response), (.failed, .response):
            return .accepted
        case (.accepted, .reuseAccepted), (.reused, .reuseAccepted):
            return .reused
        case (.initialized, .connectionless):
            return .accepted
        case (.initialized, .requestReceived):
            return .responded
        case (.responded, .peerConfirmed):
            return .accepted
        case (_, .delete):
            return .deleted
        case (.accepted, .hangup), (.reused, .hangup):
            return .failed
        case (.initialized, .problem), (.requested, .problem), (.responded, .problem),
            (.initialized, .deliveryFailed), (.requested, .deliveryFailed), (.responded, .deliveryFailed):
            return .failed
        default:
            throw AerieError(
                .conflict, "the connection is \(state.rawValue); \(event.name) does not apply",
                data: ["state": .int(Int64(state.number)), "stateName": .string(state.rawValue)])
        }
    }
}

extension ConnectionStateMachine.Event {
    var kind: ConnectionStateMachine.Kind {
        switch self {
        case .connect: .connect
        case .responseVerified, .exchangeResponseVerified: .response
        case .problem: .problem
        case .deliveryFailed: .deliveryFailed
        case .reuseAccepted: .reuseAccepted
        case .connectionless: .connectionless
        case .requestReceived: .requestReceived
        case .peerConfirmed: .peerConfirmed
        case .delete: .delete
        case .hangup: .hangup
        }
    }

    var isExchangeResponse: Bool {
        if case .exchangeResponseVerified = self { true } else { false }
    }
}
