import AerieCore
import Foundation

/// `proofs.get`, `proofs.match`, `proofs.decline`: one proof request by its id.
struct RequestParams: Decodable, Sendable, DocumentedParams {
    var requestId: String
    var reason: String?

    static let documentation = [
        ParamDoc("requestId", "string", "the requestId of a received proof request"),
        ParamDoc("reason", "string", required: false, "proofs.decline only: the problem report's description (at most 1 KiB)"),
    ]

    func id() throws -> UUID { try ExchangeInput.uuid(requestId, field: "requestId") }

    func validatedReason() throws -> String? { try ExchangeInput.reason(reason) }
}

/// `proofs.present`.
struct PresentParams: Decodable, Sendable, DocumentedParams {
    var requestId: String
    var selection: [String: String]?

    static let documentation = [
        ParamDoc("requestId", "string", "the requestId of a proof request in state request-received"),
        ParamDoc(
            "selection", "object", required: false,
            "{<input descriptor id>: <credentialId>}: which matching credential answers a descriptor (default: the oldest match)"),
    ]

    func validated() throws -> (id: UUID, selection: [String: UUID]) {
        let id = try ExchangeInput.uuid(requestId, field: "requestId")
        let pairs = selection ?? [:]
        guard pairs.count <= PresentationDefinition.maxDescriptors else {
            throw AerieError.invalidParams("selection names more descriptors than a request may have", field: "selection")
        }
        var chosen: [String: UUID] = [:]
        for (descriptor, credential) in pairs { chosen[descriptor] = try ExchangeInput.uuid(credential, field: "selection.\(descriptor.prefix(64))") }
        return (id, chosen)
    }
}

/// `proofs.list`.
struct ListParams: Decodable, Sendable, DocumentedParams {
    var state: String?
    var after: String?
    var limit: Int?

    static let documentation = [
        ParamDoc("state", "string", required: false, "only requests in this state: request-received, presentation-sent, done, abandoned"),
        ParamDoc("after", "string", required: false, "the nextCursor of the previous page"),
        ParamDoc("limit", "integer", required: false, "at most this many, 1...500 (default 100)"),
    ]

    func validated() throws -> (state: ProofExchange.State?, after: UUID?, limit: Int) {
        (
            try ExchangeInput.state(state, ProofExchange.State.self), try after.map { try ExchangeInput.uuid($0, field: "after") },
            try ExchangeInput.pageLimit(limit)
        )
    }
}
