import AerieCore
import AerieCrypto
import Foundation

/// `proofs.*`: the prover side of present-proof 2.0 (Aries RFC 0454) with DIF Presentation
/// Exchange (RFC 0510) over the tenant's JSON-LD credentials (`CredentialRepository`). Requests
/// arrive from a connection's peer; `proofs.match` shows which credentials answer them and
/// `proofs.present` signs a Verifiable Presentation as the credentials' holder did:key.
public struct PresentProofPlugin: AeriePlugin {
    public static let name = "present-proof"
    public static var storage: PluginStorage { PresentProofSchema.storage }
    /// The event kind of exchange state changes (`PresentProofSchema`'s trigger).
    static let eventKind = "present-proof"

    let service: PresentProofService

    public init(sender: any ConnectionSender, limits: OpenExchangeLimits = .default) {
        service = PresentProofService(sender: sender, limits: limits)
    }

    public func register(presenters: inout EventPresenterRegistry) throws {
        try presenters.presentEvents(ofKind: Self.eventKind) { data in
            guard let requestId = data["requestId"]?.stringValue, let state = data["state"]?.stringValue else { return nil }
            return EventPresentation(
                pushMethod: "proofs.stateChanged",
                fields: [
                    "requestId": .string(requestId), "state": .string(state),
                    "connectionId": data["connectionId"]?.stringValue.map(JSONValue.string) ?? .null,
                ])
        }
    }

    public func register(with router: inout MethodRouter) throws {
        let service = self.service
        try router.register(
            "proofs.list",
            summary: "The proof requests the tenant received (as prover), oldest first: {requests: [{requestId, state, connectionId, "
                + "threadId, presentationDefinition, challenge, domain, proofType, presented, holderDid, problem, ...}], nextCursor}."
        ) { (params: ListParams, tenant: TenantContext) -> JSONValue in
            let (state, after, limit) = try params.validated()
            let page = try await tenant.database.read { try $0.proofExchanges.list(state: state, after: after, limit: limit) }
            return ExchangeInput.page("requests", page.map(\.view), lastId: page.last?.id, limit: limit)
        }
        try router.register("proofs.get", summary: "One proof request, as proofs.list shows it.") {
            (params: RequestParams, tenant: TenantContext) -> JSONValue in
            try await service.load(try params.id(), tenant: tenant).view
        }
        try router.register(
            "proofs.match",
            summary: "Which held credentials satisfy each input descriptor of a proof request: {requestId, satisfiable, unmetReason, "
                + "descriptors: [{id, credentialIds, unmetReason, rejected: [{credentialId, reason}]}], chosen: [{descriptorId, "
                + "credentialId}]}. A descriptor with limit_disclosure 'required' is never met (it needs BBS+)."
        ) { (params: RequestParams, tenant: TenantContext) -> JSONValue in
            let id = try params.id()
            return Self.view(try await service.match(id, tenant: tenant).match, requestId: id)
        }
        try router.register(
            "proofs.present",
            summary: "Answers a proof request: a Verifiable Presentation of the chosen credentials with its presentation_submission, "
                + "signed (Ed25519Signature2018 or 2020 as the request asks, with its challenge and domain) by the did:key the "
                + "credentials are bound to, sent as presentation; the request becomes presentation-sent, then done on the verifier's "
                + "ack. A request the held credentials cannot answer is answered with a problem report instead (abandoned, problem "
                + "says why)."
        ) { (params: PresentParams, tenant: TenantContext) -> JSONValue in
            let (id, selection) = try params.validated()
            return try await service.present(id, selection: selection, tenant: tenant).view
        }
        try router.register(
            "proofs.decline",
            summary: "Declines a received proof request with a problem report to the verifier; the request becomes abandoned."
        ) { (params: RequestParams, tenant: TenantContext) -> JSONValue in
            try await service.decline(try params.id(), reason: try params.validatedReason(), tenant: tenant).view
        }
        try router.registerInbound(PresentProofMessages.requestType) { message, tenant in
            try await service.receiveRequest(message, tenant: tenant)
        }
        try router.registerInbound(PresentProofMessages.ackType) { message, tenant in
            try await service.receiveAck(message, tenant: tenant)
        }
        try router.registerInbound(PresentProofMessages.problemReportType) { message, tenant in
            try await service.receiveProblemReport(message, tenant: tenant)
        }
    }

    static func view(_ match: PresentationMatcher.Match, requestId: UUID) -> JSONValue {
        [
            "requestId": .string(requestId.lowercasedString), "satisfiable": .bool(match.chosen != nil),
            "unmetReason": .optional(match.unmetReason),
            "descriptors": .array(
                match.descriptors.map { result in
                    [
                        "id": .string(result.id), "credentialIds": .array(result.matches.map { .string($0.lowercasedString) }),
                        "unmetReason": .optional(result.unmetReason),
                        "rejected": .array(
                            result.rejections.map {
                                ["credentialId": .string($0.credentialId.lowercasedString), "reason": .string($0.reason)]
                            }),
                    ]
                }),
            "chosen": .array(
                (match.chosen ?? []).map {
                    ["descriptorId": .string($0.descriptorId), "credentialId": .string($0.credentialId.lowercasedString)]
                }),
        ]
    }
}

/// A proof request attached to an out-of-band invitation (seed 004): checked before anything is
/// stored, then recorded on the invitation's connection in the out-of-band plugin's transaction.
extension PresentProofPlugin: AttachedRequestHandler {
    public var attachedRequestTypes: Set<String> { [PresentProofMessages.requestType] }

    /// A request in another format (Indy) is left in the mailbox, as before this plugin.
    public func checkAttached(_ message: JSONValue) throws {
        guard PresentProofMessages.isDIF(message) else { return }
        do {
            _ = try PresentProofMessages.readRequest(message)
        } catch let error as AerieError {
            throw AerieError(.invalidInvitation, "the attached proof request is refused: \(error.message)", field: "requests~attach")
        }
    }

    public func receiveAttached(_ message: JSONValue, invitationId: String, on connection: ConnectionRecord, in tx: any TenantTransaction)
        throws
    {
        guard PresentProofMessages.isDIF(message) else { return }
        let request = try PresentProofMessages.readRequest(message)
        try PresentProofService.recordRequest(request, on: connection.id, parentThreadId: invitationId, limits: service.limits, in: tx)
    }
}
