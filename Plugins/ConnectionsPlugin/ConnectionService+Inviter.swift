import AerieCore
import AerieCrypto
import Foundation

/// The inviter side of RFC 0160: an invitation is a connection record of ours (role `inviter`,
/// state `initialized`) whose `myVerkey` is a fresh invitation key, so inbound routing finds it
/// like any key of ours. A Request to that key (`InboundSenders.invitationRequest`) is answered
/// with a Response signed by the invitation key and sent from a new pairwise key; a single-use
/// invitation becomes that connection (its key is deleted and routes nowhere: a second Request
/// is refused), a multi-use one stays open and makes a new connection per Request.
extension ConnectionService {
    /// What `connections.createInvitation` answers.
    public struct CreatedInvitation: Encodable, Sendable {
        public var connectionId: String
        public var invitation: JSONValue
        public var invitationUrl: String
        public var state: Int
        public var stateName: String
        public var multiUse: Bool
        public var alias: String?
    }

    /// `connections.createInvitation`: a connections/1.0 invitation (`storeInvitation`).
    public func createInvitation(
        label: String?, multiUse: Bool, alias: String?, limits: InvitationUseLimits = .init(), tenant: TenantContext
    ) async throws -> CreatedInvitation {
        let label = label ?? defaultLabel
        let record = try await storeInvitation(kind: .aries, multiUse: multiUse, alias: alias, limits: limits, tenant: tenant) {
            key, endpoint, _ in
            ConnectionMessages.invitation(id: UUID.random().lowercasedString, label: label, recipientKey: key, endpoint: endpoint)
        }
        return CreatedInvitation(
            connectionId: record.id.lowercasedString, invitation: record.invitation,
            invitationUrl: ConnectionMessages.invitationURL(record.invitation, endpoint: record.invitation["serviceEndpoint"]?.stringValue ?? endpoint()),
            state: record.state.number, stateName: record.state.rawValue, multiUse: multiUse, alias: alias)
    }

    /// Stores an invitation of ours: a fresh invitation key, the record (role `inviter`,
    /// `initialized`, `myVerkey` the key) and its `limits` (`InvitationUses`) in one
    /// transaction. `build` writes the invitation JSON from the key (base58), our endpoint and
    /// the default label.
    public func storeInvitation(
        kind: Invitation.Kind, multiUse: Bool, alias: String?, limits: InvitationUseLimits = .init(), tenant: TenantContext,
        build: @Sendable (_ invitationKey: String, _ endpoint: String, _ defaultLabel: String) throws -> JSONValue
    ) async throws -> ConnectionRecord {
        let key = try await AerieError.mappingCrypto { try await tenant.keys.makeKey() }
        let invitation = try build(key.verkey, endpoint(), defaultLabel)
        let record = ConnectionRecord(
            invitation: invitation, invitationKind: kind.rawValue, myVerkey: key.verkey,
            handshakeProtocol: kind == .aries ? HandshakeProtocol.connections10.rawValue : nil, role: .inviter,
            multiUse: multiUse, alias: alias)
        try await tenant.database.transaction { tx in
            try key.store(in: tx)
            try tx.connections.insert(record)
            try InvitationUseStore(tx).insert(InvitationUses(maxUses: limits.maxUses, expiresAt: limits.expiresAt), for: record.id)
        }
        return record
    }

