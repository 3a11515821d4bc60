import AerieCore
import Foundation

extension Outbound {
    /// A message queued on a connection: its sent record in the mailbox.
    public struct SentMessage: Sendable, Hashable {
        public var uid: UUID
        public var messageId: String
        public var threadId: String?
        /// The connection as it was when the message was queued.
        public var connection: ConnectionRecord
        /// The message as packed (with `@id` and `~thread` filled in).
        public var message: JSONValue
    }

    /// Sends `message` (an object with `@type` and `@id`) to the peer of the tenant's established
    /// connection: packed authcrypt with our pairwise key to their key, forward-wrapped through
    /// their routing keys, then in one transaction recorded in the mailbox as sent (`MS-101`,
    /// `direction == .sent`) and queued in the outbox; the outbox row names the record, so the
    /// delivery moves it to `MS-102` or, once delivery is given up, `MS-105` with the reason.
    ///
    /// `replyTo` (a mailbox uid of the same connection) fills `~thread.thid` with that message's
    /// thread (its `thid`, else its `@id`). `alongside` runs first in the same transaction with
    /// the locked connection; when it answers false nothing is sent and the answer is nil (an
    /// inbound message being answered was a duplicate). Refusals: `not_found` (no such
    /// connection of this tenant, or deleted), `conflict` (not established, or the same `@id`
    /// already sent to this peer), `invalid_params` (`replyTo`).
    public static func send(
        _ message: JSONValue, on connectionId: UUID, replyTo: UUID? = nil, tenant: TenantContext,
        alongside: (@Sendable (ConnectionRecord, any TenantTransaction) throws -> Bool)? = nil
    ) async throws -> SentMessage? {
        guard let messageId = message["@id"]?.stringValue, let rawType = message["@type"]?.stringValue else {
            throw AerieError.internalError(details: "a message to send needs @type and @id")
        }
        let (record, sealedSecret, thread) = try await tenant.database.transaction {
            tx -> (ConnectionRecord, [UInt8], String?) in
            guard let record = try tx.connections.get(connectionId) else { throw connectionNotFound(connectionId) }
            try requireEstablished(record)
            guard let verkey = record.myVerkey, let sealed = try tx.keys.sealedSecret(verkey: verkey) else {
                throw connectionNotFound(connectionId)
            }
            var thread: String? = nil
            if let replyTo {
                guard let original = try tx.mailbox.get(replyTo),
                    original.connectionId == connectionId
                        || (original.connectionId == nil && original.recipientVerkey == record.myVerkey)
                else {
                    throw AerieError.invalidParams("replyTo must be the uid of a message of this connection", field: "replyTo")
                }
                thread = original.threadId ?? original.messageId
            }
            return (record, sealed, thread)
        }
        var message = message
        if let thread {
            guard case .object(var decorator) = message["~thread"] ?? .object([:]) else {
                throw AerieError.invalidParams("message.~thread must be an object", field: "message.~thread")
            }
            if let given = decorator["thid"], given != .string(thread) {
                throw AerieError.invalidParams("message.~thread.thid differs from the thread of replyTo", field: "replyTo")
            }
            decorator["thid"] = .string(thread)
            if case .object(var fields) = message {
                fields["~thread"] = .object(decorator)
                message = .object(fields)
            }
        }
        guard let myVerkey = record.myVerkey, let route = Route(peerOf: record) else { throw notEstablished(record) }
        let outbound = try await pack(message, from: .sealed(verkey: myVerkey, sealedSecret: sealedSecret), to: route, tenant: tenant)
        let uid = UUID.random()
        let threadId = message["~thread"]?["thid"]?.stringValue.map { String($0.prefix(256)) }
        let stored = MailboxMessage(
            uid: uid, connectionId: connectionId, recipientVerkey: route.recipientKey, senderVerkey: myVerkey,
            messageId: messageId, type: InboundMessage.normalizedType(rawType), threadId: threadId,
            status: MailboxMessage.queued, payload: message, direction: .sent)
        let packed = message
        let sent = try await tenant.database.transaction { tx -> SentMessage? in
            guard let current = try tx.connections.getForUpdate(connectionId) else { throw connectionNotFound(connectionId) }
            try requireEstablished(current)
            // Packed for the connection as read before: a peer or key that changed since must not get it.
            guard current.myVerkey == myVerkey, Route(peerOf: current) == route else {
                throw AerieError(.conflict, "the connection changed while the message was being packed; send it again")
            }
            if let alongside, try !alongside(current, tx) { return nil }
            guard try tx.mailbox.insertSent(stored) else {
                throw AerieError(
                    .conflict, "a message with this @id was already sent on this connection", field: "message.@id",
                    data: ["@id": .string(messageId)])
            }
            FaultPoint.reach("send.afterRecord")
            try outbound.enqueue(for: connectionId, message: uid, in: tx)
            return SentMessage(uid: uid, messageId: messageId, threadId: threadId, connection: current, message: packed)
        }
        return sent
    }

    /// Messages go only over an established connection (accepted or reused, the peer known).
    static func requireEstablished(_ record: ConnectionRecord) throws {
        guard record.isEstablished else { throw notEstablished(record) }
    }

    static func notEstablished(_ record: ConnectionRecord) -> AerieError {
        AerieError(
            .conflict,
            "the connection is not established (state \(record.state.number), \(record.state.rawValue)): messages can be sent once it is accepted",
            data: [
                "connectionId": .string(record.id.lowercasedString), "state": .int(Int64(record.state.number)),
                "stateName": .string(record.state.rawValue),
            ])
    }

    static func connectionNotFound(_ id: UUID) -> AerieError {
        AerieError.notFound("no connection \(id.lowercasedString)")
    }
}
