import AerieCore
import AerieCrypto
import Foundation

/// The driver of `ConnectionStateMachine`: reads and writes the store, packs with the tenant's
/// key wallet, and enqueues envelopes in the outbox in the same transaction as the state change.
public struct ConnectionService: Sendable {
    /// Where peers reach us (`AERIE_PUBLIC_ENDPOINT`); a function because a server listening on
    /// port 0 knows it only once bound.
    public var endpoint: @Sendable () -> String
    /// The label sent in Requests when the caller gives none.
    public var defaultLabel: String
    /// Wakes waits on this process's state changes (shared by every copy of this service).
    let waits = ConnectionStateWaits()
    /// How often a wait reads the store when nothing in this process woke it.
    static let waitPollInterval: Duration = .milliseconds(100)

    public init(endpoint: @escaping @Sendable () -> String, defaultLabel: String = "Aerie") {
        self.endpoint = endpoint
        self.defaultLabel = defaultLabel
    }

    // MARK: - Create and connect

    /// `connections.createWithInvite`: a new record (state `initialized`), or the connection this
    /// very invitation (`@id`) already made, under the tenant's lock on that `@id`.
    public func create(_ invitation: Invitation, tenant: TenantContext) async throws -> (record: ConnectionRecord, existing: Bool) {
        let record = Self.record(for: invitation)
        return try await tenant.database.transaction { tx in
            if let id = record.invitationId {
                try tx.connections.lockInvitation(id)
                if let existing = try tx.connections.findMatching(invitationId: id, publicDid: nil, firstRecipientKey: nil) {
                    return (existing, true)
                }
            }
            try tx.connections.insert(record)
            return (record, false)
        }
    }

    /// A new record for the invitation (state `initialized`), with its match keys normalised.
    public static func record(for invitation: Invitation) -> ConnectionRecord {
        let keys = InvitationMatchKeys(invitation)
        return ConnectionRecord(
            invitation: invitation.json, invitationKind: invitation.kind.rawValue, invitationId: keys.id,
            publicDid: keys.publicDid, firstRecipientKey: keys.firstRecipientKey,
            invitationEndpoint: invitation.serviceEndpoint, invitationRoutingKeys: invitation.routingKeys,
            label: invitation.label, logoUrl: invitation.logoUrl, goal: invitation.goal, goalCode: invitation.goalCode)
    }

    /// Makes the pairwise key and DID, packs the Request of the chosen handshake
    /// (`HandshakeProtocol.choose`) and enqueues it with the state change to `requested`.
    /// connections/1.0 uses an unqualified DID with a legacy DIDDoc; didexchange a did:peer:2 of
    /// the pairwise key and our endpoint (resolvable by the inviter, no attachment needed).
    /// The key is stored in the same transaction as the state change and the outbox row.
    public func connect(_ id: UUID, label: String?, returnRoute: Bool = false, tenant: TenantContext) async throws
        -> ConnectionRecord
    {
        let record = try await load(id, tenant: tenant)
        let prepared = try await prepareConnect(record, label: label, returnRoute: returnRoute, tenant: tenant)
        let updated = try await tenant.database.transaction { tx -> ConnectionRecord in
            guard let current = try tx.connections.getForUpdate(id) else { throw AerieError.notFound("no connection \(id)") }
            return try Self.commitConnect(prepared, to: current, in: tx)
        }
        tenant.outboxSignal.outboxChanged()
        return updated
    }

