import AerieCore

/// One kind of tenant data that belongs to a connection and goes with it. A new table that points
/// at connections (out-of-band records, credentials...) adds an entry to `ConnectionData.all`,
/// backed by a `deleteAll(connectionId:)` on its repository.
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

    /// The out-of-band invitations accepted with the connection.
    public static let outOfBand = ConnectionData(kind: "oob_invitations") { tx, record in
        try tx.outOfBand.deleteAll(connectionId: record.id)
    }

    /// The sealed pairwise key: once gone, nothing addressed to it is accepted any more (the
    /// inbound endpoint finds no owner).
    public static let pairwiseKey = ConnectionData(kind: "tenant_keys") { tx, record in
        guard let verkey = record.myVerkey else { return 0 }
        return try tx.keys.remove(verkey: verkey) ? 1 : 0
    }

    /// Everything that goes with a connection, removed in this order before the connection row.
    public static let all: [ConnectionData] = [.outbox, .mailbox, .outOfBand, .pairwiseKey]
}
