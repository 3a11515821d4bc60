import Foundation

/// A message as the tenant's mailbox keeps it: a decrypted inbound message, or one the tenant
/// sent over a connection (`direction == .sent`), so a connection has one history.
public struct MailboxMessage: Sendable, Hashable, Codable {
    /// `MS-103` received, `MS-106` reviewed (the SDK's statuses `MS-101`..`MS-106`).
    public static let received = "MS-103"
    public static let reviewed = "MS-106"
    /// A sent message: `MS-101` queued, `MS-102` the peer's endpoint took it, `MS-105` delivery
    /// failed for good (the reason in `deliveryError`).
    public static let queued = "MS-101"
    public static let sent = "MS-102"
    public static let deliveryFailed = "MS-105"

    public enum Direction: String, Sendable, Hashable, Codable {
        case received, sent
    }

    public var uid: UUID
    public var connectionId: UUID?
    public var recipientVerkey: String
    public var senderVerkey: String?
    public var messageId: String
    /// Normalised to the `https://didcomm.org/` prefix.
    public var type: String
    public var threadId: String?
    public var status: String
    public var payload: JSONValue
    /// When it arrived (received) or was queued (sent).
    public var receivedAt: Date
    public var direction: Direction
    /// Why the delivery of a sent message failed (`MS-105`).
    public var deliveryError: String?

    public init(
        uid: UUID = UUID.random(), connectionId: UUID?, recipientVerkey: String, senderVerkey: String?, messageId: String,
        type: String, threadId: String?, status: String = MailboxMessage.received, payload: JSONValue,
        receivedAt: Date = Date(), direction: Direction = .received, deliveryError: String? = nil
    ) {
        self.uid = uid
        self.connectionId = connectionId
        self.recipientVerkey = recipientVerkey
        self.senderVerkey = senderVerkey
        self.messageId = messageId
        self.type = type
        self.threadId = threadId
        self.status = status
        self.payload = payload
        self.receivedAt = receivedAt
        self.direction = direction
        self.deliveryError = deliveryError
    }
}

/// What `MailboxRepository.claim` found.
public enum InboundClaim: Sendable, Hashable {
    case new(UUID)
    case resumed(UUID)
    case alreadyHandled(UUID)

    public var uid: UUID {
        switch self {
        case .new(let uid), .resumed(let uid), .alreadyHandled(let uid): uid
        }
    }

    /// Whether the caller is to handle the message (it was not handled before).
    public var isToHandle: Bool {
        if case .alreadyHandled = self { return false }
        return true
    }

    /// What `MailboxRepository.claimQueued` throws (from the statement its insert travelled
    /// with) when a copy of the message is already stored.
    public static let storedBefore = AerieError(
        .conflict, "a copy of this inbound message is already stored", details: storedBeforeDetails)
    private static let storedBeforeDetails = "inbound message stored before (claimQueued)"

    public static func isStoredBefore(_ error: any Error) -> Bool {
        (error as? AerieError)?.details == storedBeforeDetails
    }
}

/// `aerie.mailbox` inside one tenant transaction.
public protocol MailboxRepository {
    /// Stores `message` unless one with the same recipient verkey and `@id` is already there;
    /// returns the stored uid and whether this call inserted it.
    func insert(_ message: MailboxMessage) throws -> (uid: UUID, inserted: Bool)
    /// Stores an inbound message as handled, in the transaction of the handler that handles it:
    /// `.new` (stored now), `.resumed` (an earlier copy whose handling failed, now marked handled)
    /// or `.alreadyHandled` (a duplicate: the caller does nothing). The row stays locked until the
    /// transaction ends, so two copies are never handled at once.
    func claim(_ message: MailboxMessage) throws -> InboundClaim
    /// `claim` of a first copy without a round trip of its own: the insert is queued and travels
    /// with the transaction's next statement. When a copy is already stored, that statement
    /// throws `InboundClaim.storedBefore` and the transaction is void; the caller claims in a
    /// new one (`TenantDatabase.transaction(storing:linkedTo:_:)` does both). `asRead`: the insert
    /// also checks that recipient is still as read (`RecipientAsRead`), else that statement throws
    /// `ConnectionAsRead.changed` and the transaction is void.
    func claimQueued(_ message: MailboxMessage, asRead: RecipientAsRead?) throws
    /// Records that handling `message` failed: stores it unhandled (or counts one more attempt on
    /// the stored copy) with the error; the recovery service tries again after `backoffSeconds`
    /// doubling per attempt, until `maxAttempts`. Answers the attempts so far and the message's
    /// connection; nil when the stored copy was handled meanwhile.
    func recordHandlingFailure(_ message: MailboxMessage, error: String, maxAttempts: Int, backoffSeconds: Int) throws
        -> (attempts: Int, connectionId: UUID?)?
    func get(_ uid: UUID) throws -> MailboxMessage?
    /// Stores a message the tenant is sending (`direction == .sent`); false when the connection's
    /// peer was already sent a message with this `@id` (nothing stored).
    func insertSent(_ message: MailboxMessage) throws -> Bool
    /// `insertSent` without a round trip of its own: queued, sent with the transaction's next
    /// statement or its commit, which fail with `MailboxMessage.alreadySent` when the peer was
    /// already sent a message with this `@id` under another uid. Finding the row of `message`'s
    /// own uid stored passes (a rerun of a transaction that committed, `rerunnableTransaction`).
    func insertSentQueued(_ message: MailboxMessage) throws
    /// The first received message of `type` on the connection whose `~thread.thid` is `threadId`
    /// (a reply to a message we sent), nil when none arrived yet.
    func receivedReply(connectionId: UUID, threadId: String, type: String) throws -> MailboxMessage?
    /// Messages of a connection, oldest first, optionally of one status and type; at most `limit`.
    func list(connectionId: UUID, status: String?, type: String?, limit: Int) throws -> [MailboxMessage]
    @discardableResult
    func updateStatus(_ uid: UUID, to status: String) throws -> Bool
    /// `updateStatus` without its outcome: queued, sent with the transaction's next statement
    /// or its commit (no round trip of its own).
    func updateStatusQueued(_ uid: UUID, to status: String) throws
    /// Removes the messages of a connection: those linked to it, and those addressed to its
    /// pairwise verkey (stored before the link was known). Returns how many.
    func deleteAll(connectionId: UUID, recipientVerkey: String?) throws -> Int
    /// Messages of connections that have a pairwise DID, in arrival order (then uid), at most
    /// `query.limit`; payloads as text (`MailboxEntry.payloadJSON`).
    func download(_ query: MailboxQuery) throws -> [MailboxEntry]
    /// Sets the status of those of `uids` that arrived on the connection whose pairwise DID is
    /// `pairwiseDid` (received messages only: a sent message's status is its delivery's); returns
    /// the uids it matched (already at `status` included).
    func updateStatus(_ uids: [UUID], pairwiseDid: String, to status: String) throws -> [UUID]
    /// Removes reviewed (`MS-106`) messages received before `date`, at most `limit`; returns how many.
    func purgeReviewed(receivedBefore date: Date, limit: Int) throws -> Int
}

