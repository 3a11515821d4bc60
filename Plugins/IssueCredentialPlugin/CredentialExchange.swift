import AerieCore
import Foundation

/// One issue-credential 2.0 exchange of the tenant as holder (RFC 0453): its thread, connection,
/// state, what was offered and requested, and where it ended.
public struct CredentialExchange: Sendable, Hashable {
    /// RFC 0453's holder states.
    public enum State: String, Sendable, Hashable, Codable, CaseIterable {
        case proposalSent = "proposal-sent"
        case offerReceived = "offer-received"
        case requestSent = "request-sent"
        case credentialReceived = "credential-received"
        case done
        case abandoned

        public var isFinal: Bool { self == .done || self == .abandoned }
    }

    /// What happens to an exchange: a message received or sent, or a call of the tenant.
    public enum Event: Sendable, Hashable {
        case proposalSent
        case offerReceived
        case requestSent
        case credentialReceived
        case ackSent
        /// A problem report, received or sent (decline).
        case problemReport
    }

    /// The state after `event`, or `conflict` naming the state when the event does not apply
    /// (RFC 0453's holder transitions; a counter-offer may follow a proposal or a request).
    public static func next(_ state: State?, on event: Event) throws -> State {
        switch (state, event) {
        case (nil, .proposalSent): return .proposalSent
        case (nil, .offerReceived), (.proposalSent?, .offerReceived), (.requestSent?, .offerReceived): return .offerReceived
        case (.offerReceived?, .requestSent): return .requestSent
        case (.requestSent?, .credentialReceived): return .credentialReceived
        case (.credentialReceived?, .ackSent): return .done
        case (let current?, .problemReport) where !current.isFinal: return .abandoned
        default:
            throw AerieError(
                .conflict, "the exchange is \(state?.rawValue ?? "unknown"): \(event) does not apply",
                data: ["state": state.map { .string($0.rawValue) } ?? .null])
        }
    }

    public var id: UUID
    public var connectionId: UUID?
    /// The thread (`~thread.thid`) of every message of the exchange.
    public var threadId: String
    /// The out-of-band invitation the offer came in (`~thread.pthid`).
    public var parentThreadId: String?
    public var state: State
    public var comment: String?
    /// The offered (or proposed) credential detail.
    public var offer: IssueCredentialMessages.CredentialDetail?
    /// The requested detail, bound to `holderDid`.
    public var request: IssueCredentialMessages.CredentialDetail?
    /// The tenant's did:key the credential is bound to.
    public var holderDid: String?
    /// The stored credential, once received and verified.
    public var credentialId: UUID?
    /// Why it was abandoned: the problem report received or sent.
    public var problem: String?
    public var createdAt: Date
    public var updatedAt: Date

    public init(
        id: UUID = UUID.random(), connectionId: UUID?, threadId: String, parentThreadId: String? = nil, state: State,
        comment: String? = nil, offer: IssueCredentialMessages.CredentialDetail? = nil,
        request: IssueCredentialMessages.CredentialDetail? = nil, holderDid: String? = nil, credentialId: UUID? = nil,
        problem: String? = nil, createdAt: Date = Date(), updatedAt: Date = Date()
    ) {
        self.id = id
        self.connectionId = connectionId
        self.threadId = threadId
        self.parentThreadId = parentThreadId
        self.state = state
        self.comment = comment
        self.offer = offer
        self.request = request
        self.holderDid = holderDid
        self.credentialId = credentialId
        self.problem = problem
        self.createdAt = createdAt
        self.updatedAt = updatedAt
    }

    /// Moves to the state after `event` (`conflict` when it does not apply).
    public mutating func apply(_ event: Event) throws {
        state = try Self.next(state, on: event)
        updatedAt = Date()
    }

    /// How the exchange is shown to the tenant.
    public var view: JSONValue {
        var fields: [String: JSONValue] = [
            "exchangeId": .string(id.lowercasedString), "state": .string(state.rawValue), "threadId": .string(threadId),
            "connectionId": connectionId.map { .string($0.lowercasedString) } ?? .null,
            "createdAt": .string(createdAt.iso8601Text), "updatedAt": .string(updatedAt.iso8601Text),
        ]
        if let parentThreadId { fields["parentThreadId"] = .string(parentThreadId) }
        if let comment { fields["comment"] = .string(comment) }
        if let offer { fields["offer"] = offer.json }
        if let request { fields["request"] = request.json }
        if let holderDid { fields["holderDid"] = .string(holderDid) }
        if let credentialId { fields["credentialId"] = .string(credentialId.lowercasedString) }
        if let problem { fields["problem"] = .string(problem) }
        return .object(fields)
    }
}

/// `aerie.credential_exchanges` inside one tenant transaction (`CredentialExchangeStore`).
protocol CredentialExchangeRepository {
    func insert(_ exchange: CredentialExchange) throws
    @discardableResult
    func update(_ exchange: CredentialExchange) throws -> Bool
    func get(_ id: UUID, forUpdate: Bool) throws -> CredentialExchange?
    /// The exchange of a thread on a connection (nil connection: connectionless).
    func find(threadId: String, connectionId: UUID?, forUpdate: Bool) throws -> CredentialExchange?
    /// Oldest first after `after`, optionally only in `state`, at most `limit`.
    func list(state: CredentialExchange.State?, after: UUID?, limit: Int) throws -> [CredentialExchange]
    /// Refuses one more open exchange on the connection past `limits` (`quota_exceeded`).
    func checkRoom(connectionId: UUID, limits: OpenExchangeLimits) throws
    func delete(_ id: UUID) throws -> Bool
    func deleteAll(connectionId: UUID) throws -> Int
}

extension TenantTransaction {
    var credentialExchanges: any CredentialExchangeRepository {
        get throws { try repository(CredentialExchangeRepository.self) }
    }
}
