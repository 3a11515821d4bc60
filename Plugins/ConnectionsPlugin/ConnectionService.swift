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
    /// Wakes waits on this process's state changes (shared by every copy of this service), and on
    /// other processes' through `commits`.
    let waits = ConnectionStateWaits()
    /// What this process hears of every process's commits (the server's LISTEN; wired to
    /// `waits.heard` by `ConnectionsPlugin`); nil without a server (unit tests).
    var commits: (any EventSubscriptions)?
    /// While commits are heard, a wait's read of the store is only the safety net for a missed one.
    static let heardWaitPollInterval: Duration = .seconds(2)
    /// How often a wait reads the store when nothing in this process woke it.
    static let waitPollInterval: Duration = .milliseconds(100)
    /// `waitWhilePending` doubles its interval up to this: a peer that answers in a few hundred
    /// milliseconds wakes it before its second read (an answer to this process always wakes it).
    static let maxWaitPollInterval: Duration = .milliseconds(400)

    /// Judges peers' endpoints against the server's outbound address policy before anything is
    /// stored (`URLFetcher.checkDestination`).
    public var destinations: any URLFetcher

    /// The tenant's connections waiting for their peer's first answer (`responded`) past which a
    /// stranger's Request is refused (`AERIE_PENDING_CONNECTIONS_MAX`).
    public var pendingConnectionsMax = 100

    /// Sends over established connections (trust pings).
    public let sender: any ConnectionSender

    public init(
        endpoint: @escaping @Sendable () -> String, defaultLabel: String = "Aerie", destinations: any URLFetcher,
        sender: any ConnectionSender
    ) {
        self.sender = sender
        self.endpoint = endpoint
        self.defaultLabel = defaultLabel
        self.destinations = destinations
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
    /// connections/1.0 uses an unqualified DID with a legacy DIDDoc; didexchange a peer DID of
    /// the pairwise key and our endpoint in `didMethod` (default: the handshake's,
    /// `HandshakeProtocol.defaultDIDMethod`), resolvable by the inviter, no attachment needed; the
    /// Request carries a did:peer:4 in its long form, the record its short form.
    /// The key is stored in the same transaction as the state change and the outbox row.
    public func connect(
        _ id: UUID, label: String?, returnRoute: Bool = false, didMethod: PeerDIDMethod? = nil, tenant: TenantContext
    ) async throws -> ConnectionRecord {
        let record = try await load(id, tenant: tenant)
        let prepared = try await prepareConnect(
            record, label: label, returnRoute: returnRoute, didMethod: didMethod, tenant: tenant)
        let updated = try await tenant.database.transaction { tx -> ConnectionRecord in
            guard let current = try tx.connections.getForUpdate(id) else { throw AerieError.notFound("no connection \(id)") }
            return try Self.commit(.connect(prepared), to: current, in: tx)
        }
        committed(updated, tenant: tenant)
        return updated
    }

    /// `connections.accept`: the tenant's connection for this invitation if it has one (the same
    /// `@id`, public DID or first key), else a new one, created and connected in one transaction.
    /// With `wait`, waits (bounded) while the handshake is under way: also when an earlier call
    /// made the connection and it is still pending, so a repeated call gets the outcome.
    public func accept(
        _ invitation: Invitation, label: String?, returnRoute: Bool, didMethod: PeerDIDMethod? = nil, wait: Duration?,
        tenant: TenantContext
    ) async throws -> (record: ConnectionRecord, existing: Bool) {
        let new = Self.record(for: invitation)
        // Watching before the Request is queued, so a Response handled at once still wakes the wait.
        let watch = wait == nil ? nil : waits.watch(new.id, tenant: tenant.tenantID)
        defer { watch.map(waits.stop) }
        let (record, existing) = try await createAndConnect(
            new, label: label, returnRoute: returnRoute, didMethod: didMethod, tenant: tenant)
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
    ///
    /// The match is a check queued with the writes (`requireNoMatch`), so the usual case (no
    /// match) is one round trip (`rerunnableTransaction`); when a connection matches, the
    /// transaction stores nothing and that connection is read and answered. Run twice after a
    /// lost connection, the second run finds what the first committed, if it did, and answers it.
    public func createAndConnect(
        _ record: ConnectionRecord, label: String?, returnRoute: Bool = false, didMethod: PeerDIDMethod? = nil,
        tenant: TenantContext, alsoStore: (@Sendable (ConnectionRecord, any TenantTransaction) throws -> Void)? = nil
    ) async throws -> (record: ConnectionRecord, existing: Bool) {
        let keys = InvitationMatchKeys(
            id: record.invitationId, publicDid: record.publicDid, firstRecipientKey: record.firstRecipientKey)
        let prepared: ConnectionStateMachine.Request
        do {
            prepared = try await prepareConnect(
                record, label: label, returnRoute: returnRoute, didMethod: didMethod, tenant: tenant)
        } catch let error as AerieError where error.code == .unsupportedInvitation || error.code == .peerUnreachable {
            // One that cannot be connected still answers the connection it matches; nothing is stored.
            if let existing = try await findExisting(keys, tenant: tenant) { return (existing.record, true) }
            throw error
        }
        let connected: ConnectionRecord
        do {
            connected = try await tenant.database.rerunnableTransaction { tx -> ConnectionRecord in
                if let id = keys.id { try tx.connections.lockInvitation(id) }
                try tx.connections.requireNoMatch(
                    invitationId: keys.id, publicDid: keys.publicDid, firstRecipientKey: keys.firstRecipientKey)
                // Inserted as `requested` at once; its insert logs the `initialized` event before the
                // `requested` one (schema/0030), so subscribers see both states, as with create + connect.
                let connected = try Self.commit(.connect(prepared), to: record, inserting: true, in: tx)
                FaultPoint.reach("accept.afterRecord")
                try alsoStore?(connected, tx)
                return connected
            }
        } catch where MatchingConnection.exists(error) {
            // The match may be this very record: a run whose answer was lost with its connection
            // runs again (`rerunnableTransaction`), and its check finds what the first run
            // committed. The record's id is new, so finding it means this call created it.
            if let own = try await tenant.database.read({ try $0.connections.get(record.id) }) {
                committed(own, tenant: tenant)
                return (own, false)
            }
            // Committed before the check ran, so the read finds it (unless deleted since).
            guard let existing = try await findExisting(keys, tenant: tenant) else { throw error }
            return (existing.record, true)
        }
        committed(connected, tenant: tenant)
        return (connected, false)
    }

    static func isPending(_ record: ConnectionRecord) -> Bool {
        record.state == .requested || record.state == .responded
    }

    /// Everything `connect` computes before touching the store: checks, key, DID, packed Request,
    /// the payload of the machine's `connect`.
    func prepareConnect(
        _ record: ConnectionRecord, label: String?, returnRoute: Bool, didMethod: PeerDIDMethod?, tenant: TenantContext
    ) async throws -> ConnectionStateMachine.Request
    {
        let handshake = try Self.handshake(for: record)
        try ConnectionStateMachine.checkConnect(record)
        guard let invitationKey = record.firstRecipientKey, let destination = record.invitationEndpoint else {
            if let publicDid = record.publicDid, PeerDID4.isPeerDID4(publicDid) { throw Invitation.unseenShortForm(publicDid) }
            throw AerieError(.unsupportedInvitation, "the invitation names no endpoint and recipient key to connect to")
        }
        try await checkDestination(destination)
        let key = try await AerieError.mappingCrypto { try await tenant.keys.makeKey() }
        let verkey = key.verkey
        let requestId = UUID.random().lowercasedString
        let did: String
        let request: JSONValue
        switch handshake {
        case .connections10:
            did = try AerieError.mappingCrypto { KeyReference.unqualifiedDID(verkey: try Base58.decode(verkey)) }
            request = ConnectionMessages.request(
                id: requestId, label: label ?? defaultLabel, did: did, verkey: verkey, endpoint: endpoint(),
                invitationId: record.invitationId ?? "", returnRoute: returnRoute)
        case .didExchange10, .didExchange11:
            let made = try AerieError.mappingCrypto {
                try (didMethod ?? handshake.defaultDIDMethod).make(verkey: try Base58.decode(verkey), serviceEndpoint: endpoint())
            }
            did = made.shortForm
            request = DIDExchangeMessages.request(
                version: handshake.version, id: requestId, label: label ?? defaultLabel, did: made.did,
                invitationId: record.invitationId ?? "", returnRoute: returnRoute)
        }
        let outbound = try await Outbound.pack(
            request, from: .pending(key),
            to: Outbound.Route(recipientKey: invitationKey, routingKeys: record.invitationRoutingKeys, endpoint: destination),
            tenant: tenant)
        return ConnectionStateMachine.Request(handshake: handshake, key: key, did: did, requestId: requestId, message: outbound)
    }

    /// Refuses an invitation whose endpoint this server could never send to (the address
    /// policy refuses every address of its host, or it is not an http(s) URL): a send queued
    /// there would only fail, and the caller would wait for an answer that cannot come.
    /// A stranger's endpoint (`stranger`: a Request's) is judged on the strangers' own lane.
    func checkDestination(_ endpoint: String, stranger: Bool = false) async throws {
        do {
            if stranger {
                try await destinations.checkStrangerDestination(endpoint)
            } else {
                try await destinations.checkDestination(endpoint)
            }
        } catch let error as URLFetchError {
            switch error.code {
            case .forbiddenAddress:
                throw AerieError(.peerUnreachable, error.message, field: "invitation", details: String(reflecting: error))
            case .busy:
                throw AerieError(.busy, error.message, details: String(reflecting: error))
            default:
                throw AerieError(
                    .unsupportedInvitation, "the invitation's endpoint cannot be used: \(error.message)", field: "invitation",
                    details: String(reflecting: error))
            }
        }
    }

    // MARK: - The driver

    /// The one place a connection's state changes: applies `event` to `current` (locked by `tx`,
    /// or new when `inserting`) through the machine and runs the transition (`run`). Call
    /// `committed` after the commit.
    @discardableResult
    static func commit(
        _ event: ConnectionStateMachine.Event, to current: ConnectionRecord, inserting: Bool = false,
        reviewed mailboxUid: UUID? = nil, in tx: any TenantTransaction
    ) throws -> ConnectionRecord {
        try run(ConnectionStateMachine.apply(event, to: current), inserting: inserting, reviewed: mailboxUid, in: tx)
    }

    /// Writes the transition's record (inserted when new: `inserting` says `current` was, or the
    /// transition made one; else updated in place), runs its actions in order and marks the
    /// mailbox row that caused the event reviewed; writes nothing for a transition that changes
    /// nothing.
    @discardableResult
    static func run(
        _ transition: ConnectionStateMachine.Transition, inserting: Bool = false, reviewed mailboxUid: UUID? = nil,
        in tx: any TenantTransaction
    ) throws -> ConnectionRecord {
        let next = transition.record
        guard transition.changes else { return next }
        // The record first, so an outbox row never points at a connection not yet written.
        if inserting || transition.inserts { try tx.connections.insert(next) } else { try tx.connections.updateQueued(next) }
        for action in transition.actions { try run(action, for: next, in: tx) }
        if let mailboxUid { try tx.mailbox.updateStatusQueued(mailboxUid, to: MailboxMessage.reviewed) }
        return next
    }

    /// Executes one action of a transition of `record` in `tx`.
    static func run(_ action: ConnectionStateMachine.Action, for record: ConnectionRecord, in tx: any TenantTransaction) throws {
        switch action {
        case .storeKey(let key): try key.store(in: tx)
        case .send(let message): try message.enqueue(for: record.id, in: tx)
        case .removeRecord: _ = try tx.connections.delete(record.id)
        case .removeKey(let verkey): _ = try tx.keys.remove(verkey: verkey)
        }
    }

    /// After the driver's transaction committed: wakes this process's waiters on the connection
    /// (what it enqueued the store hands to the delivery service itself).
    func committed(_ record: ConnectionRecord, tenant: TenantContext) {
        waits.changed(record, tenant: tenant.tenantID)
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

    /// A Response or problem report the inbound pipeline took (or recovers): its connection as
    /// the pipeline read it, with the sender authenticated and our key's sealed secret, so
    /// nothing is read here. Stored (`message.receipt`) and applied in one transaction.
    @discardableResult
    public func apply(_ message: InboundMessage, tenant: TenantContext) async throws -> ConnectionRecord {
        guard let connection = message.connection, let sender = message.sender else { throw InboundSender.Refused() }
        return try await apply(
            Received(
                body: message.body, type: message.type, connection: connection, sender: sender,
                sealedKey: message.recipientSealedSecret, mailboxUid: message.uid, receipt: message.receipt),
            tenant: tenant)
    }

    /// A Response or problem report for connection `id` that the backend hands in
    /// (`connections.updateStateWithMessage`) or that waits in the mailbox as `mailboxUid`
    /// (`connections.updateState`): the connection and our key's sealed secret are read in one
    /// statement, then the message is applied. Nil when the tenant has no such connection.
    @discardableResult
    public func apply(_ payload: JSONValue, toConnection id: UUID, mailboxUid: UUID?, tenant: TenantContext) async throws
        -> ConnectionRecord?
    {
        guard let type = payload["@type"]?.stringValue.map(InboundMessage.normalizedType) else {
            throw AerieError.invalidParams("the message has no @type", field: "message")
        }
        guard let (record, sealedKey) = try await tenant.database.read({ try $0.connections.getWithSealedKey(id) }) else {
            return nil
        }
        return try await apply(
            Received(
                body: payload, type: type, connection: record, sender: nil, sealedKey: sealedKey, mailboxUid: mailboxUid,
                receipt: nil),
            tenant: tenant)
    }

    /// A Response or problem report with what applying it needs, whichever way it came.
    private struct Received: Sendable {
        var body: JSONValue
        /// `@type`, normalised.
        var type: String
        /// As read without a lock: the transaction that applies the message locks the row, as
        /// read (`accept`) or again.
        var connection: ConnectionRecord
        /// Nil for a message the backend hands in.
        var sender: InboundSender?
        /// Our key's, the reply is packed with it (read again when nil).
        var sealedKey: [UInt8]?
        var mailboxUid: UUID?
        var receipt: InboundReceipt?
    }

    /// Applies a Response or problem report to its connection: the machine's rules are checked
    /// first (a Response's before its signature is verified), a Response is verified, its reply
    /// packed, and the event committed with the message.
    private func apply(_ received: Received, tenant: TenantContext) async throws -> ConnectionRecord {
        let (message, type, record) = (received.body, received.type, received.connection)
        let threadId = ConnectionMessages.threadId(message)
        let exchangeVersion = DIDExchangeMessages.version(of: type)
        switch type {
        case ConnectionMessages.responseType:
            let expected = try ConnectionStateMachine.checkResponse(threadId: threadId, on: record)
            let peer: ConnectionMessages.PeerConnection
            do {
                peer = try ConnectionMessages.readResponse(message, invitationKey: expected.invitationKey)
                try Self.requireAuthor(peer, sentBy: received.sender)
            } catch let error as CryptoError {
                return try await fail(record.id, event: .problem(.init(reason: "the response is refused: \(error.message)")),
                                      mailboxUid: received.mailboxUid, receipt: received.receipt, tenant: tenant)
            }
            let reply = try await pack(
                ConnectionMessages.trustPing(threadId: nil), from: expected.myVerkey, to: peer, received, tenant: tenant)
            return try await accept(
                .responseVerified(.init(threadId: threadId, peer: peer, reply: reply)), received, tenant: tenant)
        case _ where exchangeVersion != nil && type.hasSuffix("/response"):
            let (expected, requestId) = try ConnectionStateMachine.checkExchangeResponse(threadId: threadId, on: record)
            let peer: ConnectionMessages.PeerConnection
            do {
                peer = try DIDExchangeMessages.readResponse(message, invitationKey: expected.invitationKey)
                try Self.requireAuthor(peer, sentBy: received.sender)
            } catch let error as CryptoError {
                return try await fail(
                    record.id, event: .problem(.init(reason: "the didexchange response is refused: \(error.message)")),
                    mailboxUid: received.mailboxUid, receipt: received.receipt, tenant: tenant)
            }
            let parent = message["~thread"]?["pthid"]?.stringValue ?? record.invitationId ?? ""
            let complete = DIDExchangeMessages.complete(
                version: exchangeVersion ?? "1.1", threadId: requestId, parentThreadId: String(parent.prefix(512)))
            let reply = try await pack(complete, from: expected.myVerkey, to: peer, received, tenant: tenant)
            return try await accept(
                .exchangeResponseVerified(.init(threadId: threadId, peer: peer, reply: reply)), received, tenant: tenant)
        case ConnectionMessages.problemReportType, ConnectionMessages.notificationProblemReportType,
            _ where exchangeVersion != nil && type.hasSuffix("/problem_report"):
            let event = ConnectionStateMachine.Event.problem(
                .init(reason: ConnectionMessages.problemReason(message), report: message, threadId: threadId))
            // Refused before the transaction, as a Response is before its verification.
            try ConnectionStateMachine.checkThread(threadId, on: record)
            return try await fail(record.id, event: event, mailboxUid: received.mailboxUid, receipt: received.receipt, tenant: tenant)
        default:
            throw AerieError.invalidParams("a \(type) message does not change a connection's state", field: "message")
        }
    }

    /// A Response packed by a key not known before it must be packed by the key its signed
    /// connection names: anyone who saw our pairwise key could otherwise replay the inviter's
    /// signed payload from a key of their own.
    private static func requireAuthor(_ peer: ConnectionMessages.PeerConnection, sentBy sender: InboundSender?) throws {
        if let sender, !sender.allows(peer.verkey) { throw InboundSender.Refused() }
    }

    /// Our reply to a verified Response (trust ping, didexchange `complete`), packed from our
    /// pairwise key `myVerkey` (with the sealed secret read with the message, if it was) to the
    /// peer the Response names.
    private func pack(
        _ reply: JSONValue, from myVerkey: String, to peer: ConnectionMessages.PeerConnection, _ received: Received,
        tenant: TenantContext
    ) async throws -> Outbound {
        try await Outbound.pack(
            reply, from: received.sealedKey.map { .sealed(verkey: myVerkey, sealedSecret: $0) } ?? .stored(verkey: myVerkey),
            to: Outbound.Route(recipientKey: peer.verkey, routingKeys: peer.routingKeys, endpoint: peer.endpoint),
            tenant: tenant)
    }

    /// Commits a verified Response's event (the peer stored, `accepted`, the reply enqueued) with
    /// the message, in one transaction.
    private func accept(_ event: ConnectionStateMachine.Event, _ received: Received, tenant: TenantContext) async throws
        -> ConnectionRecord
    {
        let (record, receipt, mailboxUid) = (received.connection, received.receipt, received.mailboxUid)
        // First try, one round trip: `record` was read without a lock (by the inbound pipeline,
        // or `apply`), and the update is computed from it behind a check that locks the row and
        // fails unless the row is still as read. The message is stored ahead, reviewed. A rerun
        // after a lost connection finds its first run's work: the message stored before, or the
        // row changed.
        do {
            let next = try await tenant.database.rerunnableTransaction { tx in
                try receipt?.claimQueued(in: tx, connection: record.id, status: MailboxMessage.reviewed)
                try tx.connections.lockAsRead(record)
                FaultPoint.reach("inbound.beforeCommit")
                return try Self.commit(event, to: record, reviewed: receipt == nil ? mailboxUid : nil, in: tx)
            }
            committed(next, tenant: tenant)
            return next
        } catch where ConnectionAsRead.changed(error) || InboundClaim.isStoredBefore(error) {
            // Changed since it was read, or a copy of the message stored before: decided on the
            // locked row below.
        }
        // Stored and applied together: a copy handled before changes nothing.
        // Handling a first copy marks it reviewed: the store ahead writes it reviewed at once.
        let (updated, changed) = try await tenant.database.transaction(
            storing: receipt, linkedTo: record.id, handledAs: MailboxMessage.reviewed
        ) { tx, claim -> (ConnectionRecord, Bool) in
            guard let current = try tx.connections.getForUpdate(record.id) else {
                throw AerieError.notFound("no connection \(record.id)")
            }
            if try !claim() { return (current, false) }
            FaultPoint.reach("inbound.beforeCommit")
            let toReview = receipt == nil ? mailboxUid : receipt?.uid(toMark: MailboxMessage.reviewed)
            return (try Self.commit(event, to: current, reviewed: toReview, in: tx), true)
        }
        guard changed else { return updated }
        committed(updated, tenant: tenant)
        return updated
    }

    /// Moves the connection to `failed` (problem report, bad response, undeliverable request, the
    /// peer's hangup), with the message that says so when there is one.
    @discardableResult
    public func fail(_ id: UUID, event: ConnectionStateMachine.Event, mailboxUid: UUID? = nil,
                     receipt: InboundReceipt? = nil, tenant: TenantContext) async throws -> ConnectionRecord {
        let (failed, changed) = try await tenant.database.transaction(storing: receipt, linkedTo: id) {
            tx, claim -> (ConnectionRecord, Bool) in
            guard let current = try tx.connections.getForUpdate(id) else { throw AerieError.notFound("no connection \(id)") }
            if try !claim() { return (current, false) }
            let transition = try ConnectionStateMachine.apply(event, to: current)
            guard transition.changes else { return (current, false) }
            return (try Self.run(transition, reviewed: receipt?.claimed?.uid ?? mailboxUid, in: tx), true)
        }
        if changed { committed(failed, tenant: tenant) }
        return failed
    }

    /// `connections.updateState`: applies Responses or problem reports waiting in the mailbox.
    public func updateState(_ id: UUID, tenant: TenantContext) async throws -> ConnectionRecord {
        var record = try await load(id, tenant: tenant)
        guard !record.isInviter, record.state == .requested || record.state == .responded else { return record }
        let waiting = try await tenant.database.transaction { tx in
            try tx.mailbox.list(connectionId: id, status: MailboxMessage.received, type: nil, limit: 50)
        }
        let handled = Set([
            ConnectionMessages.responseType, ConnectionMessages.problemReportType,
            ConnectionMessages.notificationProblemReportType,
        ] + DIDExchangeMessages.responseTypes + DIDExchangeMessages.problemReportTypes)
        for message in waiting where handled.contains(message.type) {
            if let updated = try? await apply(message.payload, toConnection: id, mailboxUid: message.uid, tenant: tenant) {
                record = updated
                if record.state != .requested { break }
            }
        }
        return record
    }

    /// Waits while the connection is `requested` or `responded`, at most `timeout` (then
    /// `timeout`, the connection left as it is). Woken by this process's commit of the next state
    /// through `watch` (registered before that commit could happen), or by another process's commit
    /// this process hears (`commits`), then reading the store. The store is also read every
    /// `waitPollInterval`, doubling up to `maxWaitPollInterval`, while nothing is heard (every
    /// `heardWaitPollInterval` while commits are heard), for a change this process missed.
    func waitWhilePending(
        _ start: ConnectionRecord, watch: ConnectionStateWaits.Watch, timeout: Duration, tenant: TenantContext
    ) async throws -> ConnectionRecord {
        var record = start
        let deadline = ContinuousClock.now + timeout
        var interval = Self.waitPollInterval
        while Self.isPending(record) {
            watch.saw(record.state)
            guard ContinuousClock.now < deadline else {
                throw AerieError(
                    .timeout, "the inviter did not answer within \(timeout.components.seconds) s",
                    data: [
                        "connectionId": .string(record.id.lowercasedString),
                        "state": .int(Int64(record.state.number)), "stateName": .string(record.state.rawValue),
                    ])
            }
            let hears = commits?.hearsCommits ?? false
            if let changed = await watch.next(timeout: hears ? Self.heardWaitPollInterval : interval) {
                record = changed
            } else {
                interval = min(interval * 2, Self.maxWaitPollInterval)
                try Task.checkCancellation()
                do {
                    record = try await load(record.id, tenant: tenant)
                } catch let error as AerieError where error.code == .notFound {
                    // Deleted meanwhile (its last state, heard before this process's own wake-up
                    // or committed by another process): the wait ends on that state.
                    record.state = .deleted
                }
            }
        }
        return record
    }

    public func load(_ id: UUID, tenant: TenantContext) async throws -> ConnectionRecord {
        guard let record = try await tenant.database.read({ try $0.connections.get(id) }) else { throw Self.notFound(id) }
        return record
    }

    /// `connections.get`: the connection's view as text, from the server's cache when it holds it
    /// (`TenantDatabase.connectionView`: this server's writes show at once, other servers'
    /// within their NOTIFY's latency); an open invitation of ours adds its limits, uses and
    /// refusals (`InvitationUses`). For answers only; decisions read the row in their transaction.
    func view(_ id: UUID, tenant: TenantContext) async throws -> JSONText {
        guard let view = try await tenant.database.connectionView(id) else { throw Self.notFound(id) }
        // Any other connection is answered as the ready text, unparsed (the hot read): only a
        // text naming an open invitation's role and state is parsed to be sure, and extended.
        guard Self.mayBeOpenInvitation(view) else { return view }
        let value = try view.value
        guard value["role"]?.stringValue == ConnectionRecord.Role.inviter.rawValue,
            value["stateName"]?.stringValue == ConnectionRecord.State.initialized.rawValue,
            case .object(var fields) = value
        else { return view }
        let uses = try await tenant.database.read { try InvitationUseStore($0).get(id).limits } ?? InvitationUses()
        if case .object(let added) = uses.json { fields.merge(added) { _, new in new } }
        return JSONText { $0.value(.object(fields)) }
    }

    /// Whether a view's text holds the members of an open invitation (`"role":"inviter"` and
    /// `"stateName":"initialized"`, as the view writes them; inside a string their quotes would be
    /// escaped). A cheap filter: a match is checked on the parsed value.
    static func mayBeOpenInvitation(_ view: JSONText) -> Bool {
        view.bytes.contains(Self.inviterRole) && view.bytes.contains(Self.initializedState)
    }

    private static let inviterRole = Array(#""role":"inviter""#.utf8)
    private static let initializedState = Array(#""stateName":"initialized""#.utf8)

    private static func notFound(_ id: UUID) -> AerieError {
        AerieError.notFound("no connection \(id.lowercasedString)")
    }
}