    /// `connections.accept`: the tenant's connection for this invitation if it has one (the same
    /// `@id`, public DID or first key), else a new one, created and connected in one transaction.
    /// With `wait`, waits (bounded) while the handshake is under way: also when an earlier call
    /// made the connection and it is still pending, so a repeated call gets the outcome.
    public func accept(_ invitation: Invitation, label: String?, returnRoute: Bool, wait: Duration?, tenant: TenantContext)
        async throws -> (record: ConnectionRecord, existing: Bool)
    {
        let new = Self.record(for: invitation)
        // Watching before the Request is queued, so a Response handled at once still wakes the wait.
        let watch = wait == nil ? nil : waits.watch(new.id, tenant: tenant.tenantID)
        defer { watch.map(waits.stop) }
        let (record, existing) = try await createAndConnect(new, label: label, returnRoute: returnRoute, tenant: tenant)
        guard let wait, let watch else { return (record, existing) }
        guard existing else { return (try await waitWhilePending(record, watch: watch, timeout: wait, tenant: tenant), false) }
        guard Self.isPending(record) else { return (record, true) }
        let pending = waits.watch(record.id, tenant: tenant.tenantID)
        defer { waits.stop(pending) }
        // Read again once the watch is on, so a state committed before it is not missed.
        let current = try await load(record.id, tenant: tenant)
        return (try await waitWhilePending(current, watch: pending, timeout: wait, tenant: tenant), true)
    }

    /// Answers the tenant's connection matching `record`'s invitation (`existing`) if there is
    /// one, else stores the record and connects it, all in one transaction (the match, the record,
    /// the key, the state change and the outbox row). The transaction first takes the tenant's
    /// lock on the invitation `@id` (`lockInvitation`), so concurrent calls for one invitation
    /// make one connection. `alsoStore` runs in the same transaction with the connected record
    /// (the out-of-band plugin stores its record there).
    public func createAndConnect(
        _ record: ConnectionRecord, label: String?, returnRoute: Bool = false, tenant: TenantContext,
        alsoStore: (@Sendable (ConnectionRecord, any TenantTransaction) throws -> Void)? = nil
    ) async throws -> (record: ConnectionRecord, existing: Bool) {
        let keys = InvitationMatchKeys(
            id: record.invitationId, publicDid: record.publicDid, firstRecipientKey: record.firstRecipientKey)
        let prepared: PreparedConnect
        do {
            prepared = try await prepareConnect(record, label: label, returnRoute: returnRoute, tenant: tenant)
        } catch let error as AerieError where error.code == .unsupportedInvitation {
            // One that cannot be connected still answers the connection it matches; nothing is stored.
            if let existing = try await tenant.database.transaction({ tx in try Self.existing(keys, in: tx) }) {
                return (existing, true)
            }
            throw error
        }
        let result = try await tenant.database.transaction { tx -> (record: ConnectionRecord, existing: Bool) in
            if let id = keys.id { try tx.connections.lockInvitation(id) }
            if let existing = try Self.existing(keys, in: tx) { return (existing, true) }
            try tx.connections.insert(record)
            FaultPoint.reach("accept.afterRecord")
            let connected = try Self.commitConnect(prepared, to: record, in: tx)
            try alsoStore?(connected, tx)
            return (connected, false)
        }
        if !result.existing { tenant.outboxSignal.outboxChanged() }
        return result
    }

    /// The tenant's connection matching an invitation's keys, if any, inside `tx`.
    static func existing(_ keys: InvitationMatchKeys, in tx: any TenantTransaction) throws -> ConnectionRecord? {
        try tx.connections.findMatching(invitationId: keys.id, publicDid: keys.publicDid, firstRecipientKey: keys.firstRecipientKey)
    }

    static func isPending(_ record: ConnectionRecord) -> Bool {
        record.state == .requested || record.state == .responded
    }

    /// A Request packed with a new pairwise key, ready to be committed with `commitConnect`.
    struct PreparedConnect: Sendable {
        var handshake: HandshakeProtocol
        var key: PendingKey
        var did: String
        var requestId: String
        var destination: String
        var envelope: [UInt8]
    }

