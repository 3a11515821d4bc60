import AerieCore
import Foundation

/// An out-of-band invitation a tenant accepted: which decision-table row it took, the connection
/// it made, reused or used, and its attached request.
public struct OutOfBandRecord: Sendable, Hashable {
    public enum State: String, Sendable, Hashable, Codable {
        /// A handshake was started for a new connection.
        case connecting
        /// A handshake-reuse was sent; waiting for handshake-reuse-accepted.
        case reuseSent = "reuse-sent"
        /// The inviter accepted the reuse.
        case reused
        /// Nothing more to wait for (attached message delivered to the mailbox, connection made).
        case done
        /// The inviter refused (problem report) or the handshake failed.
        case failed
    }

    public var id: UUID
    /// The invitation's `@id`: unique per tenant.
    public var invitationId: String
    public var connectionId: UUID?
    /// The decision-table row taken, 1...8 (seed 004).
    public var decisionRow: Int
    public var state: State
    /// The handshake-reuse message's `@id`.
    public var reuseMessageId: String?
    /// The attached request, decoded.
    public var attachedMessage: JSONValue?
    /// Where the attached request is in the tenant's mailbox.
    public var attachedMessageUid: UUID?
    public var failureReason: String?
    public var invitation: JSONValue
    public var createdAt: Date
    public var updatedAt: Date

    public init(
        id: UUID = UUID.random(), invitationId: String, connectionId: UUID?, decisionRow: Int, state: State,
        reuseMessageId: String? = nil, attachedMessage: JSONValue? = nil, attachedMessageUid: UUID? = nil,
        failureReason: String? = nil, invitation: JSONValue, createdAt: Date = Date(), updatedAt: Date = Date()
    ) {
        self.id = id
        self.invitationId = invitationId
        self.connectionId = connectionId
        self.decisionRow = decisionRow
        self.state = state
        self.reuseMessageId = reuseMessageId
        self.attachedMessage = attachedMessage
        self.attachedMessageUid = attachedMessageUid
        self.failureReason = failureReason
        self.invitation = invitation
        self.createdAt = createdAt
        self.updatedAt = updatedAt
    }
}

/// `aerie.oob_invitations` inside one tenant transaction: `tx.repository(OutOfBandRepository.self)`
/// (provided by this plugin's `storage`, `OutOfBandStore`).
public protocol OutOfBandRepository {
    /// Stores the record; throws `conflict` when the tenant already has one for its invitation `@id`.
    func insert(_ record: OutOfBandRecord) throws
    /// Writes every field but `id`, `invitationId` and `createdAt`; returns false when absent.
    @discardableResult
    func update(_ record: OutOfBandRecord) throws -> Bool
    /// The record of an invitation `@id`, locked for update when `forUpdate`.
    func find(invitationId: String, forUpdate: Bool) throws -> OutOfBandRecord?
    /// Removes every record of a connection. Returns how many.
    func deleteAll(connectionId: UUID) throws -> Int
}

extension TenantTransaction {
    /// This plugin's repository, looked up by type (`unavailable` while the plugin is off).
    var outOfBand: any OutOfBandRepository {
        get throws { try repository(OutOfBandRepository.self) }
    }
}
