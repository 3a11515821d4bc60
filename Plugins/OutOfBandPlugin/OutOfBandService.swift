import AerieCore
import AerieCrypto
import Foundation

/// The invitee side of RFC 0434: runs seed 004's decision table (`OutOfBandDecision`) for an
/// invitation, with the connections plugin's handshakes for new connections, handshake-reuse for
/// existing ones, and the attached request delivered to the tenant's mailbox.
public struct OutOfBandService: Sendable {
    public let handshakes: any ConnectionHandshakes
    /// How long `accept` and `sendReuse` wait by default for the inviter (reuse accepted,
    /// handshake completed).
    public let defaultTimeout: Duration
    /// The enabled plugins that take attached requests over (a credential offer...).
    public let attachedHandlers: [any AttachedRequestHandler]

    /// Bounds of a caller's `timeoutSeconds`.
    public static let timeoutRange = 1...120

    public init(
        handshakes: any ConnectionHandshakes, defaultTimeout: Duration = .seconds(15),
        attachedHandlers: [any AttachedRequestHandler] = []
    ) {
        self.handshakes = handshakes
        self.defaultTimeout = defaultTimeout
        self.attachedHandlers = attachedHandlers
    }

    /// What was done with an invitation.
    public struct Outcome: Sendable {
        public var row: OutOfBandDecision.Row?
        public var sameInvitation: Bool
        public var record: OutOfBandRecord?
        public var connection: ConnectionRecord?
        public var match: InvitationMatch?
        public var attachedMessage: JSONValue?
    }

    // MARK: - accept

    /// Seed 004 from end to end. Every check that can refuse the invitation runs before anything
    /// is stored or sent.
    public func accept(
        _ invitation: Invitation, label: String?, didMethod: PeerDIDMethod? = nil, wait: Bool, timeout: Duration?,
        tenant: TenantContext
    )
        async throws -> Outcome
    {
        try Self.requireOutOfBand(invitation)
        let attached = try attachedRequest(of: invitation)
        let existing: ExistingConnection?
        switch try await known(invitation, tenant: tenant) {
        case .sameInvitation(let outcome): return outcome
        case .new(let match): existing = match
        }
        do {
            return try await run(
                invitation, attached: attached, existing: existing, label: label, didMethod: didMethod, wait: wait, timeout: timeout,
                tenant: tenant)
        } catch let error as AerieError where error.code == .conflict {
            // Another call stored this invitation first (its @id is unique per tenant).
            guard let same = try await sameInvitation(invitation, tenant: tenant) else { throw error }
            return same
        }
    }

    private func run(
        _ invitation: Invitation, attached: JSONValue?, existing: ExistingConnection?, label: String?, didMethod: PeerDIDMethod?,
        wait: Bool, timeout: Duration?, tenant: TenantContext
    ) async throws -> Outcome {
        let established = existing.flatMap { Self.isEstablished($0.record) ? $0 : nil }
        let row = OutOfBandDecision.decide(
            .init(
                handshakeProtocols: !invitation.handshakeProtocols.isEmpty, attachment: attached != nil,
                connectionExists: established != nil))
        let limit = timeout ?? defaultTimeout

        switch row.decision {
        case .invalid:
            throw AerieError(
                .invalidInvitation, "the out-of-band invitation has neither handshake_protocols nor requests~attach",
                field: "handshake_protocols", data: ["row": .int(Int64(row.number))])
        case .connect, .connectThenRunAttachment:
            return try await connect(
                invitation, row: row, attached: attached, label: label, didMethod: didMethod, wait: wait, timeout: limit,
                tenant: tenant)
        case .connectionless:
            let (connection, record) = try await createConnectionless(invitation, row: row, attached: attached, tenant: tenant)
            return Outcome(row: row, sameInvitation: false, record: record, connection: connection, attachedMessage: attached)
        case .reuse, .reuseThenRunAttachment:
            guard let established else { preconditionFailure("the table reuses only an existing connection") }
            var outcome = try await sendReuse(
                invitation, over: established.record, row: row, attached: attached, wait: wait, timeout: limit, tenant: tenant)
            outcome.match = established.match
            return outcome
        case .runAttachmentOnExisting:
            guard let established, let attached else { preconditionFailure("row 7 has a connection and an attachment") }
            let (connection, record) = try await runAttachment(
                attached, invitation: invitation, on: established.record, row: row, tenant: tenant)
            return Outcome(
                row: row, sameInvitation: false, record: record, connection: connection, match: established.match,
                attachedMessage: attached)
        }
    }

