import AerieCore
import AerieCrypto
import Foundation

/// The holder side of issue-credential 2.0: the driver around `CredentialExchange`'s state rules.
/// Every state change is written in the transaction that records the message causing it (an
/// inbound one claimed with `InboundReceipt`, an outbound one queued with the `ConnectionSender`), so a
/// crash leaves either both or neither.
public struct IssueCredentialService: Sendable {
    /// Sends over the tenant's connections (the server's `ConnectionSender`).
    public let sender: any ConnectionSender
    /// How many exchanges a peer may hold open (`AERIE_OPEN_EXCHANGES_*`).
    public let limits: OpenExchangeLimits

    static let exchangeProtocol = IssueCredentialMessages.exchangeProtocol

    public init(sender: any ConnectionSender, limits: OpenExchangeLimits = .default) {
        self.sender = sender
        self.limits = limits
    }

    // MARK: - Inbound

    /// An offer from the connection's peer: a new exchange, or a counter-offer on one of ours.
    /// A malformed one, or one past the open exchanges' limits, is answered with a problem
    /// report and nothing of it is stored but the message.
    func receiveOffer(_ inbound: InboundMessage, tenant: TenantContext) async throws {
        let connection = try Self.exchangeProtocol.peerConnection(inbound)
        let limits = self.limits
        try await Self.exchangeProtocol.receive(
            inbound, connection: connection, tenant: tenant, sender: sender, read: IssueCredentialMessages.readOffer
        ) { offer, tx in
            try Self.recordOffer(offer, on: connection.id, limits: limits, in: tx)
        }
    }

    /// Stores `offer` as a new exchange (`offer-received`), within `limits`, or as the
    /// counter-offer on its thread.
    static func recordOffer(
        _ offer: IssueCredentialMessages.Offer, on connectionId: UUID, limits: OpenExchangeLimits, in tx: any TenantTransaction
    ) throws {
        let exchanges = try tx.credentialExchanges
        if var exchange = try exchanges.find(threadId: offer.threadId, connectionId: connectionId, forUpdate: true) {
            try exchange.apply(.offerReceived)
            exchange.offer = offer.detail
            exchange.comment = offer.comment
            try exchanges.update(exchange)
        } else {
            try exchanges.checkRoom(connectionId: connectionId, limits: limits)
            try exchanges.insert(
                CredentialExchange(
                    connectionId: connectionId, threadId: offer.threadId, parentThreadId: offer.parentThreadId,
                    state: try CredentialExchange.next(nil, on: .offerReceived), comment: offer.comment, offer: offer.detail))
        }
    }

