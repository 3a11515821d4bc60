import AerieCore
import Foundation

/// `credentials.accept` and `credentials.decline`: the offer, by its exchange id.
struct OfferParams: Decodable, Sendable, DocumentedParams {
    var offerId: String
    var reason: String?

    static let documentation = [
        ParamDoc("offerId", "string", "the exchangeId of an exchange in state offer-received"),
        ParamDoc("reason", "string", required: false, "credentials.decline only: the problem report's description (at most 1 KiB)"),
    ]

    func id() throws -> UUID { try ExchangeInput.uuid(offerId, field: "offerId") }

    func validatedReason() throws -> String? { try ExchangeInput.reason(reason) }
}

/// `credentials.propose`.
struct ProposeParams: Decodable, Sendable, DocumentedParams {
    var connectionId: String
    var detail: JSONValue
    var comment: String?

    static let documentation = [
        ParamDoc("connectionId", "string", "an established connection to the issuer"),
        ParamDoc(
            "detail", "object",
            "RFC 0593 credential detail: {credential: <JSON-LD credential without proof>, options: {proofType: Ed25519Signature2018|Ed25519Signature2020}}"
        ),
        ParamDoc("comment", "string", required: false, "a comment for the issuer (at most 1 KiB)"),
    ]

    func validated() throws -> (connection: UUID, detail: IssueCredentialMessages.CredentialDetail, comment: String?) {
        let connection = try ExchangeInput.uuid(connectionId, field: "connectionId")
        guard detail.serialized().count <= IssueCredentialMessages.maxAttachmentBytes else {
            throw AerieError.invalidParams("detail is larger than \(IssueCredentialMessages.maxAttachmentBytes / 1024) KiB", field: "detail")
        }
        let read: IssueCredentialMessages.CredentialDetail
        do {
            read = try IssueCredentialMessages.CredentialDetail.read(detail, field: "detail")
        } catch let error as AerieError {
            throw AerieError.invalidParams(error.message, field: error.field ?? "detail")
        }
        if let comment, let violation = PeerFieldLimits.text.violation(comment, name: "comment") {
            throw AerieError.invalidParams(violation, field: "comment")
        }
        return (connection, read, comment)
    }
}

/// `credentials.exchanges`.
struct ExchangesParams: Decodable, Sendable, DocumentedParams {
    var state: String?
    var after: String?
    var limit: Int?

    static let documentation = [
        ParamDoc(
            "state", "string", required: false,
            "only exchanges in this state: proposal-sent, offer-received, request-sent, credential-received, done, abandoned"),
        ParamDoc("after", "string", required: false, "the nextCursor of the previous page"),
        ParamDoc("limit", "integer", required: false, "at most this many, 1...500 (default 100)"),
    ]

    func validated() throws -> (state: CredentialExchange.State?, after: UUID?, limit: Int) {
        (
            try ExchangeInput.state(state, CredentialExchange.State.self), try after.map { try ExchangeInput.uuid($0, field: "after") },
            try ExchangeInput.pageLimit(limit)
        )
    }
}

/// `credentials.exchange`.
struct ExchangeParams: Decodable, Sendable, DocumentedParams {
    var exchangeId: String
    static let documentation = [ParamDoc("exchangeId", "string", "the exchange")]
    func id() throws -> UUID { try ExchangeInput.uuid(exchangeId, field: "exchangeId") }
}

/// `credentials.get` and `credentials.delete`.
struct CredentialParams: Decodable, Sendable, DocumentedParams {
    var credentialId: String
    static let documentation = [ParamDoc("credentialId", "string", "a stored credential")]
    func id() throws -> UUID { try ExchangeInput.uuid(credentialId, field: "credentialId") }
}

/// `credentials.list`.
struct ListParams: Decodable, Sendable, DocumentedParams {
    static let maxTypes = 16

    var types: [String]?
    var issuer: String?
    var after: String?
    var limit: Int?

    static let documentation = [
        ParamDoc("types", "string[]", required: false, "only credentials whose type lists all of these (at most 16)"),
        ParamDoc("issuer", "string", required: false, "only credentials of this issuer DID"),
        ParamDoc("after", "string", required: false, "the nextCursor of the previous page"),
        ParamDoc("limit", "integer", required: false, "at most this many, 1...500 (default 100)"),
    ]

    func validated() throws -> (filter: CredentialFilter, after: UUID?, limit: Int) {
        let types = types ?? []
        guard types.count <= Self.maxTypes, types.allSatisfy({ PeerFieldLimits.url.violation($0, name: "") == nil && !$0.isEmpty }) else {
            throw AerieError.invalidParams("types must be at most \(Self.maxTypes) type names", field: "types")
        }
        if let issuer, PeerFieldLimits.did.violation(issuer, name: "") != nil || issuer.isEmpty {
            throw AerieError.invalidParams("issuer must be a DID", field: "issuer")
        }
        return (CredentialFilter(types: types, issuer: issuer), try after.map { try ExchangeInput.uuid($0, field: "after") }, try ExchangeInput.pageLimit(limit))
    }
}

/// How a stored credential is shown.
extension StoredCredential {
    var view: JSONValue {
        [
            "credentialId": .string(id.lowercasedString), "credential": credential, "issuer": .string(issuer),
            "types": .array(types.map(JSONValue.string)), "subjectId": .optional(subjectId),
            "issuanceDate": .optional(issuanceDate?.iso8601Text), "expirationDate": .optional(expirationDate?.iso8601Text),
            "connectionId": .optional(connectionId?.lowercasedString), "exchangeId": .optional(exchangeId?.lowercasedString),
            "createdAt": .string(createdAt.iso8601Text),
        ]
    }
}
