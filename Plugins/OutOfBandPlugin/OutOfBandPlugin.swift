import AerieCore
import Foundation

/// `outOfBand.*`: the invitee side of Aries RFC 0434 and seed 004's decision table, on top of the
/// connections plugin's handshakes (reached through `ConnectionHandshakes`).
public struct OutOfBandPlugin: AeriePlugin {
    public static let name = "out-of-band"
    /// `aerie.oob_invitations`: its migration, repository and upkeep.
    public static var storage: PluginStorage { OutOfBandSchema.storage }

    public let service: OutOfBandService

    /// `defaultTimeout`: how long `accept` and `sendReuse` wait for the inviter unless the call
    /// says otherwise (`AERIE_OOB_TIMEOUT`, 15 s by default).
    /// `attachedHandlers`: the enabled plugins that take attached requests over.
    public init(
        handshakes: any ConnectionHandshakes, defaultTimeout: Duration = .seconds(15),
        attachedHandlers: [any AttachedRequestHandler] = []
    ) {
        self.service = OutOfBandService(handshakes: handshakes, defaultTimeout: defaultTimeout, attachedHandlers: attachedHandlers)
    }

    public func register(with router: inout MethodRouter) throws {
        let service = self.service
        let handshakes = service.handshakes
        try router.register(
            "outOfBand.accept",
            summary:
                "Runs the out-of-band decision table: connects, reuses an existing connection (handshake-reuse), or delivers the attached request; answers the row taken, the connection and the attached message."
        ) { (params: AcceptParams, tenant: TenantContext) in
            let invitation = try await handshakes.readInvitation(params.invitation, url: params.url)
            let outcome = try await service.accept(
                invitation, label: params.label, didMethod: try PeerDIDMethod.parameter(params.didMethod),
                wait: params.wait ?? true, timeout: try params.timeout(), tenant: tenant)
            return OutOfBandResult(outcome, invitation: invitation)
        }
        try router.register(
            "outOfBand.createConnection",
            summary:
                "Stores a connection for an out-of-band invitation: state 1 when it offers a handshake, or state 4 at once (with the attached request in the mailbox) when it only carries an attachment."
        ) { (params: InvitationParams, tenant: TenantContext) in
            let invitation = try await handshakes.readInvitation(params.invitation, url: params.url)
            try OutOfBandService.requireOutOfBand(invitation)
            let attached = try service.attachedRequest(of: invitation)
            if invitation.handshakeProtocols.isEmpty {
                // Seed 004 row 4: the parser already refused an invitation with neither list.
                let row = OutOfBandDecision.decide(.init(handshakeProtocols: false, attachment: true, connectionExists: false))
                let (connection, _) = try await service.createConnectionless(invitation, row: row, attached: attached, tenant: tenant)
                return ConnectionView(connection)
            }
            return ConnectionView(try await handshakes.create(invitation, tenant: tenant))
        }
        try router.register(
            "outOfBand.sendReuse",
            summary:
                "Sends handshake-reuse for an invitation over an existing connection; with wait (default), until the inviter's handshake-reuse-accepted makes it reused (bounded, then timeout)."
        ) { (params: SendReuseParams, tenant: TenantContext) in
            let invitation = try await handshakes.readInvitation(params.invitation, url: params.url)
            let connection = try await handshakes.load(try params.id(), tenant: tenant)
            let attached = try service.attachedRequest(of: invitation)
            if let same = try await service.sameInvitation(invitation, tenant: tenant), same.record != nil {
                return OutOfBandResult(same, invitation: invitation)
            }
            let row = OutOfBandDecision.decide(
                .init(handshakeProtocols: !invitation.handshakeProtocols.isEmpty, attachment: attached != nil, connectionExists: true))
            let outcome = try await service.sendReuse(
                invitation, over: connection, row: row, attached: attached, wait: params.wait ?? true,
                timeout: try params.timeout() ?? service.defaultTimeout, tenant: tenant)
            return OutOfBandResult(outcome, invitation: invitation)
        }
        try router.register(
            "outOfBand.extractAttachedMessage",
            summary: "Decodes the request attached to an out-of-band invitation (requests~attach / request~attach, json or base64)."
        ) { (params: InvitationParams, _: TenantContext) in
            let invitation = try await handshakes.readInvitation(params.invitation, url: params.url)
            try OutOfBandService.requireOutOfBand(invitation)
            return ExtractedAttachment(
                attachedMessage: try AttachedMessage.extract(from: invitation), attachmentCount: invitation.attachments.count)
        }
        for type in OutOfBandMessages.reuseAcceptedTypes {
            try router.registerInbound(type) { message, tenant in try await service.reuseAccepted(message, tenant: tenant) }
        }
        try registerInviter(with: &router)
        for type in OutOfBandMessages.problemReportTypes {
            try router.registerInbound(type) { message, tenant in try await service.problemReport(message, tenant: tenant) }
        }
    }
}
