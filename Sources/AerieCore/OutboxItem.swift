import Foundation

/// A packed envelope waiting in the durable outbox.
public struct OutboxItem: Sendable, Hashable {
    /// `sent` is read only from a row an earlier release marked (a server of it may still run
    /// beside this one during an upgrade): a delivered row is deleted now (schema/0032).
    public enum Status: String, Sendable, Hashable { case pending, sent, failed }

    public var id: UUID
    public var connectionId: UUID?
    public var endpoint: String
    public var envelope: [UInt8]
    public var attempts: Int
    public var nextAttemptAt: Date
    public var status: Status
    public var lastError: String?
    /// The sent message (mailbox row) this envelope carries, whose status follows the delivery.
    public var messageUid: UUID?
    /// The server instance that held the row's lease from its insert (`OutboxSignal.enqueueLease`):
    /// that process delivers it without a scan or a claim. Nil: inserted due, for any scan.
    public var leasedBy: String?
    /// When the row was enqueued: delivery retries until `createdAt` plus the horizon
    /// (`AERIE_DELIVERY_HORIZON_SECONDS`).
    public var createdAt: Date

    public init(
        id: UUID = UUID.random(), connectionId: UUID?, endpoint: String, envelope: [UInt8], attempts: Int = 0,
        nextAttemptAt: Date = Date(), status: Status = .pending, lastError: String? = nil, messageUid: UUID? = nil,
        createdAt: Date = Date()
    ) {
        self.id = id
        self.connectionId = connectionId
        self.endpoint = endpoint
        self.envelope = envelope
        self.attempts = attempts
        self.nextAttemptAt = nextAttemptAt
        self.status = status
        self.lastError = lastError
        self.messageUid = messageUid
        self.createdAt = createdAt
    }
}

/// `aerie.outbox` inside one tenant transaction.
public protocol OutboxRepository {
    func enqueue(_ item: OutboxItem) throws
    /// The row, locked for update, if still pending.
    func pendingForUpdate(_ id: UUID) throws -> OutboxItem?
    /// Leases a due pending row for delivery: pushes its `nextAttemptAt` `leaseSeconds` ahead so
    /// other pollers (other servers) skip it while it is sent. Nil when not pending or not due.
    /// A sender that dies mid-send leaves the lease to expire, and the row is sent again.
    func claim(_ id: UUID, leaseSeconds: Int) throws -> OutboxItem?
    /// Ends a delivered row (deleted, with its delivery event logged) and moves its message
    /// (`messageUid`) to `MS-102`, in one statement.
    func markSent(_ id: UUID) throws
    /// Records a failed attempt: either retried at `nextAttemptAt` or, when nil, failed for good
    /// (then its message, if any, becomes `MS-105` with `error`, in the same statement).
    func recordFailure(_ id: UUID, attempts: Int, nextAttemptAt: Date?, error: String) throws
    func list(connectionId: UUID, limit: Int) throws -> [OutboxItem]
    /// Removes every row of a connection, whatever its status. Returns how many.
    func deleteAll(connectionId: UUID) throws -> Int
}

/// How the delivery service of this process hears of the rows a tenant transaction enqueued,
/// told by the store right after that transaction committed (never before, never for a
/// transaction rolled back), so no caller has to remember it.
public protocol OutboxSignal: Sendable {
    /// The lease to insert new rows under, read once per transaction: rows inserted leased by this
    /// process are not due for any scan, so it delivers them from `committed` without a scan or a
    /// claim. Nil (no delivery service here, or its backlog is full): rows are inserted due.
    var enqueueLease: OutboxLease? { get }
    /// The rows `tenant`'s transaction enqueued (`leasedBy` set when inserted under the lease),
    /// right after its `COMMIT`. A process that dies before delivering them leaves them leased:
    /// its restart takes its leases back at once, other servers when the lease runs out.
    func committed(_ items: [OutboxItem], tenant: TenantID)
}

/// A lease new outbox rows are inserted under: `instance` owns them for `seconds`.
public struct OutboxLease: Sendable, Hashable {
    public var instance: String
    public var seconds: Int

    public init(instance: String, seconds: Int) {
        self.instance = instance
        self.seconds = max(1, seconds)
    }
}

extension OutboxItem {
    /// `scheme://host:port` of an endpoint, lower-cased, without credentials ("" when it has no
    /// scheme): what deliveries share slots by, and what an outbox row keeps of its endpoint in
    /// clear. (`aerie.outbox_destination`, schema/0019, names the destination of a row of the
    /// previous form until the sweep seals it.)
    public static func destination(of endpoint: String) -> String {
        let utf8 = Array(endpoint.utf8)
        guard let first = utf8.first, isLetter(first) else { return "" }
        var i = 1
        while i < utf8.count, isLetter(utf8[i]) || isDigit(utf8[i]) || utf8[i] == UInt8(ascii: "+")
            || utf8[i] == UInt8(ascii: ".") || utf8[i] == UInt8(ascii: "-")
        {
            i += 1
        }
        guard utf8.count >= i + 3, utf8[i] == UInt8(ascii: ":"), utf8[i + 1] == UInt8(ascii: "/"), utf8[i + 2] == UInt8(ascii: "/")
        else { return "" }
        var end = i + 3
        while end < utf8.count, ![UInt8(ascii: "/"), UInt8(ascii: "?"), UInt8(ascii: "#")].contains(utf8[end]) { end += 1 }
        // Credentials in the authority (`user:password@`) are not part of it.
        let host = utf8[(i + 3)..<end].lastIndex(of: UInt8(ascii: "@")).map { $0 + 1 } ?? i + 3
        return String(decoding: utf8[..<(i + 3)] + utf8[host..<end], as: UTF8.self).lowercased()
    }

    private static func isLetter(_ c: UInt8) -> Bool { (c >= 65 && c <= 90) || (c >= 97 && c <= 122) }
    private static func isDigit(_ c: UInt8) -> Bool { c >= 48 && c <= 57 }
}
