import AerieCore
import AerieCrypto
import Foundation

/// The prover side of present-proof 2.0: the driver around `ProofExchange`'s state rules. Every
/// state change is written in the transaction that records the message causing it (an inbound
/// one claimed with `InboundReceipt`, an outbound one queued with the `ConnectionSender`), so a crash
/// leaves either both or neither.
struct PresentProofService: Sendable {
    /// Sends over the tenant's connections (the server's `ConnectionSender`).
    let sender: any ConnectionSender
    /// How many requests a peer may hold open (`AERIE_OPEN_EXCHANGES_*`).
    var limits: OpenExchangeLimits = .default

    static let exchangeProtocol = PresentProofMessages.exchangeProtocol

    /// The most held credentials one match looks at (oldest first).
    static let maxCandidates = 1000
    static let credentialPage = 200

    // MARK: - Inbound

    /// A verifier's request from the connection's peer: a new exchange in `request-received`;
    /// a malformed or unsupported one, or one past the open exchanges' limits, is answered with a
    /// problem report at once and nothing of it is stored but the message.
    func receiveRequest(_ inbound: InboundMessage, tenant: TenantContext) async throws {
        let connection = try Self.exchangeProtocol.peerConnection(inbound)
        // Not a DIF request: the inbound pipeline stores it in the mailbox for the application.
        guard PresentProofMessages.isDIF(inbound.body) else { return }
        let limits = self.limits
        try await Self.exchangeProtocol.receive(
            inbound, connection: connection, tenant: tenant, sender: sender, read: PresentProofMessages.readRequest
        ) { request, tx in
            try Self.recordRequest(request, on: connection.id, limits: limits, in: tx)
        }
    }

    /// Stores `request` as a new exchange, within `limits`; a second request on a thread already
    /// known is refused.
    static func recordRequest(
        _ request: PresentProofMessages.Request, on connectionId: UUID, parentThreadId: String? = nil, limits: OpenExchangeLimits,
        in tx: any TenantTransaction
    ) throws {
        let exchanges = try tx.proofExchanges
        if let existing = try exchanges.find(threadId: request.threadId, connectionId: connectionId, forUpdate: true) {
            _ = try ProofExchange.next(existing.state, on: .requestReceived)
        }
        try exchanges.checkRoom(connectionId: connectionId, limits: limits)
        try exchanges.insert(
            ProofExchange(
                connectionId: connectionId, request: request, parentThreadId: parentThreadId,
                state: try ProofExchange.next(nil, on: .requestReceived)))
    }

    /// The verifier's ack: the exchange is done.
    func receiveAck(_ inbound: InboundMessage, tenant: TenantContext) async throws {
        let connection = try Self.exchangeProtocol.peerConnection(inbound)
        guard let thread = try ExchangeProtocol.threadIds(of: inbound.body).thid else {
            throw ExchangeProtocol.malformed("the ack names no thread", field: "~thread.thid")
        }
        try await tenant.database.transaction { tx in
            if let receipt = inbound.receipt, try !receipt.claim(in: tx, connection: connection.id) { return }
            let exchanges = try tx.proofExchanges
            guard var exchange = try exchanges.find(threadId: thread, connectionId: connection.id, forUpdate: true) else {
                throw AerieError.notFound("no proof request of this connection has the thread of this ack")
            }
            try exchange.apply(.ackReceived)
            try exchanges.update(exchange)
        }
    }

    /// The verifier's problem report (a presentation it refused): the exchange is abandoned with
    /// what it says.
    func receiveProblemReport(_ inbound: InboundMessage, tenant: TenantContext) async throws {
        let connection = try Self.exchangeProtocol.peerConnection(inbound)
        let report = try PresentProofMessages.readProblemReport(inbound.body)
        try await tenant.database.transaction { tx in
            if let receipt = inbound.receipt, try !receipt.claim(in: tx, connection: connection.id) { return }
            let exchanges = try tx.proofExchanges
            guard var exchange = try exchanges.find(threadId: report.threadId, connectionId: connection.id, forUpdate: true) else {
                throw AerieError.notFound("no proof request of this connection has the thread of this problem report")
            }
            try exchange.apply(.problemReport)
            exchange.problem = "the verifier reported: " + [report.code, report.description].filter { !$0.isEmpty }.joined(separator: ": ")
            try exchanges.update(exchange)
        }
    }

    // MARK: - The tenant's calls

    /// Which held credentials satisfy each input descriptor of the request.
    func match(_ requestId: UUID, selection: [String: UUID] = [:], tenant: TenantContext) async throws
        -> (exchange: ProofExchange, definition: PresentationDefinition, match: PresentationMatcher.Match, candidates: [PresentationMatcher.Candidate])
    {
        let exchange = try await load(requestId, tenant: tenant)
        let definition = try PresentationDefinition(parsing: exchange.definition)
        let held = try await tenant.database.read { tx in try Self.heldCredentials(in: tx) }
        let needsTypes = definition.descriptors.contains { !$0.schemaGroups.isEmpty }
        let candidates = held.map {
            PresentationMatcher.Candidate(
                id: $0.id, credential: $0.credential, expandedTypes: needsTypes ? Self.expandedTypes($0.credential) : [])
        }
        return (exchange, definition, try PresentationMatcher.match(definition, candidates: candidates, selection: selection), candidates)
    }

