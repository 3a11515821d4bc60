import AerieCore
import Foundation

struct InvitationParams: Decodable, Sendable, DocumentedParams {
    var invitation: JSONValue?
    var url: String?
    static let documentation = [
        ParamDoc(
            "invitation", "object|string", required: false,
            "the out-of-band invitation: JSON object, JSON text or invitation URL (one of invitation, url)"),
        ParamDoc("url", "string", required: false, "an invitation URL (?oob=) or a short URL"),
    ]
}

struct AcceptParams: Decodable, Sendable, DocumentedParams {
    var invitation: JSONValue?
    var url: String?
    var label: String?
    var didMethod: String?
    var wait: Bool?
    var timeoutSeconds: Int?
    static let documentation = InvitationParams.documentation + [
        ParamDoc("label", "string", required: false, "the label the inviter sees in a handshake request"),
        .didMethod,
        ParamDoc(
            "wait", "boolean", required: false,
            "wait until the handshake completes or the reuse is accepted (default true); false answers at once"),
        ParamDoc("timeoutSeconds", "integer", required: false, "how long to wait, 1...120 (server default 15); then timeout"),
    ]

    func timeout() throws -> Duration? { try Self.timeout(timeoutSeconds) }

    static func timeout(_ seconds: Int?) throws -> Duration? {
        guard let seconds else { return nil }
        guard OutOfBandService.timeoutRange.contains(seconds) else {
            throw AerieError.invalidParams("timeoutSeconds must be 1...120", field: "timeoutSeconds")
        }
        return .seconds(seconds)
    }
}

struct SendReuseParams: Decodable, Sendable, DocumentedParams {
    var connectionId: String
    var invitation: JSONValue?
    var url: String?
    var wait: Bool?
    var timeoutSeconds: Int?
    static let documentation = [ParamDoc("connectionId", "string", "the existing connection to reuse")]
        + InvitationParams.documentation + [
            ParamDoc("wait", "boolean", required: false, "wait for handshake-reuse-accepted (default true)"),
            ParamDoc("timeoutSeconds", "integer", required: false, "how long to wait, 1...120 (server default 15); then timeout"),
        ]

    func id() throws -> UUID {
        guard let id = UUID(text: connectionId) else {
            throw AerieError.invalidParams("connectionId must be a connection id (UUID)", field: "connectionId")
        }
        return id
    }

    func timeout() throws -> Duration? { try AcceptParams.timeout(timeoutSeconds) }
}

/// What `outOfBand.accept` and `sendReuse` answer.
struct OutOfBandResult: Encodable, Sendable {
    /// The decision-table row taken (seed 004), 1...8; nil for an invitation already used by
    /// `connections.*` before.
    var row: Int?
    var action: String?
    /// The same invitation (`@id`) was accepted before: nothing was sent or created now.
    var sameInvitation: Bool
    var invitationId: String
    /// `connecting`, `reuse-sent`, `reused`, `done`, `failed`.
    var state: String?
    /// How the existing connection matched the invitation (`id`, `publicDid`, `recipientKey`).
    var match: String?
    var connection: ConnectionView?
    var attachedMessage: JSONValue?
    /// The attached message's uid in the tenant's mailbox.
    var attachedMessageUid: String?
    var failureReason: String?

    init(_ outcome: OutOfBandService.Outcome, invitation: Invitation) {
        row = outcome.row?.number
        action = outcome.row?.decision.name
        sameInvitation = outcome.sameInvitation
        invitationId = invitation.id
        state = outcome.record?.state.rawValue
        match = outcome.match?.rawValue
        connection = outcome.connection.map(ConnectionView.init)
        attachedMessage = outcome.attachedMessage
        attachedMessageUid = outcome.record?.attachedMessageUid?.lowercasedString
        failureReason = outcome.record?.failureReason
    }
}

struct ExtractedAttachment: Encodable, Sendable {
    /// The first attachment's message, decoded; null when the invitation carries none.
    var attachedMessage: JSONValue?
    var attachmentCount: Int
}
