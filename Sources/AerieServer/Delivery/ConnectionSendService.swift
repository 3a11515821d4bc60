import AerieCore
import AerieCrypto
import Foundation

/// Sending over a connection (`ConnectionSender`), handed to the plugins that send.
///
/// One round trip and one write transaction: the connection with its key's sealed secret comes
/// from `connections` for a plain send (else one statement reads it, and a second the `replyTo`
/// message, when given); the message is packed outside any transaction; then the sent record and the outbox
/// row go in one round trip behind a check that locks the connection and fails unless it is
/// still as read (`lockAsRead`, as a Response is applied), so a stale entry sends nothing it
/// should not. A connection changed in between, or an `alongside` condition, takes the locked
/// path: the connection read again under its lock, checked, and the rows written there (a
/// cached connection whose keys or peer changed is read and packed again).
///
/// On a connectionless connection (`ConnectionRecord.isConnectionless`) every message carries our
/// `~service` (RFC 0056: our pairwise key at `endpoint`, no routing keys) and the invitation's
/// `@id` as `~thread.pthid`: the peer has no DID of ours to answer, and ACA-Py finds its
/// out-of-band record by that `pthid`.
public struct ConnectionSendService: ConnectionSender {
    /// Where peers reach us (`AERIE_PUBLIC_ENDPOINT`), for `~service`; nil: connectionless
    /// connections cannot send.
    let endpoint: (@Sendable () -> String)?
    /// The connections sent over, as last read (`AerieDatabase.sendingConnections`).
    let connections: ConnectionSendCache

    /// Every send reads its connection.
    public init(endpoint: (@Sendable () -> String)? = nil) {
        self.init(endpoint: endpoint, connections: .off)
    }

    package init(endpoint: (@Sendable () -> String)? = nil, connections: ConnectionSendCache) {
        self.endpoint = endpoint
        self.connections = connections
    }

    public func send(
        _ message: JSONValue, on connectionId: UUID, replyTo: UUID?, tenant: TenantContext,
        alongside: (@Sendable (ConnectionRecord, any TenantTransaction) throws -> Bool)?
    ) async throws -> SentMessage? {
        // A plain send (no `replyTo`, no `alongside`) may take its connection from `connections`;
        // a cached connection whose keys or peer changed since is packed again from a fresh read.
        let cached = alongside == nil && replyTo == nil
        do {
            return try await send(message, on: connectionId, replyTo: replyTo, tenant: tenant, alongside: alongside, cached: cached)
        } catch is ChangedWhilePacking {
            guard cached else { throw ChangedWhilePacking.error }
            do {
                return try await send(message, on: connectionId, replyTo: replyTo, tenant: tenant, alongside: alongside, cached: false)
            } catch is ChangedWhilePacking {
                throw ChangedWhilePacking.error
            }
        }
    }

    /// The connection's keys or peer changed between its read and the locked write.
    private struct ChangedWhilePacking: Error {
        static let error = AerieError(.conflict, "the connection changed while the message was being packed; send it again")
    }

    private func send(
        _ message: JSONValue, on connectionId: UUID, replyTo: UUID?, tenant: TenantContext,
        alongside: (@Sendable (ConnectionRecord, any TenantTransaction) throws -> Bool)?, cached: Bool
    ) async throws -> SentMessage? {
        guard let messageId = message["@id"]?.stringValue, let rawType = message["@type"]?.stringValue else {
            throw AerieError.internalError(details: "a message to send needs @type and @id")
        }
        let (record, sealedSecret, thread) = try await read(connectionId, replyTo: replyTo, cached: cached, tenant: tenant)
        guard let myVerkey = record.myVerkey, let route = Outbound.Route(peerOf: record) else { throw Self.notEstablished(record) }
        var packed = try Self.threaded(message, in: thread)
        if record.isConnectionless { packed = try answerable(packed, at: myVerkey, of: record) }
        let outbound = try await Outbound.pack(
            packed, from: .sealed(verkey: myVerkey, sealedSecret: sealedSecret), to: route, tenant: tenant)
        let uid = UUID.random()
        let threadId = packed["~thread"]?["thid"]?.stringValue.map { String($0.prefix(256)) }
        let stored = MailboxMessage(
            uid: uid, connectionId: connectionId, recipientVerkey: route.recipientKey, senderVerkey: myVerkey,
            messageId: messageId, type: InboundMessage.normalizedType(rawType), threadId: threadId,
            status: MailboxMessage.queued, payload: packed, direction: .sent)
        // The outbox row's id is fixed before the transaction: a rerun finds its first run's row.
        let item = outbound.item(for: connectionId, message: uid)
        let sent = SentMessage(uid: uid, messageId: messageId, threadId: threadId, connection: record, message: packed)
        if alongside == nil {
            do {
                // Every write is queued: one round trip, committed at its Sync.
                return try await tenant.database.rerunnableTransaction { tx -> SentMessage? in
                    try tx.connections.lockAsRead(record)
                    try tx.mailbox.insertSentQueued(stored)
                    FaultPoint.reach("send.afterRecord")
                    try tx.outbox.enqueue(item)
                    return sent
                }
            } catch where ConnectionAsRead.changed(error) {
                // Changed since it was read: decided on the locked row below, read again next time.
                connections.invalidate(tenant: tenant.tenantID, keys: CollectionOfOne(connectionId))
            }
        }
        return try await tenant.database.transaction { tx -> SentMessage? in
            guard let current = try tx.connections.getForUpdate(connectionId) else { throw Self.connectionNotFound(connectionId) }
            try Self.requireEstablished(current)
            // Packed for the connection as read before: a peer or key that changed since must not get it.
            guard current.myVerkey == myVerkey, Outbound.Route(peerOf: current) == route else {
                throw ChangedWhilePacking()
            }
            if let alongside, try !alongside(current, tx) { return nil }
            try tx.mailbox.insertSentQueued(stored)
            FaultPoint.reach("send.afterRecord")
            try tx.outbox.enqueue(item)
            var sent = sent
            sent.connection = current
            return sent
        }
    }