    /// Everything `connect` computes before touching the store: checks, key, DID, packed Request.
    func prepareConnect(_ record: ConnectionRecord, label: String?, returnRoute: Bool, tenant: TenantContext) async throws
        -> PreparedConnect
    {
        let handshake = try Self.handshake(for: record)
        _ = try ConnectionStateMachine.apply(.connect, in: record.state)
        guard let invitationKey = record.firstRecipientKey, let destination = record.invitationEndpoint else {
            throw AerieError(.unsupportedInvitation, "the invitation names no endpoint and recipient key to connect to")
        }
        let key = try await Self.crypto { try await tenant.keys.makeKey() }
        let verkey = key.verkey
        let requestId = UUID().uuidString.lowercased()
        let did: String
        let request: JSONValue
        switch handshake {
        case .connections10:
            did = try Self.crypto { KeyReference.unqualifiedDID(verkey: try Base58.decode(verkey)) }
            request = ConnectionMessages.request(
                id: requestId, label: label ?? defaultLabel, did: did, verkey: verkey, endpoint: endpoint(),
                invitationId: record.invitationId ?? "", returnRoute: returnRoute)
        case .didExchange10, .didExchange11:
            did = try Self.crypto { try PeerDID2.make(verkey: try Base58.decode(verkey), serviceEndpoint: endpoint()) }
            request = DIDExchangeMessages.request(
                version: handshake.version, id: requestId, label: label ?? defaultLabel, did: did,
                invitationId: record.invitationId ?? "", returnRoute: returnRoute)
        }
        let envelope = try Self.crypto {
            let packed = try tenant.keys.pack(request.serialized(), to: [invitationKey], from: key)
            return try Forward.wrap(packed, recipientKey: invitationKey, routingKeys: record.invitationRoutingKeys)
        }
        return PreparedConnect(
            handshake: handshake, key: key, did: did, requestId: requestId, destination: destination, envelope: envelope)
    }

    /// Stores the key, moves `current` (locked or just inserted) to `requested` and enqueues the Request.
    static func commitConnect(_ prepared: PreparedConnect, to current: ConnectionRecord, in tx: any TenantTransaction) throws
        -> ConnectionRecord
    {
        var current = current
        let transition = try ConnectionStateMachine.apply(.connect, in: current.state)
        try prepared.key.store(in: tx)
        current.state = transition.state
        current.myDid = prepared.did
        current.myVerkey = prepared.key.verkey
        current.threadId = prepared.requestId
        current.handshakeProtocol = prepared.handshake.rawValue
        try tx.connections.update(current)
        try tx.outbox.enqueue(OutboxItem(connectionId: current.id, endpoint: prepared.destination, envelope: prepared.envelope))
        return current
    }

    /// The handshake to connect a stored invitation with; `unsupported_invitation` when none fits.
    static func handshake(for record: ConnectionRecord) throws -> HandshakeProtocol {
        guard let kind = Invitation.Kind(rawValue: record.invitationKind) else {
            throw AerieError(.unsupportedInvitation, "unknown invitation kind \(record.invitationKind)")
        }
        let offered = (record.invitation["handshake_protocols"].flatMap { value -> [String]? in
            guard case .array(let items) = value else { return nil }
            return items.compactMap(\.stringValue)
        }) ?? []
        return try HandshakeProtocol.choose(kind: kind, offered: offered)
    }

    // MARK: - Inbound

