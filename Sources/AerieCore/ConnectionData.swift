import Foundation

/// One kind of tenant data that belongs to a connection and goes with it when the connection is
/// deleted. The core's kinds are below; a plugin whose table points at connections (out-of-band
/// records, credentials...) declares its kind in `PluginStorage.connectionData`, and the deleting
/// transaction finds them all in `TenantTransaction.connectionData`.
public struct ConnectionData: Sendable {
    /// The name counts are reported under (the table's name).
    public var kind: String
    /// Removes the connection's rows of this kind inside the deleting transaction; returns how many.
    public var remove: @Sendable (any TenantTransaction, ConnectionRecord) throws -> Int

    public init(kind: String, remove: @escaping @Sendable (any TenantTransaction, ConnectionRecord) throws -> Int) {
        self.kind = kind
        self.remove = remove
    }

    public static let outbox = ConnectionData(kind: "outbox") { tx, record in
        try tx.outbox.deleteAll(connectionId: record.id)
    }

    public static let mailbox = ConnectionData(kind: "mailbox") { tx, record in
        try tx.mailbox.deleteAll(connectionId: record.id, recipientVerkey: record.myVerkey)
    }

    /// The sealed pairwise key, and the key of a DID rotation under way: once gone, nothing
    /// addressed to them is accepted any more (the inbound endpoint finds no owner).
    public static let pairwiseKey = ConnectionData(kind: "tenant_keys") { tx, record in
        try [record.myVerkey, record.rotation?.verkey].compactMap { $0 }.filter { try tx.keys.remove(verkey: $0) }.count
    }

    /// Everything that goes with a connection, removed in this order before the connection row:
    /// the core's kinds, then `plugins`' (in registration order), the pairwise key last.
    public static func all(plugins: [ConnectionData]) -> [ConnectionData] {
        [.outbox, .mailbox] + plugins + [.pairwiseKey]
    }
}