    /// What the tenant already has for an invitation.
    enum Known {
        /// Seed 003: the very same invitation (`@id`) again, answered from what was done the
        /// first time: no second connection, no reuse message.
        case sameInvitation(Outcome)
        /// A new invitation, and the stored connection it matches (by public DID or key), if any.
        case new(ExistingConnection?)
    }

    /// Reads the invitation's record, or else the connection it matches, in one transaction.
    func known(_ invitation: Invitation, tenant: TenantContext) async throws -> Known {
        let handshakes = self.handshakes
        let found = try await tenant.database.transaction {
            tx -> (record: OutOfBandRecord?, connection: ConnectionRecord?, existing: ExistingConnection?) in
            if let record = try tx.outOfBand.find(invitationId: invitation.id, forUpdate: false) {
                return (record, try record.connectionId.flatMap { try tx.connections.get($0) }, nil)
            }
            return (nil, nil, try handshakes.existingConnection(for: invitation, in: tx))
        }
        if var record = found.record {
            var connection = found.connection
            // Stored by a version that committed the record before connecting, and stopped
            // between the two: connect now.
            if record.state == .connecting, let pending = connection, pending.state == .initialized {
                connection = try await handshakes.connect(pending.id, label: nil, didMethod: nil, tenant: tenant)
            }
            // A handshake that finished after the first call stopped waiting.
            if let connection {
                record = try await settle(record, connection: connection, tenant: tenant)
            }
            return .sameInvitation(
                Outcome(
                    row: OutOfBandDecision.row(record.decisionRow), sameInvitation: true, record: record,
                    connection: connection, match: .id, attachedMessage: record.attachedMessage))
        }
        if let existing = found.existing, existing.match == .id {
            // Made from this invitation by connections.createWithInvite / accept.
            return .sameInvitation(
                Outcome(
                    row: nil, sameInvitation: true, record: nil, connection: existing.record, match: .id,
                    attachedMessage: try AttachedMessage.extract(from: invitation)))
        }
        return .new(found.existing)
    }

    func sameInvitation(_ invitation: Invitation, tenant: TenantContext) async throws -> Outcome? {
        guard case .sameInvitation(let outcome) = try await known(invitation, tenant: tenant) else { return nil }
        return outcome
    }

    // MARK: - Rows 3 and 5: a new connection through the handshake

    private func connect(
        _ invitation: Invitation, row: OutOfBandDecision.Row, attached: JSONValue?, label: String?, didMethod: PeerDIDMethod?,
        wait: Bool,
        timeout: Duration, tenant: TenantContext
    ) async throws -> Outcome {
        try handshakes.checkConnectable(invitation)
        let created = handshakes.newRecord(for: invitation)
        let start = OutOfBandRecord(
            invitationId: invitation.id, connectionId: created.id, decisionRow: row.number, state: Self.initialState(row),
            attachedMessage: attached, invitation: invitation.json)
        // The connection, the Request, this record and the attached request (kept for the backend
        // to act on once the connection is accepted) commit together: no half-done accept remains.
        let (made, existing) = try await handshakes.createAndConnect(
            created, label: label, didMethod: didMethod, tenant: tenant
        ) { connection, tx in
            var stored = start
            stored.attachedMessageUid = try attached.map {
                try storeAttached($0, invitationId: invitation.id, on: connection, in: tx)
            }
            try tx.outOfBand.insert(stored)
            FaultPoint.reach("oob.afterRecord")
        }
        if existing {
            // Another call (connections.accept, or a concurrent outOfBand.accept) made it first.
            guard let same = try await sameInvitation(invitation, tenant: tenant) else {
                throw AerieError(.conflict, "the invitation is being accepted by another call")
            }
            return same
        }
        var record = try await tenant.database.transaction { tx in try tx.outOfBand.find(invitationId: invitation.id, forUpdate: false) }
            ?? start
        var connection = made
        if wait {
            connection = try await handshakes.waitForHandshake(connection, timeout: timeout, tenant: tenant)
        }
        record = try await settle(record, connection: connection, tenant: tenant)
        return Outcome(row: row, sameInvitation: false, record: record, connection: connection, attachedMessage: attached)
    }

    /// Marks the record done or failed once its connection is.
    private func settle(_ record: OutOfBandRecord, connection: ConnectionRecord, tenant: TenantContext) async throws
        -> OutOfBandRecord
    {
        guard let transition = OutOfBandStateMachine.apply(
            .connectionSettled(connection.state, failureReason: connection.failureReason), to: record)
        else { return record }
        let updated = record.taking(transition)
        // A record deleted meanwhile (`delete`) stays deleted: its update finds no row.
        _ = try await tenant.database.transaction { tx in
            try run(transition.actions, record: updated, connection: connection, message: nil, in: tx)
        }
        return updated
    }

