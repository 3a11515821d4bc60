import AerieCore
import AerieCrypto
import Foundation

/// DID Rotate 1.0 (RFC 0794) both ways, on established connections.
///
/// Ours (`rotateDID`): a new key and peer DID (with the tenant's current endpoint) are stored
/// with the connection's pending rotation in the transaction that queues the `rotate`, sent from
/// the old key as every message. Until the peer answers, the old key still sends and both keys
/// receive (the inbound lookup finds the connection by either). The peer's `ack` makes the new
/// DID and key the connection's and deletes the old key; its problem report deletes the new key
/// and leaves the old DID. Everything is in the rows, so a restart between `rotate` and `ack`
/// loses nothing.
///
/// Theirs: a `rotate` from the connection's peer (the pipeline refuses anyone else) whose `to_did`
/// resolves replaces their DID, key, endpoint and routing keys in the transaction that stores it
/// and queues the `ack`, packed to their old key (the RFC sends it to the prior DID); otherwise a
/// problem report with the RFC's code, and nothing changes. A `hangup` fails the connection. We
/// send none: a tenant that is done with a peer deletes the connection, and the delete plugin's
/// notice (`connections.delete {notify}`) is the one way Aerie tells a peer so (the RFC makes a
/// hangup optional).
extension ConnectionService {
    /// What `connections.rotateDid` answers.
    public struct Rotation: Encodable, Sendable, Hashable {
        public var connectionId: String
        /// `completed` (the peer acknowledged) or `pending` (no answer yet when `wait` was false).
        public var state: String
        /// The new DID as the connection records it (`pwDid`; a did:peer:4 in its short form).
        public var did: String
        public var previousDid: String?
        /// Our `rotate` message among the connection's sent messages.
        public var uid: String
        public var messageId: String

        enum CodingKeys: String, CodingKey {
            case connectionId, state, did, previousDid, uid
            case messageId = "@id"
        }
    }

    /// Rotates our DID on the tenant's established connection `id` (a service may call this to
    /// tell the peer a new endpoint). Sends `rotate` and, with `wait`, waits at most `timeout` for
    /// the peer's answer: `completed`, or `conflict` with the peer's problem (the old DID stays),
    /// or `timeout` (the rotation stays pending; a later `ack` completes it). A rotation already
    /// pending on the connection is a `conflict`, so of two concurrent calls one wins.
    /// The new DID is in `method` (did:peer:4 by default, as AIP 2.0 prefers): the `rotate`
    /// carries it whole (a did:peer:4 in its long form), the connection records its short form.
    public func rotateDID(
        _ id: UUID, method: PeerDIDMethod = .peer4, wait: Bool = true, timeout: Duration, tenant: TenantContext
    ) async throws -> Rotation {
        let record = try await load(id, tenant: tenant)
        try Self.requireRotatable(record)
        let key = try await AerieError.mappingCrypto { try await tenant.keys.makeKey() }
        let own = try AerieError.mappingCrypto { try method.make(verkey: try Base58.decode(key.verkey), serviceEndpoint: endpoint()) }
        let did = own.shortForm
        let message = DIDRotateMessages.rotate(to: own.did)
        let messageId = message["@id"]?.stringValue ?? ""
        let rotation = PendingRotation(did: did, verkey: key.verkey, messageId: messageId)
        guard
            let sent = try await sender.send(message, on: id, tenant: tenant, alongside: { current, tx in
                try Self.requireRotatable(current)
                try key.store(in: tx)
                var next = current
                next.rotation = rotation
                try tx.connections.updateQueued(next)
                try Self.recordRotationEvent(next, role: "rotating", state: "sent", in: tx)
                return true
            })
        else { throw AerieError.internalError(details: "a rotate without a condition sent nothing") }
        committed(sent.connection, tenant: tenant)
        let answer = Rotation(
            connectionId: id.lowercasedString, state: "pending", did: did, previousDid: sent.connection.myDid,
            uid: sent.uid.lowercasedString, messageId: messageId)
        guard wait else { return answer }
        let outcome = try await waitFor(id, timeout: timeout, tenant: tenant) {
            try await tenant.database.read { tx -> RotationOutcome? in
                guard let current = try tx.connections.get(id) else { throw AerieError.notFound("no connection \(id.lowercasedString)") }
                if current.rotation?.messageId == messageId { return nil }
                if current.myVerkey == rotation.verkey { return .completed }
                let report = try tx.mailbox.receivedReply(
                    connectionId: id, threadId: messageId, type: DIDRotateMessages.problemReportType)
                return .refused(report?.payload)
            }
        }
        switch outcome {
        case .completed?:
            var done = answer
            done.state = "completed"
            return done
        case .refused(let report)?:
            let code = report?["description"]?["code"]?.stringValue.map { String($0.prefix(200)) }
            var data: [String: JSONValue] = [
                "connectionId": .string(id.lowercasedString), "did": .string(did), "@id": .string(messageId),
            ]
            if let code { data["problemCode"] = .string(code) }
            if let report { data["reason"] = .string(ConnectionMessages.problemReason(report)) }
            throw AerieError(
                .conflict, "the peer refused the rotation (\(code ?? "no reason given")); the connection keeps its DID",
                data: data)
        case nil:
            throw AerieError(
                .timeout,
                "the peer did not answer the rotation within \(timeout.components.seconds) s; it completes when the peer's ack arrives",
                data: ["connectionId": .string(id.lowercasedString), "did": .string(did), "@id": .string(messageId)])
        }
    }

