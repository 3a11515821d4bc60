import AerieCore
import AerieCrypto
import Foundation

/// Deletes a connection completely: every `ConnectionData` kind (the core's and every plugin's,
/// `TenantTransaction.connectionData`), then the connection itself through the connections
/// plugin's state machine (`ConnectionMove.delete`: state `deleted`, whose event reaches
/// subscribers, the event log and waiters, then the row removed), in one transaction.
/// With `notify`, a notice to the peer is packed with the pairwise key while it still exists and
/// enqueued in the same transaction as an outbox row linked to no connection, so delivery (and
/// its retries) outlives the connection and a failed delivery has no connection to fail.
public struct ConnectionDeletion: Sendable {
    public var handshakes: any ConnectionHandshakes
    /// Kinds removed after the store's own (for tests and embedders; plugins declare theirs in
    /// `PluginStorage.connectionData`).
    public var extraData: [ConnectionData]

    public init(handshakes: any ConnectionHandshakes, extraData: [ConnectionData] = []) {
        self.handshakes = handshakes
        self.extraData = extraData
    }

    public func delete(_ id: UUID, notify: Bool, tenant: TenantContext) async throws -> DeletedConnection {
        let notice: Outbound?
        if notify {
            guard let record = try await tenant.database.transaction({ try $0.connections.get(id) }) else {
                throw Self.notFound(id)
            }
            notice = await packNotice(for: record, tenant: tenant)
        } else {
            notice = nil
        }
        let (extraData, handshakes) = (self.extraData, self.handshakes)
        let (deleted, removed, queued) = try await tenant.database.transaction { tx -> (ConnectionRecord, [String: Int], Bool) in
            guard let record = try tx.connections.getForUpdate(id) else { throw Self.notFound(id) }
            var removed: [String: Int] = [:]
            for kind in tx.connectionData + extraData { removed[kind.kind, default: 0] += try kind.remove(tx, record) }
            let deleted = try handshakes.move(.delete, record, reviewed: nil, in: tx)
            removed["connections"] = 1
            // Only a notice packed with the key the connection still had (not one raced by a connect).
            var queued = false
            if let notice, notice.senderVerkey == record.myVerkey {
                try notice.enqueue(for: nil, in: tx)
                queued = true
            }
            return (deleted, removed, queued)
        }
        handshakes.committed(deleted, tenant: tenant)
        tenant.logger.info(
            "connection deleted", metadata: ["connection": "\(id)", "removed": "\(removed)", "notified": "\(queued)"])
        return DeletedConnection(connectionId: id.lowercasedString, removed: removed, notified: queued)
    }

    /// The notice, packed; nil (and logged) when the connection has no peer to tell yet or packing
    /// fails: telling the peer never stands in the way of the delete.
    func packNotice(for record: ConnectionRecord, tenant: TenantContext) async -> Outbound? {
        guard let sender = record.myVerkey, let route = Outbound.Route(peerOf: record) else {
            tenant.logger.info("no notice for a connection without a peer yet", metadata: ["connection": "\(record.id)"])
            return nil
        }
        do {
            return try await Outbound.pack(
                ClosedNotice.message(threadId: record.threadId), from: .stored(verkey: sender), to: route, tenant: tenant)
        } catch {
            tenant.logger.warning(
                "could not pack the notice for a deleted connection",
                metadata: ["connection": "\(record.id)", "error": "\(String(reflecting: error))"])
            return nil
        }
    }

    static func notFound(_ id: UUID) -> AerieError {
        AerieError.notFound("no connection \(id.lowercasedString)")
    }
}

/// What `connections.delete` answers.
public struct DeletedConnection: Encodable, Sendable, Hashable {
    public var connectionId: String
    /// Rows removed, by table: `connections`, `tenant_keys`, `mailbox`, `outbox`, ...
    public var removed: [String: Int]
    /// Whether a notice to the peer was enqueued.
    public var notified: Bool
}