    /// The tenant's invitation DID in `method`: a peer DID of a key of its own and this server's
    /// endpoint, the one service of every out-of-band invitation made with `useDid` in that
    /// method, so a peer already connected through one of them recognises the next (ACA-Py
    /// matches `their_public_did`) and reuses the connection instead of making another. An open
    /// multi-use invitation record of its own (its id derived from the tenant's and the method's,
    /// so there is one per tenant and method), made on first use with its key in one transaction;
    /// its invitation's `services` holds the DID as invitations carry it (a did:peer:4 in its long
    /// form), `myDid` the form that names it afterwards, `invitationEndpoint` the endpoint it was
    /// made with, which it keeps. Requests to it make a new connection each.
    public func invitationDID(method: PeerDIDMethod = .peer2, tenant: TenantContext) async throws -> ConnectionRecord {
        let id = Self.invitationDIDRecordId(tenant.tenantID, method: method)
        if let found = try await tenant.database.read({ try $0.connections.get(id) }) { return found }
        let key = try await AerieError.mappingCrypto { try await tenant.keys.makeKey() }
        let serviceEndpoint = endpoint()
        let did = try AerieError.mappingCrypto { try method.make(verkey: try Base58.decode(key.verkey), serviceEndpoint: serviceEndpoint) }
        let record = ConnectionRecord(
            id: id,
            invitation: [
                "services": [.string(did.did)],
                "handshake_protocols": [
                    .string(HandshakeProtocol.didExchange11.rawValue), .string(HandshakeProtocol.didExchange10.rawValue),
                    .string(HandshakeProtocol.connections10.rawValue),
                ],
            ],
            invitationKind: Invitation.Kind.outOfBand.rawValue, invitationEndpoint: serviceEndpoint, myDid: did.shortForm,
            myVerkey: key.verkey, role: .inviter, multiUse: true, alias: "invitation DID")
        do {
            try await tenant.database.transaction { tx in
                try key.store(in: tx)
                try tx.connections.insert(record)
            }
            return record
        } catch let error as AerieError where error.code == .conflict {
            // Another call made it first: that one is the tenant's.
            guard let found = try await tenant.database.read({ try $0.connections.get(id) }) else { throw error }
            return found
        }
    }

    /// The invitation DID record's id: a name-based id from the tenant's and the method's
    /// (SHA-256, UUID v5 layout; did:peer:2's from the tenant's alone, as before did:peer:4).
    static func invitationDIDRecordId(_ tenant: TenantID, method: PeerDIDMethod) -> UUID {
        let name = method == .peer2 ? "aerie.invitation-did:\(tenant.rawValue)" : "aerie.invitation-did:\(method.rawValue):\(tenant.rawValue)"
        var bytes = SHA256.hash(Array(name.utf8)).prefix(16).map { $0 }
        bytes[6] = (bytes[6] & 0x0F) | 0x50
        bytes[8] = (bytes[8] & 0x3F) | 0x80
        return UUID(uuid: (bytes[0], bytes[1], bytes[2], bytes[3], bytes[4], bytes[5], bytes[6], bytes[7],
                           bytes[8], bytes[9], bytes[10], bytes[11], bytes[12], bytes[13], bytes[14], bytes[15]))
    }

    /// A Request (connections/1.0, or didexchange 1.0/1.1 at an out-of-band invitation offering it)
    /// the inbound pipeline took at an open invitation of ours (`message.connection`),
    /// authcrypted by `message.sender`'s key, which must be the key the Request's DID document
    /// names and its DID's (else `InboundSender.Refused`: nothing stored; also for a handshake the
    /// invitation does not offer, and for a Request with a field over `PeerFieldLimits`). Checks the invitee's endpoint, makes the pairwise key, signs with the
    /// invitation key (connections/1.0: `connection~sig` over our DID and DIDDoc; didexchange 1.0:
    /// `did_doc~attach`, our unqualified DID's legacy DIDDoc; didexchange 1.1: `did_rotate~attach`
    /// over our DID in the Request's method, did:peer:2 or did:peer:4, did:peer:2 for any other)
    /// and packs the Response; then in one transaction:
    /// stores the Request (a copy handled before changes nothing), the key, the connection
    /// (`responded`) and the Response's outbox row. A Request that reaches a single-use invitation
    /// another Request already used (they raced) is refused, and so is one past the invitation's
    /// limits or the tenant's pending connections (`admit`).
    ///
    /// The sender is a stranger: a Request refused throws `InboundRefusal` (nothing of it is
    /// stored), counted on the invitation by reason; a failure that can pass is thrown as it is.
    func receiveRequest(_ message: InboundMessage, tenant: TenantContext) async throws {
        do {
            try await answerRequest(message, tenant: tenant)
        } catch {
            guard let invitation = message.connection, let refusal = Self.refusal(for: error) else { throw error }
            // One write per refusal that got this far: the rate limits run before the handler.
            do {
                try await tenant.database.transaction { tx in try InvitationUseStore(tx).refused(invitation.id, reason: refusal.reason) }
            } catch {
                tenant.logger.warning("refused request not counted", metadata: ["error": "\(String(reflecting: error))"])
            }
            throw refusal
        }
    }