    enum RotationOutcome: Sendable {
        case completed
        case refused(JSONValue?)
    }

    /// Only an established connection with no rotation of ours under way rotates.
    static func requireRotatable(_ record: ConnectionRecord) throws {
        guard record.isEstablished else {
            throw AerieError(
                .conflict,
                "the connection is not established (state \(record.state.number), \(record.state.rawValue)): only an established connection rotates its DID",
                data: [
                    "connectionId": .string(record.id.lowercasedString), "state": .int(Int64(record.state.number)),
                    "stateName": .string(record.state.rawValue),
                ])
        }
        if let pending = record.rotation {
            throw AerieError(
                .conflict, "a DID rotation of this connection waits for the peer's answer",
                data: [
                    "connectionId": .string(record.id.lowercasedString), "did": .string(pending.did),
                    "@id": .string(pending.messageId),
                ])
        }
    }

    // MARK: - The peer's answers to ours

    /// The peer's `ack` of our pending `rotate`: the new DID and key become the connection's and
    /// the old key is deleted (nothing reaches it any more), in the transaction that stores the
    /// ack, so a crash leaves both or neither (the peer, not answered, sends the ack again). An
    /// ack of anything else is only stored.
    func rotationAcknowledged(_ message: InboundMessage, tenant: TenantContext) async throws {
        guard let connection = message.connection, message.sender == .peer else { return }
        let answered = DIDRotateMessages.threads(message.body)
        let done = try await tenant.database.transaction(storing: message.receipt, linkedTo: connection.id) {
            tx, claim -> ConnectionRecord? in
            guard let current = try tx.connections.getForUpdate(connection.id), try claim() else { return nil }
            guard let rotation = current.rotation, answered.contains(rotation.messageId) else { return nil }
            var next = current
            let retired = current.myVerkey
            next.myDid = rotation.did
            next.myVerkey = rotation.verkey
            next.rotation = nil
            try tx.connections.updateQueued(next)
            if let retired { _ = try tx.keys.remove(verkey: retired) }
            try Self.recordRotationEvent(next, role: "rotating", state: "completed", in: tx)
            FaultPoint.reach("inbound.beforeCommit")
            return next
        }
        if let done { committed(done, tenant: tenant) }
    }

    /// The peer's problem report on our pending `rotate`: the rotation ends, its new key is
    /// deleted, the connection keeps its DID. A report on anything else is only stored.
    func rotationRefused(_ message: InboundMessage, tenant: TenantContext) async throws {
        guard let connection = message.connection, message.sender == .peer else { return }
        let answered = DIDRotateMessages.threads(message.body)
        let done = try await tenant.database.transaction(storing: message.receipt, linkedTo: connection.id) {
            tx, claim -> ConnectionRecord? in
            guard let current = try tx.connections.getForUpdate(connection.id), try claim() else { return nil }
            guard let rotation = current.rotation, answered.contains(rotation.messageId) else { return nil }
            var next = current
            next.rotation = nil
            try tx.connections.updateQueued(next)
            _ = try tx.keys.remove(verkey: rotation.verkey)
            try Self.recordRotationEvent(next, role: "rotating", state: "refused", in: tx)
            return next
        }
        if let done { committed(done, tenant: tenant) }
    }

