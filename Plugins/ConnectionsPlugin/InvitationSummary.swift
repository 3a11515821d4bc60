import AerieCore

/// What `connections.parseInvitation` answers (DESIGN.md): the invitation as a wallet shows it,
/// and the stored connection it matches, if any.
public struct InvitationSummary: Codable, Sendable, Hashable {
    public var kind: Invitation.Kind
    public var type: String?
    public var id: String
    public var label: String?
    public var logoUrl: String?
    public var goal: String?
    public var goalCode: String?
    public var publicDid: String?
    public var recipientKeys: [String]
    public var serviceEndpoint: String?
    public var routingKeys: [String]
    public var handshakeProtocols: [String]
    public var hasAttachment: Bool
    /// Present when a stored connection of the tenant matches (`@id`, public DID or first key).
    public var existingConnectionId: String?

    public init(_ invitation: Invitation, existingConnectionId: String? = nil) {
        kind = invitation.kind
        type = invitation.type
        id = invitation.id
        label = invitation.label
        logoUrl = invitation.logoUrl
        goal = invitation.goal
        goalCode = invitation.goalCode
        publicDid = invitation.publicDid
        recipientKeys = invitation.recipientKeys
        serviceEndpoint = invitation.serviceEndpoint
        routingKeys = invitation.routingKeys
        handshakeProtocols = invitation.handshakeProtocols
        hasAttachment = invitation.hasAttachment
        self.existingConnectionId = existingConnectionId
    }
}
