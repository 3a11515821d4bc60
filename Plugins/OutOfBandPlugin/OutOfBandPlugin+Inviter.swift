import AerieCore
import AerieCrypto
import Foundation

/// The inviter side of RFC 0434: `outOfBand.createInvitation` (an invitation of ours with an
/// inline service, stored through `ConnectionHandshakes.storeInvitation`; the connections plugin
/// answers its Requests) and the answer to a `handshake-reuse` over an established connection.
extension OutOfBandPlugin {
    func registerInviter(with router: inout MethodRouter) throws {
        let handshakes = service.handshakes
        try router.register(
            "outOfBand.createInvitation",
            summary: "Inviter role (RFC 0434): an out-of-band 1.1 invitation with an inline service (a fresh invitation key "
                + "of the tenant as did:key, this server's endpoint); handshakeProtocols of didexchange/1.1, didexchange/1.0 "
                + "and connections/1.0 (default didexchange/1.1). With useDid, the service is the tenant's invitation DID (useDid \"did:peer:4\" or "
                + "\"did:peer:2\", the same in every such invitation, multi-use) so a peer already connected reuses its connection (handshake-reuse, "
                + "answered). Answers {connectionId, invitation, invitationUrl (?oob=), state: 1}. A Request is "
                + "answered (didexchange 1.1: did_rotate~attach, 1.0: did_doc~attach, signed by the invitation key); the requester's complete (or first "
                + "message) makes the connection 4 (accepted)."
        ) { (params: CreateInvitationParams, tenant: TenantContext) in
            let checked = try params.validated()
            let record: ConnectionRecord
            let invitation: JSONValue
            let endpoint: String
            if let method = checked.useDid {
                // One record per method serves every invitation naming the tenant's DID: the
                // invitation itself is not stored (its Requests name it by pthid).
                record = try await handshakes.invitationDID(method: method, tenant: tenant)
                guard case .array(let services)? = record.invitation["services"], let did = services.first?.stringValue,
                    let resolved = record.invitationEndpoint ?? (try? PeerDID2(did).didCommService()?.serviceEndpoint)
                else {
                    throw AerieError.internalError(details: "the tenant's invitation DID has no DIDComm service")
                }
                endpoint = resolved
                invitation = OutOfBandMessages.invitation(
                    label: params.label ?? handshakes.defaultLabel, handshakeProtocols: checked.handshakes, attachments: checked.attachments,
                    goalCode: params.goalCode, goal: params.goal, service: .string(did))
            } else {
                record = try await handshakes.storeInvitation(
                    kind: .outOfBand, multiUse: params.multiUse ?? false, alias: params.alias, limits: checked.limits, tenant: tenant
                ) { key, endpoint, defaultLabel in
                    OutOfBandMessages.invitation(
                        label: params.label ?? defaultLabel, handshakeProtocols: checked.handshakes, attachments: checked.attachments,
                        goalCode: params.goalCode, goal: params.goal,
                        service: try OutOfBandMessages.inlineService(recipientKey: key, endpoint: endpoint))
                }
                invitation = record.invitation
                var url = ""
                if case .array(let services)? = invitation["services"], let found = services.first?["serviceEndpoint"]?.stringValue {
                    url = found
                }
                endpoint = url
            }
            return CreatedInvitation(
                connectionId: record.id.lowercasedString, invitation: invitation,
                invitationUrl: OutOfBandMessages.invitationURL(invitation, endpoint: endpoint), state: record.state.number,
                stateName: record.state.rawValue, multiUse: record.multiUse ?? false, alias: record.alias)
        }
        // The invitee already connected to us answers a new invitation of ours over that connection.
        for version in OutOfBandMessages.versions {
            try router.registerInbound(OutOfBandMessages.reuseType(version: version)) { message, tenant in
                try await Self.answerReuse(message, version: version, with: handshakes.sender, tenant: tenant)
            }
        }
    }

    /// Answers a peer's `handshake-reuse` (only the connection's peer's: senders `.peer`) with
    /// `handshake-reuse-accepted` (`thid` the reuse, `pthid` the invitation it names) through the
    /// one send path, stored with the reuse in one transaction so a redelivered one is answered
    /// once. No answer on a connection not established, or to a reuse without `@id` or `pthid`.
    static func answerReuse(
        _ message: InboundMessage, version: String, with sender: any ConnectionSender, tenant: TenantContext
    ) async throws {
        guard let connection = message.connection, message.sender == .peer, connection.isEstablished,
            let reuseId = message.id, let pthid = OutOfBandMessages.parentThreadId(message.body)
        else { return }
        // The pipeline refused a thid over `PeerFieldLimits.id`.
        let thid = message.body["~thread"]?["thid"]?.stringValue ?? reuseId
        let receipt = message.receipt
        _ = try await sender.send(
            OutOfBandMessages.reuseAccepted(threadId: thid, invitationId: pthid, version: version), on: connection.id,
            tenant: tenant
        ) { current, tx in
            try receipt?.claim(in: tx, connection: current.id) ?? true
        }
    }
}