    /// Applies a Response or problem report to the connection it belongs to. Returns the
    /// connection after the event, or nil when no connection of the tenant matches.
    @discardableResult
    /// A `receipt` (the inbound pipeline's) stores the message in the transaction that applies it.
    public func apply(_ message: JSONValue, recipientVerkey: String?, connectionId: UUID?, mailboxUid: UUID?,
                      receipt: InboundReceipt? = nil, tenant: TenantContext) async throws -> ConnectionRecord? {
        guard let type = message["@type"]?.stringValue.map(InboundMessage.normalizedType) else {
            throw AerieError.invalidParams("the message has no @type", field: "message")
        }
        // A Response is answered with our pairwise key: its sealed secret comes with the record.
        let isResponse = type == ConnectionMessages.responseType || DIDExchangeMessages.responseTypes.contains(type)
        let found: (record: ConnectionRecord, sealedKey: [UInt8]?)? = try await tenant.database.transaction { tx in
            let record: ConnectionRecord?
            if let connectionId {
                record = try tx.connections.get(connectionId)
            } else if let recipientVerkey {
                record = try tx.connections.findByMyVerkey(recipientVerkey)
            } else {
                record = nil
            }
            guard let record else { return nil }
            let sealedKey = try isResponse ? record.myVerkey.flatMap { try tx.keys.sealedSecret(verkey: $0) } : nil
            return (record, sealedKey)
        }
        guard let (record, sealedKey) = found else { return nil }
        if let thid = ConnectionMessages.threadId(message), let mine = record.threadId, thid != mine {
            throw AerieError(.conflict, "the message belongs to another thread than this connection's request")
        }
        let exchangeVersion = DIDExchangeMessages.version(of: type)
        let usesExchange = record.handshakeProtocol.flatMap(HandshakeProtocol.init(rawValue:))?.isDIDExchange ?? false
        switch type {
        case ConnectionMessages.responseType:
            guard !usesExchange else {
                throw AerieError(.conflict, "the connection uses didexchange; a connections/1.0 response does not apply")
            }
            guard let invitationKey = record.firstRecipientKey, record.myVerkey != nil else {
                throw AerieError(.conflict, "the connection has not sent a request")
            }
            _ = try ConnectionStateMachine.apply(.responseVerified, in: record.state)
            let peer: ConnectionMessages.PeerConnection
            do {
                peer = try ConnectionMessages.readResponse(message, invitationKey: invitationKey)
            } catch let error as CryptoError {
                return try await fail(record.id, event: .problem(reason: "the response's connection~sig is invalid: \(error.message)"),
                                      report: nil, mailboxUid: mailboxUid, receipt: receipt, tenant: tenant)
            }
            return try await accept(record, peer: peer, event: .responseVerified, reply: ConnectionMessages.trustPing(threadId: nil),
                                    sealedKey: sealedKey, mailboxUid: mailboxUid, receipt: receipt, tenant: tenant)
        case _ where exchangeVersion != nil && type.hasSuffix("/response"):
            guard usesExchange else {
                throw AerieError(.conflict, "the connection does not use didexchange; a didexchange response does not apply")
            }
            guard let invitationKey = record.firstRecipientKey, record.myVerkey != nil, let threadId = record.threadId else {
                throw AerieError(.conflict, "the connection has not sent a request")
            }
            _ = try ConnectionStateMachine.apply(.exchangeResponseVerified, in: record.state)
            let peer: ConnectionMessages.PeerConnection
            do {
                peer = try DIDExchangeMessages.readResponse(message, invitationKey: invitationKey)
            } catch let error as CryptoError {
                return try await fail(
                    record.id, event: .problem(reason: "the didexchange response's signed attachment is invalid: \(error.message)"),
                    report: nil, mailboxUid: mailboxUid, receipt: receipt, tenant: tenant)
            }
            let parent = message["~thread"]?["pthid"]?.stringValue ?? record.invitationId ?? ""
            let complete = DIDExchangeMessages.complete(
                version: exchangeVersion ?? "1.1", threadId: threadId, parentThreadId: String(parent.prefix(512)))
            return try await accept(record, peer: peer, event: .exchangeResponseVerified, reply: complete,
                                    sealedKey: sealedKey, mailboxUid: mailboxUid, receipt: receipt, tenant: tenant)
        case ConnectionMessages.problemReportType, ConnectionMessages.notificationProblemReportType:
            return try await fail(
                record.id, event: .problem(reason: ConnectionMessages.problemReason(message)), report: message,
                mailboxUid: mailboxUid, receipt: receipt, tenant: tenant)
        case _ where exchangeVersion != nil && type.hasSuffix("/problem_report"):
            return try await fail(
                record.id, event: .problem(reason: ConnectionMessages.problemReason(message)), report: message,
                mailboxUid: mailboxUid, receipt: receipt, tenant: tenant)
        default:
            throw AerieError.invalidParams("a \(type) message does not change a connection's state", field: "message")
        }
    }

