import Foundation

/// A message queued on a connection: its sent record in the mailbox.
public struct SentMessage: Sendable, Hashable {
    public var uid: UUID
    public var messageId: String
    public var threadId: String?
    /// The connection as it was when the message was queued.
    public var connection: ConnectionRecord
    /// The message as packed (with `@id` and `~thread` filled in).
    public var message: JSONValue

    public init(uid: UUID, messageId: String, threadId: String?, connection: ConnectionRecord, message: JSONValue) {
        self.uid = uid
        self.messageId = messageId
        self.threadId = threadId
        self.connection = connection
        self.message = message
    }
}

/// The one way a message goes to the peer of a tenant's established connection. The server
/// implements it (packing needs the key wallet, queuing the store) and hands it to the plugins
/// that send.
public protocol ConnectionSender: Sendable {
    /// Sends `message` (an object with `@type` and `@id`): packed authcrypt with our pairwise key
    /// to their key, forward-wrapped through their routing keys, then in one transaction recorded
    /// in the mailbox as sent (`MS-101`, `direction == .sent`) and queued in the outbox; the
    /// outbox row names the record, so the delivery moves it to `MS-102` or, once delivery is
    /// given up, `MS-105` with the reason. The answer comes once that transaction committed.
    ///
    /// `replyTo` (a mailbox uid of the same connection) fills `~thread.thid` with that message's
    /// thread (its `thid`, else its `@id`). `alongside` runs first in the same transaction with
    /// the locked connection; when it answers false nothing is sent and the answer is nil (an
    /// inbound message being answered was a duplicate). Refusals: `not_found` (no such
    /// connection of this tenant, or deleted), `conflict` (not established, or the same `@id`
    /// already sent to this peer), `invalid_params` (`replyTo`).
    func send(
        _ message: JSONValue, on connectionId: UUID, replyTo: UUID?, tenant: TenantContext,
        alongside: (@Sendable (ConnectionRecord, any TenantTransaction) throws -> Bool)?
    ) async throws -> SentMessage?
}

extension ConnectionSender {
    public func send(_ message: JSONValue, on connectionId: UUID, replyTo: UUID? = nil, tenant: TenantContext) async throws
        -> SentMessage?
    {
        try await send(message, on: connectionId, replyTo: replyTo, tenant: tenant, alongside: nil)
    }

    public func send(
        _ message: JSONValue, on connectionId: UUID, tenant: TenantContext,
        alongside: @escaping @Sendable (ConnectionRecord, any TenantTransaction) throws -> Bool
    ) async throws -> SentMessage? {
        try await send(message, on: connectionId, replyTo: nil, tenant: tenant, alongside: alongside)
    }
}

extension MailboxMessage {
    /// What a send of an `@id` already sent to the same peer is refused with.
    public static func alreadySent(_ messageId: String) -> AerieError {
        AerieError(
            .conflict, "a message with this @id was already sent on this connection", field: "message.@id",
            data: ["@id": .string(messageId)])
    }
}
