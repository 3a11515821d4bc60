import AerieCore
import AerieCrypto
import Foundation

/// `credentials.*`: the holder side of issue-credential 2.0 (Aries RFC 0453) with JSON-LD
/// credentials (RFC 0593), and the tenant's credential store (`CredentialRepository`). Offers
/// arrive from a connection's peer or attached to an out-of-band invitation
/// (`AttachedRequestHandler`); credentials are verified (`CredentialContent`) before they are
/// stored sealed.
public struct IssueCredentialPlugin: AeriePlugin, AttachedRequestHandler {
    public static let name = "issue-credential"
    public static var storage: PluginStorage { IssueCredentialSchema.storage }
    /// The event kind of exchange state changes (`IssueCredentialSchema`'s trigger).
    static let eventKind = "issue-credential"

    public let service: IssueCredentialService

    public init(sender: any ConnectionSender, limits: OpenExchangeLimits = .default) {
        service = IssueCredentialService(sender: sender, limits: limits)
    }

    public func register(presenters: inout EventPresenterRegistry) throws {
        try presenters.presentEvents(ofKind: Self.eventKind) { data in
            guard let exchangeId = data["exchangeId"]?.stringValue, let state = data["state"]?.stringValue else { return nil }
            let text = { (name: String) in data[name]?.stringValue.map(JSONValue.string) ?? .null }
            return EventPresentation(
                pushMethod: "credentials.stateChanged",
                fields: [
                    "exchangeId": .string(exchangeId), "state": .string(state), "connectionId": text("connectionId"),
                    "credentialId": text("credentialId"),
                ])
        }
    }

    public func register(with router: inout MethodRouter) throws {
        let service = self.service
        try router.register(
            "credentials.exchanges",
            summary: "The tenant's issue-credential exchanges (as holder), oldest first: {exchanges: [{exchangeId, state, connectionId, "
                + "threadId, offer, request, holderDid, credentialId, problem, ...}], nextCursor}."
        ) { (params: ExchangesParams, tenant: TenantContext) -> JSONValue in
            let (state, after, limit) = try params.validated()
            let page = try await tenant.database.read { try $0.credentialExchanges.list(state: state, after: after, limit: limit) }
            return ExchangeInput.page("exchanges", page.map(\.view), lastId: page.last?.id, limit: limit)
        }
        try router.register("credentials.exchange", summary: "One issue-credential exchange, as credentials.exchanges shows it.") {
            (params: ExchangeParams, tenant: TenantContext) -> JSONValue in
            try await service.load(try params.id(), tenant: tenant).view
        }
        try router.register(
            "credentials.accept",
            summary: "Requests the offered credential (request-credential), its credentialSubject.id bound to the did:key the "
                + "tenant's proposal named, else to a new did:key of the tenant; the exchange becomes request-sent. When the issuer's credential arrives it is verified, checked against "
                + "the request, stored and acknowledged (credential-received, then done)."
        ) { (params: OfferParams, tenant: TenantContext) -> JSONValue in
            try await service.accept(try params.id(), tenant: tenant).view
        }
        try router.register(
            "credentials.decline",
            summary: "Declines an offer (or gives up a proposal) with a problem report to the issuer; the exchange becomes abandoned."
        ) { (params: OfferParams, tenant: TenantContext) -> JSONValue in
            try await service.decline(try params.id(), reason: try params.validatedReason(), tenant: tenant).view
        }
        try router.register(
            "credentials.propose",
            summary: "Proposes a credential to an issuer over an established connection (propose-credential with an RFC 0593 "
                + "detail; without credentialSubject.id, bound to a new did:key of the tenant, its holderDid); the exchange "
                + "starts in proposal-sent and moves to offer-received when the issuer offers."
        ) { (params: ProposeParams, tenant: TenantContext) -> JSONValue in
            let (connection, detail, comment) = try params.validated()
            return try await service.propose(detail, comment: comment, on: connection, tenant: tenant).view
        }
        try router.register(
            "credentials.list",
            summary: "The tenant's stored credentials, oldest first, filtered by types and issuer: {credentials: [{credentialId, "
                + "credential, issuer, types, subjectId, issuanceDate, expirationDate, connectionId, exchangeId, createdAt}], nextCursor}."
        ) { (params: ListParams, tenant: TenantContext) -> JSONValue in
            let (filter, after, limit) = try params.validated()
            let page = try await tenant.database.read { try $0.credentials.list(filter, after: after, limit: limit) }
            return ExchangeInput.page("credentials", page.map(\.view), lastId: page.last?.id, limit: limit)
        }
        try router.register("credentials.get", summary: "One stored credential, as credentials.list shows it.") {
            (params: CredentialParams, tenant: TenantContext) -> JSONValue in
            let id = try params.id()
            guard let credential = try await tenant.database.read({ try $0.credentials.get(id) }) else {
                throw AerieError.notFound("no credential \(id.lowercasedString)")
            }
            return credential.view
        }
        try router.register("credentials.delete", summary: "Deletes a stored credential: {deleted: true|false}.") {
            (params: CredentialParams, tenant: TenantContext) -> JSONValue in
            let id = try params.id()
            return ["deleted": .bool(try await tenant.database.transaction { try $0.credentials.delete(id) })]
        }
        try router.registerInbound(IssueCredentialMessages.offerType) { message, tenant in
            try await service.receiveOffer(message, tenant: tenant)
        }
        try router.registerInbound(IssueCredentialMessages.issueType) { message, tenant in
            try await service.receiveCredential(message, tenant: tenant)
        }
        try router.registerInbound(IssueCredentialMessages.problemReportType) { message, tenant in
            try await service.receiveProblemReport(message, tenant: tenant)
        }
    }

    // MARK: - AttachedRequestHandler

    public var attachedRequestTypes: Set<String> { [IssueCredentialMessages.offerType] }

    public func checkAttached(_ message: JSONValue) throws {
        do {
            _ = try IssueCredentialMessages.readOffer(message)
        } catch let error as AerieError {
            throw AerieError(.invalidInvitation, "the attached credential offer is refused: \(error.message)", field: "requests~attach")
        }
    }

    public func receiveAttached(_ message: JSONValue, invitationId: String, on connection: ConnectionRecord, in tx: any TenantTransaction)
        throws
    {
        var offer = try IssueCredentialMessages.readOffer(message)
        if offer.parentThreadId == nil { offer.parentThreadId = invitationId }
        try IssueCredentialService.recordOffer(offer, on: connection.id, limits: service.limits, in: tx)
    }
}