    /// Builds, signs and sends the presentation; a request the held credentials cannot answer is
    /// answered with a problem report instead (the exchange abandoned, its problem saying why).
    func present(_ requestId: UUID, selection: [String: UUID], tenant: TenantContext) async throws -> ProofExchange {
        let (exchange, definition, match, candidates) = try await match(requestId, selection: selection, tenant: tenant)
        _ = try ProofExchange.next(exchange.state, on: .presentationSent)
        guard let connectionId = exchange.connectionId else { throw AerieError(.conflict, "the proof request has no connection") }
        guard let chosen = match.chosen else {
            let unmet = match.descriptors.first { $0.unmetReason != nil }
            let reason = [match.unmetReason, unmet.map { "'\($0.id)': \($0.unmetReason ?? "")" }].compactMap { $0 }.joined(separator: "; ")
            return try await abandon(exchange, code: "presentation-abandoned", reason: "no presentation: " + reason, tenant: tenant)
        }
        let (submission, order) = PresentationMatcher.submission(
            definitionId: definition.id, chosen: chosen, submissionId: UUID.random().lowercasedString)
        let byId = Dictionary(uniqueKeysWithValues: candidates.map { ($0.id, $0.credential) })
        let credentials = order.compactMap { byId[$0] }
        let holder = try Self.holder(of: credentials)
        let unsigned = VerifiablePresentation.make(credentials: credentials, holder: holder, submission: submission)
        let signed = try await AerieError.mappingCrypto {
            try await tenant.keys.signLinkedData(
                unsigned, suite: exchange.suite, did: holder, purpose: .authentication(challenge: exchange.challenge, domain: exchange.domain))
        }
        let message = PresentProofMessages.presentation(signed, threadId: exchange.threadId, parentThreadId: exchange.parentThreadId)
        let presented = Dictionary(chosen.map { ($0.descriptorId, $0.credentialId) }) { first, _ in first }
        _ = try await sender.send(message, on: connectionId, tenant: tenant) { _, tx in
            let exchanges = try tx.proofExchanges
            guard var current = try exchanges.get(requestId, forUpdate: true) else { throw Self.noExchange(requestId) }
            try current.apply(.presentationSent)
            current.presented = presented
            current.holderDid = holder
            try exchanges.update(current)
            return true
        }
        return try await load(requestId, tenant: tenant)
    }

    /// Refuses the request with a problem report; the exchange becomes abandoned.
    func decline(_ requestId: UUID, reason: String?, tenant: TenantContext) async throws -> ProofExchange {
        let exchange = try await load(requestId, tenant: tenant)
        guard exchange.state == .requestReceived else {
            throw AerieError(.conflict, "the proof request is \(exchange.state.rawValue): only a received request can be declined")
        }
        return try await abandon(exchange, code: "presentation-abandoned", reason: reason ?? "the prover declined the request", tenant: tenant)
    }

    func load(_ id: UUID, tenant: TenantContext) async throws -> ProofExchange {
        guard let exchange = try await tenant.database.read({ try $0.proofExchanges.get(id, forUpdate: false) }) else {
            throw Self.noExchange(id)
        }
        return exchange
    }

    // MARK: - Pieces

    /// The tenant's credentials, oldest first, at most `maxCandidates`.
    static func heldCredentials(in tx: any TenantTransaction) throws -> [StoredCredential] {
        let store = try tx.credentials
        var held: [StoredCredential] = []
        var after: UUID?
        while held.count < maxCandidates {
            let page = try store.list(.all, after: after, limit: min(credentialPage, maxCandidates - held.count))
            held += page
            guard page.count == credentialPage, let last = page.last else { break }
            after = last.id
        }
        return held
    }

    /// The credential's `@type`s as IRIs (JSON-LD expansion with the bundled contexts); none
    /// when it does not expand, so schema URIs match only its `credentialSchema`.
    static func expandedTypes(_ credential: JSONValue) -> [String] {
        guard case .array(let nodes)? = try? JSONLD.expand(credential), case .array(let types)? = nodes.first?["@type"] else {
            return []
        }
        return types.compactMap(\.stringValue)
    }

    /// The did:key every presented credential's subject is bound to: the holder that signs.
    static func holder(of credentials: [JSONValue]) throws -> String {
        let subjects = Set(credentials.map { PresentationMatcher.subjectIds($0).first { $0.hasPrefix("did:key:") } })
        guard subjects.count == 1, let only = subjects.first, let holder = only else {
            throw AerieError(
                .conflict,
                subjects.contains(nil)
                    ? "a chosen credential is not bound to a did:key of the tenant (credentialSubject.id), so no holder can sign"
                    : "the chosen credentials are bound to different holders; choose credentials of one holder (selection)")
        }
        return holder
    }

    /// Sends a problem report on the exchange's thread and abandons it, in one transaction.
    private func abandon(_ exchange: ProofExchange, code: String, reason: String, tenant: TenantContext) async throws -> ProofExchange {
        guard let connectionId = exchange.connectionId else { throw AerieError(.conflict, "the proof request has no connection") }
        let message = PresentProofMessages.problemReport(threadId: exchange.threadId, code: code, description: reason)
        _ = try await sender.send(message, on: connectionId, tenant: tenant) { _, tx in
            let exchanges = try tx.proofExchanges
            guard var current = try exchanges.get(exchange.id, forUpdate: true) else { throw Self.noExchange(exchange.id) }
            try current.apply(.problemReport)
            current.problem = reason
            try exchanges.update(current)
            return true
        }
        return try await load(exchange.id, tenant: tenant)
    }

    static func noExchange(_ id: UUID) -> AerieError {
        AerieError.notFound("no proof request \(id.lowercasedString)")
    }
}