    // MARK: - Row 4: no handshake, the connection from the service's keys

    /// The connection an attachment-only invitation makes at once (state 4, seed 004): our new
    /// pairwise key, their key, endpoint and routing keys from the invitation's service. The
    /// attached request goes to the mailbox in the same transaction.
    func createConnectionless(
        _ invitation: Invitation, row: OutOfBandDecision.Row, attached: JSONValue?, tenant: TenantContext
    ) async throws -> (ConnectionRecord, OutOfBandRecord) {
        let (endpoint, theirKey) = try invitation.usableService()
        let verkey = try await AerieError.mappingCrypto { try await tenant.keys.createKey() }
        let did = try AerieError.mappingCrypto { KeyReference.unqualifiedDID(verkey: try Base58.decode(verkey)) }
        var connection = handshakes.newRecord(for: invitation)
        connection.myDid = did
        connection.myVerkey = verkey
        connection.theirDid = invitation.services.first(where: \.isUsable)?.did
        connection.theirVerkey = theirKey
        connection.theirEndpoint = endpoint
        connection.theirRoutingKeys = invitation.routingKeys
        var record = OutOfBandRecord(
            invitationId: invitation.id, connectionId: connection.id, decisionRow: row.number, state: Self.initialState(row),
            attachedMessage: attached, invitation: invitation.json)
        let handshakes = self.handshakes
        let stored = try await tenant.database.transaction { [connection, record] tx -> (ConnectionRecord, UUID?) in
            let accepted = try handshakes.move(.connectionless, connection, reviewed: nil, in: tx)
            let uid = try attached.map { try storeAttached($0, invitationId: invitation.id, on: accepted, in: tx) }
            var stored = record
            stored.attachedMessageUid = uid
            try tx.outOfBand.insert(stored)
            return (accepted, uid)
        }
        connection = stored.0
        record.attachedMessageUid = stored.1
        handshakes.committed(connection, tenant: tenant)
        return (connection, record)
    }

    // MARK: - Row 7: the attached request over the existing connection

    private func runAttachment(
        _ attached: JSONValue, invitation: Invitation, on connection: ConnectionRecord, row: OutOfBandDecision.Row,
        tenant: TenantContext
    ) async throws -> (ConnectionRecord, OutOfBandRecord) {
        var record = OutOfBandRecord(
            invitationId: invitation.id, connectionId: connection.id, decisionRow: row.number, state: Self.initialState(row),
            attachedMessage: attached, invitation: invitation.json)
        record.attachedMessageUid = try await tenant.database.transaction { [record] tx -> UUID in
            let uid = try storeAttached(attached, invitationId: invitation.id, on: connection, in: tx)
            var stored = record
            stored.attachedMessageUid = uid
            try tx.outOfBand.insert(stored)
            return uid
        }
        return (connection, record)
    }

    /// The invitation's attached request, decoded (`AttachedMessage`) and checked by the plugin
    /// that takes its type, before anything is stored.
    public func attachedRequest(of invitation: Invitation) throws -> JSONValue? {
        let attached = try AttachedMessage.extract(from: invitation)
        if let attached { try attachedHandler(for: attached)?.checkAttached(attached) }
        return attached
    }

    /// Stores the attached request in the connection's mailbox and hands it to the plugin that
    /// takes its type, in `tx`; answers its mailbox uid.
    func storeAttached(_ attached: JSONValue, invitationId: String, on connection: ConnectionRecord, in tx: any TenantTransaction)
        throws -> UUID
    {
        let uid = try tx.mailbox.insert(Self.mailboxEntry(attached, on: connection)).uid
        try attachedHandler(for: attached)?.receiveAttached(attached, invitationId: invitationId, on: connection, in: tx)
        return uid
    }

    private func attachedHandler(for attached: JSONValue) -> (any AttachedRequestHandler)? {
        let type = InboundMessage.normalizedType(attached["@type"]?.stringValue ?? "")
        return attachedHandlers.first { $0.attachedRequestTypes.contains(type) }
    }