    /// Stores the peer of a verified Response, moves to `accepted` and enqueues `reply` (trust
    /// ping or didexchange complete) to the peer, in one transaction.
    private func accept(_ record: ConnectionRecord, peer: ConnectionMessages.PeerConnection, event: ConnectionStateMachine.Event,
                        reply: JSONValue, sealedKey: [UInt8]?, mailboxUid: UUID?, receipt: InboundReceipt?, tenant: TenantContext)
        async throws -> ConnectionRecord
    {
        guard let myVerkey = record.myVerkey else { throw AerieError(.conflict, "the connection has not sent a request") }
        let envelope: [UInt8]
        if let sealedKey {
            envelope = try await Self.crypto {
                let packed = try await tenant.keys.pack(reply.serialized(), to: [peer.verkey], from: myVerkey, sealedSecret: sealedKey)
                return try Forward.wrap(packed, recipientKey: peer.verkey, routingKeys: peer.routingKeys)
            }
        } else {
            envelope = try await pack(reply, to: peer.verkey, routingKeys: peer.routingKeys, from: myVerkey, tenant: tenant)
        }
        let (updated, changed) = try await tenant.database.transaction { tx -> (ConnectionRecord, Bool) in
            guard var current = try tx.connections.getForUpdate(record.id) else {
                throw AerieError.notFound("no connection \(record.id)")
            }
            // Stored and applied together: a copy handled before changes nothing.
            if let receipt, try !receipt.claim(in: tx) { return (current, false) }
            FaultPoint.reach("inbound.beforeCommit")
            let transition = try ConnectionStateMachine.apply(event, in: current.state)
            current.state = transition.state
            current.theirDid = peer.did
            current.theirVerkey = peer.verkey
            current.theirEndpoint = peer.endpoint
            current.theirRoutingKeys = peer.routingKeys
            current.failureReason = nil
            current.problemReport = nil
            try tx.connections.update(current)
            if transition.actions.contains(.sendTrustPing) || transition.actions.contains(.sendComplete) {
                try tx.outbox.enqueue(OutboxItem(connectionId: current.id, endpoint: peer.endpoint, envelope: envelope))
            }
            if let uid = receipt?.claimed?.uid ?? mailboxUid { try tx.mailbox.updateStatus(uid, to: MailboxMessage.reviewed) }
            return (current, true)
        }
        guard changed else { return updated }
        tenant.outboxSignal.outboxChanged()
        waits.changed(updated, tenant: tenant.tenantID)
        return updated
    }

    /// Moves the connection to `failed` (problem report, bad response, undeliverable request).
    @discardableResult
    public func fail(_ id: UUID, event: ConnectionStateMachine.Event, report: JSONValue?, mailboxUid: UUID?,
                     receipt: InboundReceipt? = nil, tenant: TenantContext) async throws -> ConnectionRecord {
        let (failed, changed) = try await tenant.database.transaction { tx -> (ConnectionRecord, Bool) in
            guard var current = try tx.connections.getForUpdate(id) else { throw AerieError.notFound("no connection \(id)") }
            if let receipt, try !receipt.claim(in: tx) { return (current, false) }
            let transition = try ConnectionStateMachine.apply(event, in: current.state)
            current.state = transition.state
            for case .recordFailure(let reason) in transition.actions { current.failureReason = reason }
            if let report { current.problemReport = report }
            try tx.connections.update(current)
            if let uid = receipt?.claimed?.uid ?? mailboxUid { try tx.mailbox.updateStatus(uid, to: MailboxMessage.reviewed) }
            return (current, true)
        }
        if changed { waits.changed(failed, tenant: tenant.tenantID) }
        return failed
    }

