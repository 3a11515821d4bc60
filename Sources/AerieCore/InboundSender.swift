/// Which senders an inbound message type is taken from on a connection (registered with its type).
public enum InboundSenders: Sendable, Hashable {
    /// Only the connection's peer: authcrypted by their verkey.
    case peer
    /// The peer, or while their key is not known yet (handshake), the invitation's recipient key:
    /// the key a problem report about our request is packed with (ACA-Py packs it with the key
    /// the request was sent to).
    case handshakeReport
    /// The peer, or while their key is not known yet, the invitation key or a key of their own
    /// that the handler must find in the signed Response (`InboundSender.handshakeKey`).
    case handshakeResponse
    /// Only at an open invitation of ours (`ConnectionRecord.isOpenInvitation`): any authcrypting
    /// key, which the handler must find named by the Request's DIDDoc (`InboundSender.handshakeKey`).
    case invitationRequest

    /// Whether these senders are strangers: nobody's peer yet, anyone holding a public invitation.
    /// A stranger's message the handler does not handle is never kept (the inbound pipeline
    /// answers it 4xx, or 5xx for a failure that can pass, and stores nothing), so strangers
    /// cannot fill a tenant's mailbox with messages nobody will handle.
    public var areStrangers: Bool { self == .invitationRequest }

    /// Whether a message from these senders may be opened with a recipient key this process has
    /// just made, its connection as inserted (`RecentRecipients`): a handshake Response only, whose
    /// transaction checks that the row is still as inserted (`ConnectionRepository.lockAsRead`).
    /// Anything else is decided on the row as stored, which another server may have changed since.
    /// With `awaitsResponse`, the one place that decides what a Response's short path takes.
    public var openWithRecentRecipient: Bool { self == .handshakeResponse }

    /// Whether a connection, as its transaction inserted it, waits for a message of
    /// `openWithRecentRecipient` senders: our Request sent from our pairwise key (`requested`),
    /// its Response to come. Only such a connection is kept with its key (`RecentRecipients`).
    public static func awaitsResponse(_ connection: ConnectionRecord) -> Bool {
        connection.state == .requested && connection.myVerkey != nil
    }
}

/// Who sent an inbound message, as the connection its recipient key belongs to sees it. Decided
/// once per message by `authenticate` before any handler runs or anything is stored.
public enum InboundSender: Sendable, Hashable {
    /// Authcrypted by the connection's peer verkey.
    case peer
    /// Authcrypted by the invitation's recipient key while the peer's key is not known yet.
    case invitationKey
    /// Authcrypted by a key not known yet, on a Response or a Request: it counts only if it is the
    /// key the Response's signed connection (the Request's DIDDoc) names (checked by the handler,
    /// else `Refused`).
    case handshakeKey(String)

    /// Thrown by a handler (before it stores anything) when the sender is not the key the
    /// message itself says it must be, or the message names a peer that cannot be accepted
    /// (a field over `PeerFieldLimits`, a DID that does not belong to its key); the endpoint
    /// refuses the message (400 with `reason`), nothing is stored.
    public struct Refused: Error {
        public var reason: String

        public init(_ reason: String = "the sender is not the key the message names") {
            self.reason = reason
        }
    }

    /// The sender of a message packed by `senderVerkey` (nil: anoncrypt) to `connection`'s
    /// pairwise key, or nil when it is not one the connection takes `accepted` messages from.
    public static func authenticate(
        senderVerkey: String?, connection: ConnectionRecord, accepted: InboundSenders
    ) -> InboundSender? {
        guard let senderVerkey else { return nil }
        // An invitation key of ours takes Requests only, and Requests go nowhere else.
        if connection.isOpenInvitation { return accepted == .invitationRequest ? .handshakeKey(senderVerkey) : nil }
        if accepted == .invitationRequest { return nil }
        if let theirVerkey = connection.theirVerkey {
            return senderVerkey == theirVerkey ? .peer : nil
        }
        switch accepted {
        case .peer:
            return nil
        case .handshakeReport:
            return senderVerkey == connection.firstRecipientKey ? .invitationKey : nil
        case .handshakeResponse:
            return senderVerkey == connection.firstRecipientKey ? .invitationKey : .handshakeKey(senderVerkey)
        case .invitationRequest:
            return nil
        }
    }

    /// Whether this sender may be the key `verkey` that the message names as its author.
    public func allows(_ verkey: String) -> Bool {
        switch self {
        case .peer, .invitationKey: true
        case .handshakeKey(let key): key == verkey
        }
    }
}