    /// The credential: checked against the request and verified before anything is stored; then
    /// stored sealed, the exchange `credential-received` then `done`, and the ack queued, in one
    /// transaction. A credential that fails a check abandons the exchange with a problem report.
    func receiveCredential(_ inbound: InboundMessage, tenant: TenantContext) async throws {
        let connection = try Self.exchangeProtocol.peerConnection(inbound)
        let issued: IssueCredentialMessages.Issued
        do {
            issued = try IssueCredentialMessages.readIssued(inbound.body)
        } catch {
            // Unreadable (malformed, oversized): the exchange that waited for it ends, saying why.
            if let thread = try? ExchangeProtocol.threadIds(of: inbound.body).thid,
                let exchange = try await tenant.database.read({ tx in
                    try tx.credentialExchanges.find(threadId: thread, connectionId: connection.id, forUpdate: false)
                }), exchange.state == .requestSent
            {
                try await abandon(
                    exchange, code: Self.exchangeProtocol.problemCode(error), reason: ExchangeProtocol.describe(error), received: inbound, tenant: tenant)
            } else {
                try await Self.exchangeProtocol.report(error, on: inbound, connection: connection, tenant: tenant, sender: sender)
            }
            return
        }
        guard
            let exchange = try await tenant.database.read({ tx in
                try tx.credentialExchanges.find(threadId: issued.threadId, connectionId: connection.id, forUpdate: false)
            })
        else {
            throw AerieError.notFound("no credential exchange of this connection has the thread of this credential")
        }
        guard exchange.state == .requestSent, let request = exchange.request, let holder = exchange.holderDid else {
            throw AerieError(.conflict, "the exchange is \(exchange.state.rawValue): no credential was requested")
        }
        let proof: VerifiedProof
        do {
            proof = try CredentialContent.verifyIssued(issued.credential, requested: request, holder: holder)
        } catch {
            tenant.logger.notice(
                "credential refused", metadata: ["exchange": "\(exchange.id)", "error": "\(String(reflecting: error))"])
            try await abandon(exchange, code: Self.exchangeProtocol.problemCode(error), reason: ExchangeProtocol.describe(error), received: inbound, tenant: tenant)
            return
        }
        let credential = StoredCredential(
            credential: issued.credential, issuer: proof.controller, types: CredentialContent.types(of: issued.credential),
            subjectId: holder, issuanceDate: CredentialContent.date(issued.credential, "issuanceDate"),
            expirationDate: CredentialContent.date(issued.credential, "expirationDate"), connectionId: connection.id,
            exchangeId: exchange.id)
        let ack = IssueCredentialMessages.ack(threadId: exchange.threadId)
        _ = try await sender.send(ack, on: connection.id, tenant: tenant) { _, tx in
            if let receipt = inbound.receipt, try !receipt.claim(in: tx, connection: connection.id) { return false }
            let exchanges = try tx.credentialExchanges
            guard var current = try exchanges.get(exchange.id, forUpdate: true) else { return false }
            try current.apply(.credentialReceived)
            current.credentialId = credential.id
            try tx.credentials.insert(credential)
            try exchanges.update(current)
            try current.apply(.ackSent)
            try exchanges.update(current)
            return true
        }
    }

    /// The issuer's problem report: the exchange is abandoned with what it says.
    func receiveProblemReport(_ inbound: InboundMessage, tenant: TenantContext) async throws {
        let connection = try Self.exchangeProtocol.peerConnection(inbound)
        let report = try IssueCredentialMessages.readProblemReport(inbound.body)
        try await tenant.database.transaction { tx in
            if let receipt = inbound.receipt, try !receipt.claim(in: tx, connection: connection.id) { return }
            let exchanges = try tx.credentialExchanges
            guard var exchange = try exchanges.find(threadId: report.threadId, connectionId: connection.id, forUpdate: true) else {
                throw AerieError.notFound("no credential exchange of this connection has the thread of this problem report")
            }
            try exchange.apply(.problemReport)
            exchange.problem = "the issuer reported: " + [report.code, report.description].compactMap { $0 }.joined(separator: ": ")
            try exchanges.update(exchange)
        }
    }

    // MARK: - The tenant's calls

    /// Requests the offered credential, bound to the did:key our proposal named, else to a new
    /// did:key of the tenant.
    func accept(_ exchangeId: UUID, tenant: TenantContext) async throws -> CredentialExchange {
        let exchange = try await load(exchangeId, tenant: tenant)
        _ = try CredentialExchange.next(exchange.state, on: .requestSent)
        guard let connectionId = exchange.connectionId, let offer = exchange.offer else {
            throw AerieError(.conflict, "the exchange has no offer to accept over a connection")
        }
        // The did:key our proposal named (its key already stored), else a new one.
        let made = try await exchange.holderDid == nil ? Self.newHolder(tenant: tenant) : nil
        let key = made?.key
        guard let holder = exchange.holderDid ?? made?.did else { throw AerieError.internalError(details: "no holder DID") }
        let detail = IssueCredentialMessages.CredentialDetail(
            credential: try CredentialContent.binding(offer.credential, to: holder), options: offer.options)
        let message = IssueCredentialMessages.request(
            detail: detail, threadId: exchange.threadId, parentThreadId: exchange.parentThreadId)
        _ = try await sender.send(message, on: connectionId, tenant: tenant) { _, tx in
            let exchanges = try tx.credentialExchanges
            guard var current = try exchanges.get(exchangeId, forUpdate: true) else { throw Self.noExchange(exchangeId) }
            try current.apply(.requestSent)
            current.request = detail
            current.holderDid = holder
            try key?.store(in: tx)
            try exchanges.update(current)
            return true
        }
        return try await load(exchangeId, tenant: tenant)
    }