    // MARK: - The peer's rotation

    /// A `rotate` of the connection's peer: acknowledged and applied, or answered with a problem
    /// report; either in the transaction that stores it, so a redelivered `rotate` is answered
    /// once. The `ack` goes to the peer's prior DID (packed before the change, the sender
    /// checks the connection is still as packed for); later messages go to the new one.
    func receiveRotate(_ message: InboundMessage, tenant: TenantContext) async throws {
        guard let connection = message.connection, message.sender == .peer, connection.isEstablished,
            let rotateId = message.id, PeerFieldLimits.id.violation(rotateId, name: "@id") == nil
        else { return }
        let rotate = DIDRotateMessages.readRotate(message.body)
        let peer: ConnectionMessages.PeerConnection
        switch rotate.peer {
        case .success(let resolved):
            peer = resolved
        case .failure(let refusal):
            try await refuseRotate(message, refusal, did: rotate.toDid, to: rotateId, on: connection.id, tenant: tenant)
            return
        }
        do {
            try await checkDestination(peer.endpoint)
        } catch let error as AerieError where error.code != .busy {
            let refusal = DIDRotateMessages.Refusal(.docUnsupported, "the new DID's endpoint cannot be reached: \(error.message)")
            try await refuseRotate(message, refusal, did: rotate.toDid, to: rotateId, on: connection.id, tenant: tenant)
            return
        }
        let receipt = message.receipt
        let sent = try await sender.send(DIDRotateMessages.ack(of: rotateId), on: connection.id, tenant: tenant) {
            current, tx in
            guard try receipt?.claim(in: tx, connection: current.id) ?? true else { return false }
            var next = current
            next.theirDid = peer.did
            next.theirVerkey = peer.verkey
            next.theirEndpoint = peer.endpoint
            next.theirRoutingKeys = peer.routingKeys
            try tx.connections.updateQueued(next)
            try Self.recordRotationEvent(next, role: "observing", state: "completed", in: tx)
            return true
        }
        if let sent { committed(sent.connection, tenant: tenant) }
    }

    private func refuseRotate(
        _ message: InboundMessage, _ refusal: DIDRotateMessages.Refusal, did: String?, to rotateId: String, on id: UUID,
        tenant: TenantContext
    ) async throws {
        let receipt = message.receipt
        let report = DIDRotateMessages.problemReport(refusal, did: did, to: rotateId)
        _ = try await sender.send(report, on: id, tenant: tenant) { current, tx in
            guard try receipt?.claim(in: tx, connection: current.id) ?? true else { return false }
            try Self.recordRotationEvent(current, role: "observing", state: "refused", in: tx)
            return true
        }
    }

    /// The peer's `hangup`: it will not answer any more; the connection fails (state 0) with
    /// that reason and its event, its data kept (RFC 0794: a hangup deletes nothing).
    func receiveHangup(_ message: InboundMessage, tenant: TenantContext) async throws {
        guard let connection = message.connection, message.sender == .peer,
            ConnectionStateMachine.accepts(.hangup, to: connection)
        else { return }
        _ = try await fail(connection.id, event: .hangup, receipt: message.receipt, tenant: tenant)
    }

    /// Logs a rotation step (schema/0050: a `rotation` event, pushed and in the event log) in `tx`.
    static func recordRotationEvent(_ record: ConnectionRecord, role: String, state: String, in tx: any TenantTransaction) throws {
        let data: JSONValue = [
            "connectionId": .string(record.id.lowercasedString), "role": .string(role), "state": .string(state),
            "pairwiseDID": record.myDid.map { .string(String($0.prefix(512))) } ?? .null,
        ]
        try tx.sql.execute("SELECT aerie.record_rotation_event($1::jsonb)", [.text(String(decoding: data.serialized(), as: UTF8.self))])
    }
}
