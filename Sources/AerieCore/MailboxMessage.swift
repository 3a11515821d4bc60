import Foundation

/// A decrypted inbound message as the tenant's mailbox keeps it.
public struct MailboxMessage: Sendable, Hashable, Codable {
    /// `MS-103` received, `MS-106` reviewed (the SDK's statuses `MS-101`..`MS-106`).
    public static let received = "MS-103"
    public static let reviewed = "MS-106"

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
    public var receivedAt: Date

    public init(
        uid: UUID = UUID(), connectionId: UUID?, recipientVerkey: String, senderVerkey: String?, messageId: String,
        type: String, threadId: String?, status: String = MailboxMessage.received, payload: JSONValue,
        receivedAt: Date = Date()
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
    }
}

/// `aerie.mailbox` inside one tenant transaction.
public protocol MailboxRepository {
    /// Stores `message` unless one with the same recipient verkey and `@id` is already there;
    /// returns the stored uid and whether this call inserted it.
    func insert(_ message: MailboxMessage) throws -> (uid: UUID, inserted: Bool)
    func get(_ uid: UUID) throws -> MailboxMessage?
    /// Messages of a connection, oldest first, optionally of one status and type; at most `limit`.
    func list(connectionId: UUID, status: String?, type: String?, limit: Int) throws -> [MailboxMessage]
    @discardableResult
    func updateStatus(_ uid: UUID, to status: String) throws -> Bool
    /// Removes the messages of a connection: those linked to it, and those addressed to its
    /// pairwise verkey (stored before the link was known). Returns how many.
    func deleteAll(connectionId: UUID, recipientVerkey: String?) throws -> Int
}