    /// The attached request as a mailbox message of the connection, as if the inviter had sent it
    /// over it (`MS-103`, so `messages.download` shows it under the pairwise DID).
    static func mailboxEntry(_ attached: JSONValue, on connection: ConnectionRecord) -> MailboxMessage {
        let id = attached["@id"]?.stringValue ?? UUID.random().lowercasedString
        return MailboxMessage(
            connectionId: connection.id, recipientVerkey: connection.myVerkey ?? "", senderVerkey: connection.theirVerkey,
            messageId: id, type: InboundMessage.normalizedType(attached["@type"]?.stringValue ?? ""),
            threadId: attached["~thread"]?["thid"]?.stringValue ?? id,
            payload: attached)
    }

    // MARK: - Rows 6 and 8: handshake-reuse

    /// Sends a handshake-reuse for `invitation` over `connection` and, with `wait`, waits (bounded)
    /// for the inviter's handshake-reuse-accepted, which the inbound endpoint matches by
    /// `~thread.pthid`. On timeout the existing connection is left as it was.
    public func sendReuse(
        _ invitation: Invitation, over connection: ConnectionRecord, row: OutOfBandDecision.Row, attached: JSONValue?,
        wait: Bool, timeout: Duration, tenant: TenantContext
    ) async throws -> Outcome {
        try Self.requireOutOfBand(invitation)
        guard Self.isEstablished(connection), let myVerkey = connection.myVerkey, let route = Outbound.Route(peerOf: connection)
        else {
            throw AerieError(
                .conflict, "the connection is \(connection.state.rawValue); only an accepted connection can be reused",
                data: ["state": .int(Int64(connection.state.number)), "stateName": .string(connection.state.rawValue)])
        }
        let version = OutOfBandMessages.version(of: invitation)
        let message = OutOfBandMessages.reuse(invitationId: invitation.id, version: version)
        let outbound = try await Outbound.pack(message, from: .stored(verkey: myVerkey), to: route, tenant: tenant)
        var record = OutOfBandRecord(
            invitationId: invitation.id, connectionId: connection.id, decisionRow: row.number, state: Self.initialState(row),
            reuseMessageId: message["@id"]?.stringValue, attachedMessage: attached, invitation: invitation.json)
        record.attachedMessageUid = try await tenant.database.transaction { [record] tx -> UUID? in
            let uid = try attached.map { try storeAttached($0, invitationId: invitation.id, on: connection, in: tx) }
            var stored = record
            stored.attachedMessageUid = uid
            try tx.outOfBand.insert(stored)
            try outbound.enqueue(for: connection.id, in: tx)
            return uid
        }
        var current = connection
        if wait {
            (record, current) = try await waitForReuse(record, over: connection.id, timeout: timeout, tenant: tenant)
        }
        return Outcome(row: row, sameInvitation: false, record: record, connection: current, attachedMessage: attached)
    }

    /// Waits for the reuse's answer through the connections plugin's wait: woken when this
    /// process commits the reuse (or its refusal), else reading the record every 100 ms.
    private func waitForReuse(_ start: OutOfBandRecord, over connectionId: UUID, timeout: Duration, tenant: TenantContext)
        async throws -> (OutOfBandRecord, ConnectionRecord)
    {
        let invitationId = start.invitationId
        let answered = try await handshakes.waitFor(connectionId, timeout: timeout, tenant: tenant) {
            () async throws -> (OutOfBandRecord, ConnectionRecord)? in
            let (record, connection) = try await tenant.database.transaction { tx -> (OutOfBandRecord?, ConnectionRecord?) in
                let record = try tx.outOfBand.find(invitationId: invitationId, forUpdate: false)
                return (record, try record?.connectionId.flatMap { try tx.connections.get($0) })
            }
            guard let record, let connection else {
                throw AerieError.notFound("the connection was deleted while waiting for the reuse to be accepted")
            }
            // A refusal (problem report) is answered as state `failed` with the inviter's reason.
            return OutOfBandStateMachine.awaitsInviter(record.state) ? nil : (record, connection)
        }
        if let answered { return answered }
        let connection = try await handshakes.load(connectionId, tenant: tenant)
        throw AerieError(
            .timeout,
            "the inviter did not accept the reuse within \(timeout.components.seconds) s; the existing connection is unchanged",
            data: [
                "connectionId": .string(connection.id.lowercasedString),
                "invitationId": .string(invitationId),
                "state": .int(Int64(connection.state.number)), "stateName": .string(connection.state.rawValue),
            ])
    }

    // MARK: - Inbound