    /// Sends a proposal of `detail` over the connection: a new exchange in `proposal-sent`. A
    /// credential proposed without `credentialSubject.id` is bound to a new did:key of the
    /// tenant (the exchange's `holderDid`, which the request then uses), so the issuer's offer
    /// can name the subject; one proposed with a subject of its own is requested as offered.
    func propose(_ detail: IssueCredentialMessages.CredentialDetail, comment: String?, on connectionId: UUID, tenant: TenantContext)
        async throws -> CredentialExchange
    {
        let made = try await CredentialContent.hasSubjectId(detail.credential) ? nil : Self.newHolder(tenant: tenant)
        var detail = detail
        if let made { detail.credential = try CredentialContent.binding(detail.credential, to: made.did) }
        let key = made?.key
        let message = IssueCredentialMessages.proposal(detail: detail, comment: comment)
        guard let threadId = message["@id"]?.stringValue else { throw AerieError.internalError(details: "a proposal without @id") }
        let exchange = CredentialExchange(
            connectionId: connectionId, threadId: threadId, state: try CredentialExchange.next(nil, on: .proposalSent),
            comment: comment, offer: detail, holderDid: made?.did)
        _ = try await sender.send(message, on: connectionId, tenant: tenant) { _, tx in
            try key?.store(in: tx)
            try tx.credentialExchanges.insert(exchange)
            return true
        }
        return exchange
    }

    /// Refuses the offer (or gives up the proposal): a problem report, the exchange `abandoned`.
    func decline(_ exchangeId: UUID, reason: String?, tenant: TenantContext) async throws -> CredentialExchange {
        let exchange = try await load(exchangeId, tenant: tenant)
        guard exchange.state == .offerReceived || exchange.state == .proposalSent else {
            throw AerieError(.conflict, "the exchange is \(exchange.state.rawValue): only an offer or a proposal can be declined")
        }
        return try await abandon(exchange, code: "issuance-abandoned", reason: reason ?? "the holder declined the offer", tenant: tenant)
    }

    func load(_ id: UUID, tenant: TenantContext) async throws -> CredentialExchange {
        guard let exchange = try await tenant.database.read({ try $0.credentialExchanges.get(id, forUpdate: false) }) else {
            throw Self.noExchange(id)
        }
        return exchange
    }

    // MARK: - Pieces

    /// A new key of the tenant (stored by the caller with the exchange) and its did:key, the
    /// subject a credential is bound to.
    private static func newHolder(tenant: TenantContext) async throws -> (key: PendingKey, did: String) {
        let key = try await AerieError.mappingCrypto { try await tenant.keys.makeKey() }
        return (key, try AerieError.mappingCrypto { try DIDKey.did(verkeyBase58: key.verkey) })
    }

    /// Sends a problem report on the exchange's thread and abandons it (with the message that
    /// caused it claimed, when there is one), in one transaction.
    @discardableResult
    private func abandon(
        _ exchange: CredentialExchange, code: String, reason: String, received inbound: InboundMessage? = nil, tenant: TenantContext
    ) async throws -> CredentialExchange {
        guard let connectionId = exchange.connectionId else { throw AerieError(.conflict, "the exchange has no connection") }
        let message = IssueCredentialMessages.problemReport(threadId: exchange.threadId, code: code, description: reason)
        _ = try await sender.send(message, on: connectionId, tenant: tenant) { _, tx in
            if let receipt = inbound?.receipt, try !receipt.claim(in: tx, connection: connectionId) { return false }
            let exchanges = try tx.credentialExchanges
            guard var current = try exchanges.get(exchange.id, forUpdate: true) else { throw Self.noExchange(exchange.id) }
            try current.apply(.problemReport)
            current.problem = reason
            try exchanges.update(current)
            return true
        }
        return try await load(exchange.id, tenant: tenant)
    }

    static func noExchange(_ id: UUID) -> AerieError {
        AerieError.notFound("no credential exchange \(id.lowercasedString)")
    }
}