    /// The established connection `connectionId` with its key's sealed secret, and the thread of
    /// `replyTo`. `cached`: from `connections` when it holds the connection, else one read, which
    /// fills it unless the connection changed meanwhile.
    private func read(_ connectionId: UUID, replyTo: UUID?, cached: Bool, tenant: TenantContext) async throws
        -> (ConnectionRecord, [UInt8], String?)
    {
        var generation: UInt64? = nil
        if cached {
            switch connections.lookup(tenant: tenant.tenantID, key: connectionId) {
            case .hit(let entry): return (entry.record, entry.sealedSecret, nil)
            case .miss(let current): generation = current
            }
        }
        let read = try await tenant.database.read { tx -> (ConnectionRecord, [UInt8], String?) in
            guard let found = try tx.connections.getWithSealedKey(connectionId) else { throw Self.connectionNotFound(connectionId) }
            let record = found.record
            try Self.requireEstablished(record)
            guard let sealed = found.sealedSecret else { throw Self.connectionNotFound(connectionId) }
            return (record, sealed, try replyTo.map { try Self.thread(of: $0, on: record, in: tx) })
        }
        if let generation {
            connections.store(
                tenant: tenant.tenantID, key: connectionId, value: SendingConnection(record: read.0, sealedSecret: read.1),
                generation: generation)
        }
        return read
    }

    /// The thread `replyTo` (a message of the connection) belongs to: its `thid`, else its `@id`.
    private static func thread(of replyTo: UUID, on record: ConnectionRecord, in tx: any TenantTransaction) throws -> String {
        guard let original = try tx.mailbox.get(replyTo),
            original.connectionId == record.id || (original.connectionId == nil && original.recipientVerkey == record.myVerkey)
        else {
            throw AerieError.invalidParams("replyTo must be the uid of a message of this connection", field: "replyTo")
        }
        return original.threadId ?? original.messageId
    }

    /// `message` with `~thread.thid` set to `thread` (nil: as it is).
    private static func threaded(_ message: JSONValue, in thread: String?) throws -> JSONValue {
        guard let thread else { return message }
        guard case .object(var decorator) = message["~thread"] ?? .object([:]) else {
            throw AerieError.invalidParams("message.~thread must be an object", field: "message.~thread")
        }
        if let given = decorator["thid"], given != .string(thread) {
            throw AerieError.invalidParams("message.~thread.thid differs from the thread of replyTo", field: "replyTo")
        }
        decorator["thid"] = .string(thread)
        guard case .object(var fields) = message else { return message }
        fields["~thread"] = .object(decorator)
        return .object(fields)
    }

    /// `message` with our `~service` (RFC 0056) and, unless it has one, `~thread.pthid` the
    /// invitation's `@id`: what a connectionless peer needs to answer.
    private func answerable(_ message: JSONValue, at myVerkey: String, of record: ConnectionRecord) throws -> JSONValue {
        guard let endpoint else {
            throw AerieError.internalError(details: "no endpoint for the ~service of a connectionless message")
        }
        guard case .object(var fields) = message, case .object(var thread) = fields["~thread"] ?? .object([:]) else {
            throw AerieError.invalidParams("message.~thread must be an object", field: "message.~thread")
        }
        fields["~service"] = [
            "recipientKeys": [.string(myVerkey)], "routingKeys": [], "serviceEndpoint": .string(endpoint()),
        ]
        if thread["pthid"] == nil, let invitationId = record.invitationId {
            thread["pthid"] = .string(invitationId)
        }
        if !thread.isEmpty { fields["~thread"] = .object(thread) }
        return .object(fields)
    }

    /// Messages go only over an established connection (accepted or reused, the peer known).
    private static func requireEstablished(_ record: ConnectionRecord) throws {
        guard record.isEstablished else { throw notEstablished(record) }
    }

    private static func notEstablished(_ record: ConnectionRecord) -> AerieError {
        AerieError(
            .conflict,
            "the connection is not established (state \(record.state.number), \(record.state.rawValue)): messages can be sent once it is accepted",
            data: [
                "connectionId": .string(record.id.lowercasedString), "state": .int(Int64(record.state.number)),
                "stateName": .string(record.state.rawValue),
            ])
    }

    private static func connectionNotFound(_ id: UUID) -> AerieError {
        AerieError.notFound("no connection \(id.lowercasedString)")
    }
}