    /// A handshake-reuse-accepted: matched to the invitation by `~thread.pthid`, and to the
    /// connection it was sent over by the key it was packed to; the connection becomes `reused`.
    func reuseAccepted(_ message: InboundMessage, tenant: TenantContext) async throws {
        guard let pthid = OutOfBandMessages.parentThreadId(message.body) else {
            tenant.logger.info("handshake-reuse-accepted without ~thread.pthid ignored", metadata: ["uid": "\(message.uid.lowercasedString)"])
            return
        }
        let thid = message.body["~thread"]?["thid"]?.stringValue
        let reused = try await tenant.database.transaction { tx -> ConnectionRecord? in
            // Stored and applied together; a copy handled before changes nothing.
            guard try message.claim(in: tx) else { return nil }
            guard let record = try tx.outOfBand.find(invitationId: pthid, forUpdate: true) else { return nil }
            let connection = try record.connectionId.flatMap { try tx.connections.getForUpdate($0) }
            guard let transition = OutOfBandStateMachine.apply(
                .reuseAccepted(threadId: thid, connection: connection, recipientVerkey: message.recipientVerkey), to: record)
            else { return nil }
            return try run(transition.actions, record: record.taking(transition), connection: connection, message: message, in: tx)
        }
        if let reused {
            handshakes.committed(reused, tenant: tenant)
        } else {
            tenant.logger.info(
                "handshake-reuse-accepted matches no reuse sent over that connection", metadata: ["uid": "\(message.uid.lowercasedString)"])
        }
    }

    /// An out-of-band problem report: the reuse (or invitation) it names by `pthid` failed; the
    /// connection itself is left as it is.
    func problemReport(_ message: InboundMessage, tenant: TenantContext) async throws {
        guard let pthid = OutOfBandMessages.parentThreadId(message.body) else { return }
        let reason = Self.problemReason(message.body)
        let refused = try await tenant.database.transaction { tx -> ConnectionRecord? in
            guard try message.claim(in: tx) else { return nil }
            guard let record = try tx.outOfBand.find(invitationId: pthid, forUpdate: true) else { return nil }
            let connection = try record.connectionId.flatMap { try tx.connections.get($0) }
            guard let transition = OutOfBandStateMachine.apply(
                .problemReported(reason: reason, connection: connection, recipientVerkey: message.recipientVerkey), to: record)
            else { return nil }
            return try run(transition.actions, record: record.taking(transition), connection: connection, message: message, in: tx)
        }
        // The connection is unchanged, but a reuse wait reads the record this changed.
        if let refused { handshakes.committed(refused, tenant: tenant) }
    }

    static func problemReason(_ message: JSONValue) -> String {
        if let en = message["description"]?["en"]?.stringValue { return String(en.prefix(500)) }
        if let code = message["description"]?["code"]?.stringValue { return String(code.prefix(200)) }
        if let text = message["explain"]?.stringValue { return String(text.prefix(500)) }
        return "the inviter sent a problem report"
    }

    // MARK: - The state machine's driver

    /// Runs `OutOfBandStateMachine`'s actions in `tx`, `record` already in its new state; answers
    /// the connection as they left it.
    private func run(
        _ actions: [OutOfBandStateMachine.Action], record: OutOfBandRecord, connection: ConnectionRecord?,
        message: InboundMessage?, in tx: any TenantTransaction
    ) throws -> ConnectionRecord? {
        var connection = connection
        let reviewed = message.map { $0.receipt?.claimed?.uid ?? $0.uid }
        for action in actions {
            switch action {
            case .storeRecord:
                // False when the record was deleted meanwhile: it stays deleted.
                _ = try tx.outOfBand.update(record)
            case .reuseConnection:
                guard let current = connection else { preconditionFailure("a reuse is accepted over its connection") }
                connection = try handshakes.move(.reuseAccepted, current, reviewed: reviewed, in: tx)
            case .reviewMessage:
                if let reviewed { try tx.mailbox.updateStatus(reviewed, to: MailboxMessage.reviewed) }
            }
        }
        return connection
    }

    /// The state a record of `row` is stored in (never an invalid row's: it stores nothing).
    static func initialState(_ row: OutOfBandDecision.Row) -> OutOfBandRecord.State {
        guard let state = OutOfBandStateMachine.initialState(for: row.decision) else {
            preconditionFailure("an invalid invitation (row \(row.number)) stores no record")
        }
        return state
    }

    // MARK: - Helpers

    static func requireOutOfBand(_ invitation: Invitation) throws {
        guard invitation.kind == .outOfBand else {
            throw AerieError(
                .invalidInvitation,
                "this is a \(invitation.kind.rawValue) invitation, not an out-of-band one; use connections.accept",
                field: "invitation")
        }
    }

    static func isEstablished(_ connection: ConnectionRecord) -> Bool {
        connection.state == .accepted || connection.state == .reused
    }
}
