import Foundation

/// A connection as the methods answer it: state as number and name. Its JSON shape is spelled in
/// one place, `forEachMember`, which both its text (`text`: what `connections.get` answers and the
/// server caches) and its `Encodable` form (a view inside another result) are written from.
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
    /// The DID our rotation under way (`connections.rotateDid`) moves to once the peer acks.
    public var rotatingToDid: String?

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
        rotatingToDid = r.rotation?.did
        createdAt = r.createdAt.iso8601Text
        updatedAt = r.updatedAt.iso8601Text
    }
}

extension ConnectionView {
    /// The view written as JSON text, byte for byte what `JSONValue(encoding:)` then
    /// `serialized()` gives for it (`ConnectionViewTextTests`).
    public var text: JSONText {
        JSONText(reservingCapacity: 1024) { writer in
            writer.object { members in
                forEachMember { key, member in
                    switch member {
                    case .string(let value): members.member(key, string: value)
                    case .int(let value): members.member(key, .int(Int64(value)))
                    case .bool(let value): members.member(key, .bool(value))
                    }
                }
            }
        }
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingPathKey.self)
        try forEachMember { key, member in
            let key = CodingPathKey(stringValue: key)
            switch member {
            case .string(let value): try container.encode(value, forKey: key)
            case .int(let value): try container.encode(value, forKey: key)
            case .bool(let value): try container.encode(value, forKey: key)
            }
        }
    }

    private enum Member {
        case string(String)
        case int(Int)
        case bool(Bool)
    }

    /// Every member by its property's name, nil ones left out (as a synthesized `Encodable` would
    /// have it), in sorted key order (as `JSONValue.serialized()` writes an object).
    private func forEachMember(_ body: (String, Member) throws -> Void) rethrows {
        if let alias { try body("alias", .string(alias)) }
        try body("connectionId", .string(connectionId))
        try body("createdAt", .string(createdAt))
        if let existing { try body("existing", .bool(existing)) }
        if let failureReason { try body("failureReason", .string(failureReason)) }
        if let goal { try body("goal", .string(goal)) }
        if let goalCode { try body("goalCode", .string(goalCode)) }
        if let handshakeProtocol { try body("handshakeProtocol", .string(handshakeProtocol)) }
        if let invitationId { try body("invitationId", .string(invitationId)) }
        try body("invitationKind", .string(invitationKind))
        if let label { try body("label", .string(label)) }
        if let logoUrl { try body("logoUrl", .string(logoUrl)) }
        if let multiUse { try body("multiUse", .bool(multiUse)) }
        if let pwDid { try body("pwDid", .string(pwDid)) }
        if let pwVerkey { try body("pwVerkey", .string(pwVerkey)) }
        try body("role", .string(role))
        if let rotatingToDid { try body("rotatingToDid", .string(rotatingToDid)) }
        try body("state", .int(state))
        try body("stateName", .string(stateName))
        if let theirDid { try body("theirDid", .string(theirDid)) }
        if let theirEndpoint { try body("theirEndpoint", .string(theirEndpoint)) }
        if let theirVerkey { try body("theirVerkey", .string(theirVerkey)) }
        try body("updatedAt", .string(updatedAt))
    }
}