    /// A Request's failure as the refusal it is, nil for one that can pass (the stranger retries).
    static func refusal(for error: any Error) -> InboundRefusal? {
        if let refusal = error as? InboundRefusal { return refusal }
        if let refused = error as? InboundSender.Refused { return InboundRefusal(.malformed, refused.reason) }
        guard !AerieError.isTransient(error), let error = error as? AerieError else { return nil }
        return InboundRefusal(.malformed, "the request could not be answered: \(error.message)")
    }

    /// Under the invitation's row lock, before the key or connection is written (the Request's
    /// claim, ahead of it, rolls back with a refusal): refuses a Request past the
    /// invitation's `expiresAt` or `maxUses`, or past the tenant's `pendingConnectionsMax`
    /// connections waiting for their peer (so strangers hold at most that many of the tenant's
    /// mailbox and outbox rows); else counts the use. Two Requests at once on one invitation take
    /// the lock in turn, so neither limit of an invitation is passed; Requests to different
    /// invitations of a tenant can pass the pending limit by how many run at once.
    private func admit(_ invitation: ConnectionRecord, in tx: any TenantTransaction) throws {
        let store = InvitationUseStore(tx)
        let (limits, now, pending) = try store.get(invitation.id, pendingUpTo: pendingConnectionsMax)
        if let refusal = limits?.refusal(at: now) { throw refusal }
        if pending >= pendingConnectionsMax {
            throw InboundRefusal(
                .pendingLimit, "\(pendingConnectionsMax) connections wait for their peer, the limit (AERIE_PENDING_CONNECTIONS_MAX)")
        }
        try store.use(invitation.id)
    }

