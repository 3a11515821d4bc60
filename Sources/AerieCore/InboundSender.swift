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

    /// Whether a connection read from the database may be remembered with its key `verkey`
    /// (`RecentRecipients`, as read) for the messages of `MethodRouter.InboundRoute
    /// .opensWithRememberedRecipient`: established, `verkey` its current key. With that property,
    /// the one place that decides what the steady state's short path takes.
    public static func remembersAsRead(_ connection: ConnectionRecord, verkey: String) -> Bool {
        connection.isEstablished && connection.myVerkey == verkey
    }
}

extension MethodRouter.InboundRoute {
    /// Whether a message of this route may be opened with a recipient remembered from an earlier
    /// read of the database (`RecentRecipients`, as read: an established connection and its key,
    /// its tenant's wrapped data key), without reading them again: only a type nothing handles
    /// but the pipeline's store (`storedOnly`), from the connection's peer. Why no other:
    /// - Such a message is decided by the sender's authentication against the connection and by
    ///   its store, nothing else. Its store carries the recipient as remembered
    ///   (`InboundReceipt.asRead`) and checks it in the insert itself
    ///   (`MailboxRepository.claimQueued(_:asRead:)`): the connection unchanged (state and
    ///   `updated_at`, our key still its key and held), the tenant active with the same wrapped data
    ///   key. Otherwise nothing is stored and the pipeline reads the recipient from the database
    ///   and processes the message again, so a stale entry (a peer key rotated away, a deleted
    ///   connection, a suspended, deleted or rewrapped tenant, a NOTIFY not heard yet) decides
    ///   nothing the database would not.
    /// - A handler that writes in its own transaction (handshakes, rotation, credentials, pings
    ///   answered) decides on the row it reads; it would have to check the same way in each
    ///   transaction, so those routes are decided on the row as stored, as before.
    /// - Strangers' routes (a Request) and the handshake's are never taken from an established
    ///   connection anyway.
    public var opensWithRememberedRecipient: Bool { storedOnly && senders == .peer }
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
