import AerieCore
import AerieCrypto
import Foundation

/// One present-proof 2.0 exchange of the tenant as prover (RFC 0454): the verifier's request, its
/// connection and state, what was presented and where it ended.
struct ProofExchange: Sendable {
    /// RFC 0454's prover states.
    enum State: String, Sendable, Hashable, CaseIterable {
        case requestReceived = "request-received"
        case presentationSent = "presentation-sent"
        case done
        case abandoned

        var isFinal: Bool { self == .done || self == .abandoned }
    }

    /// What happens to an exchange: a message received or sent.
    enum Event: Sendable, Hashable {
        case requestReceived
        case presentationSent
        case ackReceived
        /// A problem report, received or sent (decline, or nothing to present).
        case problemReport
    }

    /// The state after `event`, or `conflict` naming the state when the event does not apply.
    static func next(_ state: State?, on event: Event) throws -> State {
        switch (state, event) {
        case (nil, .requestReceived): return .requestReceived
        case (.requestReceived?, .presentationSent): return .presentationSent
        case (.presentationSent?, .ackReceived): return .done
        case (let current?, .problemReport) where !current.isFinal: return .abandoned
        default:
            throw AerieError(
                .conflict, "the proof request is \(state?.rawValue ?? "unknown"): \(event) does not apply",
                data: ["state": state.map { .string($0.rawValue) } ?? .null])
        }
    }

    var id: UUID
    var connectionId: UUID?
    /// The thread (`~thread.thid`) of every message of the exchange.
    var threadId: String
    /// The out-of-band invitation the request came in (`~thread.pthid`).
    var parentThreadId: String?
    var state: State
    var comment: String?
    /// The `presentation_definition` as received.
    var definition: JSONValue
    var challenge: String
    var domain: String?
    var suite: ProofSuite
    /// What was presented: descriptor id -> credential id, and the holder DID that signed.
    var presented: [String: UUID] = [:]
    var holderDid: String?
    /// Why it was abandoned: the problem report received or sent.
    var problem: String?
    var createdAt: Date = Date()
    var updatedAt: Date = Date()

    init(
        id: UUID = UUID.random(), connectionId: UUID?, request: PresentProofMessages.Request, parentThreadId: String? = nil,
        state: State
    ) {
        self.id = id
        self.connectionId = connectionId
        self.threadId = request.threadId
        self.parentThreadId = request.parentThreadId ?? parentThreadId
        self.state = state
        self.comment = request.comment
        self.definition = request.definitionJSON
        self.challenge = request.challenge
        self.domain = request.domain
        self.suite = request.suite
    }

    init(
        id: UUID, connectionId: UUID?, threadId: String, parentThreadId: String?, state: State, comment: String?, definition: JSONValue,
        challenge: String, domain: String?, suite: ProofSuite, presented: [String: UUID], holderDid: String?, problem: String?,
        createdAt: Date, updatedAt: Date
    ) {
        self.id = id
        self.connectionId = connectionId
        self.threadId = threadId
        self.parentThreadId = parentThreadId
        self.state = state
        self.comment = comment
        self.definition = definition
        self.challenge = challenge
        self.domain = domain
        self.suite = suite
        self.presented = presented
        self.holderDid = holderDid
        self.problem = problem
        self.createdAt = createdAt
        self.updatedAt = updatedAt
    }

    /// Moves to the state after `event` (`conflict` when it does not apply).
    mutating func apply(_ event: Event) throws {
        state = try Self.next(state, on: event)
        updatedAt = Date()
    }

    /// How the exchange is shown to the tenant.
    var view: JSONValue {
        var fields: [String: JSONValue] = [
            "requestId": .string(id.lowercasedString), "state": .string(state.rawValue), "threadId": .string(threadId),
            "connectionId": connectionId.map { .string($0.lowercasedString) } ?? .null, "presentationDefinition": definition,
            "challenge": .string(challenge), "proofType": .string(suite.type),
            "createdAt": .string(createdAt.iso8601Text), "updatedAt": .string(updatedAt.iso8601Text),
        ]
        if let parentThreadId { fields["parentThreadId"] = .string(parentThreadId) }
        if let comment { fields["comment"] = .string(comment) }
        if let domain { fields["domain"] = .string(domain) }
        if !presented.isEmpty {
            fields["presented"] = .array(
                presented.sorted { $0.key < $1.key }.map {
                    ["descriptorId": .string($0.key), "credentialId": .string($0.value.lowercasedString)]
                })
        }
        if let holderDid { fields["holderDid"] = .string(holderDid) }
        if let problem { fields["problem"] = .string(problem) }
        return .object(fields)
    }
}

/// `aerie.proof_exchanges` inside one tenant transaction (`ProofExchangeStore`).
protocol ProofExchangeRepository {
    func insert(_ exchange: ProofExchange) throws
    @discardableResult
    func update(_ exchange: ProofExchange) throws -> Bool
    func get(_ id: UUID, forUpdate: Bool) throws -> ProofExchange?
    /// The exchange of a thread on a connection (nil connection: connectionless).
    func find(threadId: String, connectionId: UUID?, forUpdate: Bool) throws -> ProofExchange?
    /// Oldest first after `after`, optionally only in `state`, at most `limit`.
    func list(state: ProofExchange.State?, after: UUID?, limit: Int) throws -> [ProofExchange]
    /// Refuses one more open exchange on the connection past `limits` (`quota_exceeded`).
    func checkRoom(connectionId: UUID, limits: OpenExchangeLimits) throws
    func deleteAll(connectionId: UUID) throws -> Int
}

extension TenantTransaction {
    var proofExchanges: any ProofExchangeRepository {
        get throws { try repository(ProofExchangeRepository.self) }
    }
}