    private func answerRequest(_ message: InboundMessage, tenant: TenantContext) async throws {
        guard let invitation = message.connection, let sender = message.sender else { throw InboundSender.Refused() }
        let invitationKey = message.recipientVerkey
        let handshake: HandshakeProtocol = message.type == ConnectionMessages.requestType
            ? .connections10 : DIDExchangeMessages.version(of: message.type) == "1.0" ? .didExchange10 : .didExchange11
        try ConnectionStateMachine.checkRequest(handshake, at: invitationKey, to: invitation)
        let requester: ConnectionMessages.Requester
        do {
            requester = try handshake == .connections10
                ? ConnectionMessages.readRequest(message.body) : DIDExchangeMessages.readRequest(message.body)
        } catch let error as AerieError where error.code == .invalidParams {
            throw InboundSender.Refused(error.message)
        } catch let error as CryptoError {
            throw InboundSender.Refused(error.message)
        }
        guard sender.allows(requester.peer.verkey) else { throw InboundSender.Refused() }
        try ConnectionStateMachine.checkRequester(requester, of: invitation)
        let invitationId = invitation.invitation["@id"]?.stringValue
        let peer = requester.peer
        try await checkDestination(peer.endpoint, stranger: true)

        let key = try await AerieError.mappingCrypto { try await tenant.keys.makeKey() }
        let did: String
        let response: JSONValue
        do {
            switch handshake {
            case .connections10:
                did = try AerieError.mappingCrypto { KeyReference.unqualifiedDID(verkey: try Base58.decode(key.verkey)) }
                let signature = try await AerieError.mappingCrypto {
                    try await tenant.keys.signDecorator(
                        ConnectionMessages.connection(did: did, verkey: key.verkey, endpoint: endpoint()), with: invitationKey)
                }
                response = ConnectionMessages.response(
                    threadId: requester.threadId, parentThreadId: requester.parentThreadId, signature: signature)
            case .didExchange10, .didExchange11:
                (did, response) = try await AerieError.mappingCrypto {
                    try await DIDExchangeMessages.signedResponse(
                        version: handshake.version, method: PeerDIDMethod(of: peer.did) ?? .peer2, threadId: requester.threadId,
                        parentThreadId: requester.parentThreadId ?? invitationId, verkey: key.verkey, endpoint: endpoint(),
                        invitationKey: invitationKey
                    ) { bytes in
                        try await tenant.keys.sign(bytes, with: invitationKey)
                    }
                }
            }
        } catch let error as AerieError where error.code == .notFound {
            // The key went with its single use since the pipeline read the invitation: refused
            // like every later Request.
            throw InboundSender.Refused()
        }
        let outbound = try await Outbound.pack(
            response, from: .pending(key),
            to: Outbound.Route(recipientKey: peer.verkey, routingKeys: peer.routingKeys, endpoint: peer.endpoint), tenant: tenant)
        let receipt = message.receipt
        let answer = ConnectionStateMachine.RequestAnswer(
            requester: requester, handshake: handshake, invitationKey: invitationKey, key: key, did: did, response: outbound)
        let made = try await tenant.database.transaction { tx -> ConnectionRecord? in
            guard let current = try tx.connections.getForUpdate(invitation.id) else { throw InboundSender.Refused() }
            // A copy of a Request already handled: nothing more (before the machine's rules, so
            // the copy is answered like the first, not refused).
            if let receipt, try !receipt.claim(in: tx, connection: current.id) { return nil }
            let transition = try ConnectionStateMachine.apply(.requestReceived(answer), to: current)
            try admit(current, in: tx)
            let made = try Self.run(transition, reviewed: receipt?.claimed?.uid, in: tx)
            FaultPoint.reach("inbound.beforeCommit")
            return made
        }
        if let made { committed(made, tenant: tenant) }
    }

    /// The invitee's first authenticated message to an inviter-side connection that answered its
    /// Request: `accepted`, in a transaction of its own before the message is handled (the peer
    /// proved it holds the key our Response was sent to, whatever happens to the message).
    func confirmPeer(_ connection: ConnectionRecord, tenant: TenantContext) async throws -> ConnectionRecord {
        guard ConnectionStateMachine.accepts(.peerConfirmed, to: connection) else { return connection }
        let (updated, changed) = try await tenant.database.transaction { tx -> (ConnectionRecord, Bool) in
            guard let current = try tx.connections.getForUpdate(connection.id) else {
                throw AerieError.notFound("no connection \(connection.id)")
            }
            let transition = try ConnectionStateMachine.apply(.peerConfirmed, to: current)
            return (try Self.run(transition, in: tx), transition.changes)
        }
        if changed { committed(updated, tenant: tenant) }
        return updated
    }
}

struct CreateInvitationParams: Decodable, Sendable, DocumentedParams {
    static let maxTextLength = 500

    var label: String?
    var multiUse: Bool?
    var alias: String?
    var maxUses: Int?
    var expiresAt: String?

    static let documentation = [
        ParamDoc("label", "string", required: false, "the label the invitee sees (default: the server's), at most 500 characters"),
        ParamDoc("multiUse", "boolean", required: false, "a connection per Request (false: the invitation is used once)"),
        ParamDoc("alias", "string", required: false, "the backend's own name for the invitation and its connections"),
    ] + InvitationUseLimits.documentation

    func validated() throws -> (params: CreateInvitationParams, limits: InvitationUseLimits) {
        for (field, value) in [("label", label), ("alias", alias)] {
            if let value, value.isEmpty || value.count > Self.maxTextLength {
                throw AerieError.invalidParams("\(field) must be 1...\(Self.maxTextLength) characters", field: field)
            }
        }
        return (self, try InvitationUseLimits(maxUses: maxUses, expiresAt: expiresAt))
    }
}