/// What `MailboxRepository.download` selects: statuses always, the other filters when given.
public struct MailboxQuery: Sendable, Hashable {
    public var statuses: [String]
    public var uids: [UUID]?
    /// Our pairwise DIDs of the connections the messages arrived on.
    public var pairwiseDids: [String]?
    /// Resume after this position (arrival time in microseconds since 1970, then uid).
    public var after: MailboxPosition?
    public var limit: Int

    public init(statuses: [String], uids: [UUID]? = nil, pairwiseDids: [String]? = nil, after: MailboxPosition? = nil, limit: Int) {
        self.statuses = statuses
        self.uids = uids
        self.pairwiseDids = pairwiseDids
        self.after = after
        self.limit = limit
    }
}

/// A place in the mailbox's arrival order.
public struct MailboxPosition: Sendable, Hashable {
    public var receivedAtMicros: Int64
    public var uid: UUID
    public init(receivedAtMicros: Int64, uid: UUID) {
        self.receivedAtMicros = receivedAtMicros
        self.uid = uid
    }
}

/// A mailbox message as `download` lists it: the fields its answer shows, with the connection it
/// belongs to (our and their DID), and the payload as JSON text (`payloadJSON`, what
/// `payload.jsonString` would give), not as a tree, since the download answers it as text.
/// Nothing the answer does not show is read (the message's own verkeys, its connection's id).
public struct MailboxEntry: Sendable, Hashable {
    public var uid: UUID
    public var messageId: String
    /// The `@type` as stored: its prefix normalised (`InboundMessage.normalizedType`).
    public var type: String
    public var threadId: String?
    public var status: String
    public var direction: MailboxMessage.Direction
    public var deliveryError: String?
    public var pairwiseDid: String
    public var theirDid: String?
    public var receivedAtMicros: Int64
    /// The payload's compact JSON text (keys sorted).
    public var payloadJSON: String

    public init(
        uid: UUID, messageId: String, type: String, threadId: String?, status: String, direction: MailboxMessage.Direction,
        deliveryError: String?, pairwiseDid: String, theirDid: String?, receivedAtMicros: Int64, payloadJSON: String
    ) {
        self.uid = uid
        self.messageId = messageId
        self.type = type
        self.threadId = threadId
        self.status = status
        self.direction = direction
        self.deliveryError = deliveryError
        self.pairwiseDid = pairwiseDid
        self.theirDid = theirDid
        self.receivedAtMicros = receivedAtMicros
        self.payloadJSON = payloadJSON
    }

    public var position: MailboxPosition { MailboxPosition(receivedAtMicros: receivedAtMicros, uid: uid) }

    /// The payload's own `@type`, as its sender wrote it (either prefix), read from its text when
    /// asked (nil when the payload is no object, has none, or it does not read): `type` is the
    /// same with its prefix normalised, which is all the download needs for the kinds it names.
    public var payloadType: String? {
        (try? JSONObjectText(Array(payloadJSON.utf8)))?.string("@type")
    }

    /// The payload parsed (tests and rare readers; the download itself passes the text on).
    public var payload: JSONValue {
        get throws { try JSONValue(parsing: payloadJSON) }
    }
}