    /// `connections.updateState`: applies Responses or problem reports waiting in the mailbox.
    public func updateState(_ id: UUID, tenant: TenantContext) async throws -> ConnectionRecord {
        var record = try await load(id, tenant: tenant)
        guard record.state == .requested || record.state == .responded else { return record }
        let waiting = try await tenant.database.transaction { tx in
            try tx.mailbox.list(connectionId: id, status: MailboxMessage.received, type: nil, limit: 50)
        }
        let handled = Set([
            ConnectionMessages.responseType, ConnectionMessages.problemReportType,
            ConnectionMessages.notificationProblemReportType,
        ] + DIDExchangeMessages.responseTypes + DIDExchangeMessages.problemReportTypes)
        for message in waiting where handled.contains(message.type) {
            if let updated = try? await apply(
                message.payload, recipientVerkey: nil, connectionId: id, mailboxUid: message.uid, tenant: tenant)
            {
                record = updated
                if record.state != .requested { break }
            }
        }
        return record
    }

    /// Waits while the connection is `requested` or `responded`, at most `timeout` (then
    /// `timeout`, the connection left as it is). Woken by this process's commit of the next state
    /// through `watch` (registered before that commit could happen); the store is read every
    /// `waitPollInterval` for changes another process (or a delete) made.
    func waitWhilePending(
        _ start: ConnectionRecord, watch: ConnectionStateWaits.Watch, timeout: Duration, tenant: TenantContext
    ) async throws -> ConnectionRecord {
        var record = start
        let deadline = ContinuousClock.now + timeout
        while Self.isPending(record) {
            guard ContinuousClock.now < deadline else {
                throw AerieError(
                    .timeout, "the inviter did not answer within \(timeout.components.seconds) s",
                    data: [
                        "connectionId": .string(record.id.uuidString.lowercased()),
                        "state": .int(Int64(record.state.number)), "stateName": .string(record.state.rawValue),
                    ])
            }
            if let changed = await watch.next(timeout: Self.waitPollInterval) {
                record = changed
            } else {
                try Task.checkCancellation()
                record = try await load(record.id, tenant: tenant)
            }
        }
        return record
    }

    public func load(_ id: UUID, tenant: TenantContext) async throws -> ConnectionRecord {
        guard let record = try await tenant.database.read({ try $0.connections.get(id) }) else {
            throw AerieError.notFound("no connection \(id.uuidString.lowercased())")
        }
        return record
    }

    // MARK: - Packing

    func pack(_ message: JSONValue, to recipientKey: String, routingKeys: [String], from sender: String,
              tenant: TenantContext) async throws -> [UInt8] {
        try await Self.crypto {
            let packed = try await tenant.keys.pack(message.serialized(), to: [recipientKey], from: sender)
            return try Forward.wrap(packed, recipientKey: recipientKey, routingKeys: routingKeys)
        }
    }

    /// CryptoError as AerieError, once, here.
    static func crypto<T>(_ body: () async throws -> T) async throws -> T {
        do {
            return try await body()
        } catch let error as CryptoError {
            throw aerieError(error)
        }
    }

    static func crypto<T>(_ body: () throws -> T) throws -> T {
        do {
            return try body()
        } catch let error as CryptoError {
            throw aerieError(error)
        }
    }

    static func aerieError(_ error: CryptoError) -> AerieError {
        switch error.code {
        case .invalidKey, .invalidDID, .invalidEncoding:
            AerieError(.invalidInvitation, error.message, details: String(reflecting: error))
        case .invalidSignature, .malformedSignature, .invalidMessage, .malformedEnvelope:
            AerieError(.invalidParams, error.message, field: "message", details: String(reflecting: error))
        default:
            AerieError.internalError(details: String(reflecting: error))
        }
    }
}