/// What `outOfBand.createInvitation` answers.
struct CreatedInvitation: Encodable, Sendable {
    var connectionId: String
    var invitation: JSONValue
    var invitationUrl: String
    var state: Int
    var stateName: String
    var multiUse: Bool
    var alias: String?
}

struct CreateInvitationParams: Decodable, Sendable, DocumentedParams {
    static let maxTextLength = 500
    static let maxAttachments = 5
    static let maxAttachmentBytes = 64 * 1024
    /// The handshakes Aerie answers as inviter.
    static let offerable = [
        "https://didcomm.org/didexchange/1.1", "https://didcomm.org/didexchange/1.0", "https://didcomm.org/connections/1.0",
    ]

    var handshakeProtocols: [String]?
    var attachments: [JSONValue]?
    var multiUse: Bool?
    var goalCode: String?
    var goal: String?
    var label: String?
    var alias: String?
    var useDid: JSONValue?
    var maxUses: Int?
    var expiresAt: String?

    static let documentation = [
        ParamDoc(
            "handshakeProtocols", "array", required: false,
            "handshakes offered, in order of preference: any of https://didcomm.org/didexchange/1.1, https://didcomm.org/didexchange/1.0 and https://didcomm.org/connections/1.0 (default didexchange/1.1)"),
        ParamDoc("attachments", "array", required: false, "DIDComm messages attached as requests~attach (at most 5, 64 KiB each)"),
        ParamDoc("multiUse", "boolean", required: false, "a connection per Request (false: the invitation is used once)"),
        ParamDoc("goalCode", "string", required: false, "goal_code"),
        ParamDoc("goal", "string", required: false, "goal"),
        ParamDoc("label", "string", required: false, "the label the invitee sees (default: the server's)"),
        ParamDoc("alias", "string", required: false, "the backend's own name for the invitation and its connections"),
        ParamDoc(
            "useDid", "string|boolean", required: false,
            "name the tenant's invitation DID in this method as the service: \"did:peer:4\" (in its long form) or \"did:peer:2\" "
                + "(true: did:peer:2); multi-use, shared by every such invitation, so a peer connected through one reuses its "
                + "connection for the next; not with multiUse false, alias, maxUses or expiresAt"),
    ] + InvitationUseLimits.documentation

    struct Checked {
        var handshakes: [String]
        var attachments: [JSONValue]
        /// The method of the tenant's invitation DID to name, nil for an inline service.
        var useDid: PeerDIDMethod?
        var limits: InvitationUseLimits
    }

    func validated() throws -> Checked {
        for (field, value) in [("label", label), ("alias", alias), ("goalCode", goalCode), ("goal", goal)] {
            if let value, value.isEmpty || value.count > Self.maxTextLength {
                throw AerieError.invalidParams("\(field) must be 1...\(Self.maxTextLength) characters", field: field)
            }
        }
        let handshakes = (handshakeProtocols ?? [Self.offerable[0]]).map(InboundMessage.normalizedType)
        guard !handshakes.isEmpty, handshakes.count <= Self.offerable.count, Set(handshakes).count == handshakes.count,
            handshakes.allSatisfy(Self.offerable.contains)
        else {
            throw AerieError.invalidParams(
                "handshakeProtocols must list some of \(Self.offerable.joined(separator: ", ")) (an invitation without handshake is not offered)",
                field: "handshakeProtocols")
        }
        let attachments = attachments ?? []
        guard attachments.count <= Self.maxAttachments else {
            throw AerieError.invalidParams("at most \(Self.maxAttachments) attachments", field: "attachments")
        }
        for (index, attachment) in attachments.enumerated() {
            guard case .object = attachment, attachment["@type"]?.stringValue != nil,
                attachment.serialized().count <= Self.maxAttachmentBytes
            else {
                throw AerieError.invalidParams(
                    "each attachment must be a DIDComm message object with @type, at most \(Self.maxAttachmentBytes) bytes",
                    field: "attachments[\(index)]")
            }
        }
        let useDid: PeerDIDMethod?
        switch self.useDid {
        case nil, .null?, .bool(false)?: useDid = nil
        case .bool(true)?: useDid = .peer2
        case .string(let name)?: useDid = try PeerDIDMethod.parameter(name, field: "useDid")
        default: throw AerieError.invalidParams("useDid must be \"did:peer:4\", \"did:peer:2\" or a boolean", field: "useDid")
        }
        if useDid != nil, multiUse == false || alias != nil {
            throw AerieError.invalidParams(
                "an invitation naming the tenant's DID is multi-use and has the DID's record (no alias of its own)",
                field: multiUse == false ? "multiUse" : "alias")
        }
        let limits = try InvitationUseLimits(maxUses: maxUses, expiresAt: expiresAt)
        if useDid != nil, !limits.isEmpty {
            throw AerieError.invalidParams(
                "the tenant's invitation DID serves every invitation naming it: it takes no limits of one",
                field: limits.maxUses != nil ? "maxUses" : "expiresAt")
        }
        return Checked(handshakes: handshakes, attachments: attachments, useDid: useDid, limits: limits)
    }
}
