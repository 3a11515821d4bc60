import Foundation

/// A connection as the methods answer it: state as number and name.
public struct ConnectionView: Encodable, Sendable, Hashable {
    public var connectionId: String
    public var state: Int
    public var stateName: String
    public var pwDid: String?
    public var pwVerkey: String?
    public var theirDid: String?
    public var theirVerkey: String?
    public var theirEndpoint: String?
    public var invitationKind: String
    public var invitationId: String?
    public var label: String?
    public var logoUrl: String?
    public var goal: String?
    public var goalCode: String?
    public var failureReason: String?
    /// The handshake used (`https://didcomm.org/connections/1.0`, `…/didexchange/1.1`), once connected.
    public var handshakeProtocol: String?
    /// `invitee` or `inviter` (a connection from an invitation of ours, `connections.createInvitation`).
    public var role: String
    /// Inviter: whether the invitation makes a connection per Request.
    public var multiUse: Bool?
    /// Inviter: the backend's name for the invitation.
    public var alias: String?
    public var createdAt: String
    public var updatedAt: String
    /// Set by `connections.accept` when the invitation matched a stored connection.
    public var existing: Bool?

    public init(_ r: ConnectionRecord) {
        connectionId = r.id.lowercasedString
        state = r.state.number
        stateName = r.state.rawValue
        pwDid = r.myDid
        pwVerkey = r.myVerkey
        theirDid = r.theirDid
        theirVerkey = r.theirVerkey
        theirEndpoint = r.theirEndpoint
        invitationKind = r.invitationKind
        invitationId = r.invitationId ?? (r.isInviter ? r.invitation["@id"]?.stringValue : nil)
        label = r.label
        logoUrl = r.logoUrl
        goal = r.goal
        goalCode = r.goalCode
        failureReason = r.failureReason
        handshakeProtocol = r.handshakeProtocol
        role = (r.role ?? .invitee).rawValue
        multiUse = r.multiUse
        alias = r.alias
        createdAt = r.createdAt.iso8601Text
        updatedAt = r.updatedAt.iso8601Text
    }
}
