import AerieCore
import AerieCrypto
import AerieStore
import Foundation
import Logging
import Metrics

/// Turns a packed inbound DIDComm message into a handled one: finds the tenant by recipient
/// key, unpacks with that tenant's wallet (once more for a `forward` addressed to us) and hands
/// it to the plugin that registered its type, which stores it in the mailbox (once per recipient
/// key and `@id`) in the transaction that handles it (`handle`, `InboundReceipt`).
struct InboundProcessor: Sendable {
    let database: AerieDatabase
    let contexts: TenantContexts
    let router: MethodRouter
    var logger: Logger
    /// Handling attempts of one inbound message before its connection fails.
    let maxHandlingAttempts: Int
    /// The wait before the first retry of a failed handling; doubles per attempt.
    let handlingBackoff: Duration

    enum Outcome: Sendable, Equatable {
        case accepted
        case duplicate
        case rejected(status: Int, reason: String)

        /// `accepted`, `duplicate`, `refused` (4xx: not for us, does not open, unsupported) or
        /// `failed` (5xx: could not be stored; the peer may retry).
        var metricName: String {
            switch self {
            case .accepted: "accepted"
            case .duplicate: "duplicate"
            case .rejected(let status, _): status < 500 ? "refused" : "failed"
            }
        }

        var httpStatus: Int {
            switch self {
            case .accepted, .duplicate: 202
            case .rejected(let status, _): status
            }
        }
    }

    /// Recipients of one envelope looked up at most (the sender writes that list).
    static let maxRecipients = 20

    func process(_ envelope: [UInt8]) async -> Outcome {
        // Everything logged about this message, here and in the tenant's context, carries one id.
        var this = self
        this.logger[metadataKey: "request"] = "\(RequestID.make())"
        let logger = this.logger
        let outcome: Outcome
        do {
            outcome = try await this.process(envelope, depth: 0)
        } catch let error as AerieError {
            logger.warning("inbound message failed", metadata: ["error": "\(String(reflecting: error))"])
            outcome = .rejected(status: 500, reason: error.message)
        } catch {
            logger.warning("inbound message failed", metadata: ["error": "\(String(reflecting: error))"])
            outcome = .rejected(status: 500, reason: "internal error")
        }
        if case .rejected(let status, let reason) = outcome {
            logger.info("inbound message refused", metadata: ["status": "\(status)", "reason": "\(reason)"])
        }
        Counter(label: "aerie_inbound_messages_total", dimensions: [("outcome", outcome.metricName)]).increment()
        return outcome
    }

    private func process(_ envelope: [UInt8], depth: Int) async throws -> Outcome {
        let parsed: DIDCommEnvelope
        do {
            parsed = try DIDCommEnvelope(parsing: envelope)
        } catch {
            return .rejected(status: 400, reason: "not a DIDComm v1 envelope")
        }
        // The first recipient key held here names the tenant, which must be active.
        var owner: (tenant: TenantID, activeWrappedDataKey: [UInt8]?)?
        for kid in parsed.recipientKids.prefix(Self.maxRecipients) where (try? KeyReference.verkeyBase58(from: kid)) == kid {
            if let found = try await database.tenants.owner(ofVerkey: kid) {
                owner = found
                break
            }
        }
        guard let owner, let wrapped = owner.activeWrappedDataKey else {
            return .rejected(status: 400, reason: "no recipient of this message is known here")
        }
        let tenant = contexts.context(for: owner.tenant, wrappedDataKey: wrapped, logger: logger)
        let unpacked: UnpackedMessage
        do {
            unpacked = try await tenant.keys.unpack(envelope)
        } catch let error as CryptoError {
            return .rejected(status: 400, reason: "the message does not open: \(error.code)")
        }
        guard let message = try? JSONValue(parsing: unpacked.plaintext), case .object = message,
            let rawType = message["@type"]?.stringValue
        else { return .rejected(status: 400, reason: "the message is not a JSON object with @type") }
        let type = InboundMessage.normalizedType(rawType)

        if type == Forward.messageType {
            guard depth == 0, let inner = try? Forward.unwrap(unpacked.plaintext) else {
                return .rejected(status: 400, reason: "unusable forward message")
            }
            return try await process(inner.packed, depth: depth + 1)
        }
        guard let route = router.inboundRoute(for: type) else {
            return .rejected(status: 400, reason: "unsupported message type \(type.prefix(200))")
        }
        guard let messageId = message["@id"]?.stringValue, !messageId.isEmpty, messageId.utf8.count <= 256 else {
            return .rejected(status: 400, reason: "the message has no usable @id")
        }
        if let refusal = try await senderRefusal(unpacked, route: route, tenant: tenant) { return refusal }
        let threadId = message["~thread"]?["thid"]?.stringValue.map { String($0.prefix(256)) }
        let uid = UUID()
        let receipt = InboundReceipt(
            message: MailboxMessage(
                uid: uid, connectionId: nil, recipientVerkey: unpacked.recipientVerkey, senderVerkey: unpacked.senderVerkey,
                messageId: messageId, type: type, threadId: threadId, payload: message))
        let inbound = InboundMessage(
            type: type, id: messageId, body: message, senderVerkey: unpacked.senderVerkey,
            recipientVerkey: unpacked.recipientVerkey, uid: uid.uuidString.lowercased(), receipt: receipt)
        return await handle(inbound, route: route, tenant: tenant)
    }

    /// Sender authentication: a message addressed to a connection's pairwise key counts as the
    /// peer's only when it is authcrypted by the key the connection expects from the peer. Once
    /// the connection knows the peer's verkey, anything else (anoncrypt, or authcrypt by another
    /// key, whoever learnt our pairwise key from the DIDDoc or a mediator) is refused here:
    /// nothing is stored or handled, and the peer gets the endpoint's uniform 400. Before that
    /// (the handshake), only the handshake's answers may arrive (`InboundRoute.beforePeerKey`);
    /// their handlers check who sent them (the Response's `connection~sig` by the invitation key,
    /// its thread). A `forward` is routing, not a message of the peer: its inner message is
    /// checked the same way. ACA-Py does the same in effect: it resolves the connection from the
    /// (sender, recipient) key pair and its handlers refuse messages without a ready connection.
    private func senderRefusal(_ unpacked: UnpackedMessage, route: MethodRouter.InboundRoute, tenant: TenantContext) async throws
        -> Outcome?
    {
        let recipient = unpacked.recipientVerkey
        guard let expected = try await tenant.database.read({ try $0.connections.expectedSender(toMyVerkey: recipient) }) else {
            return nil
        }
        if let peer = expected.theirVerkey {
            guard let sender = unpacked.senderVerkey else {
                return .rejected(
                    status: 400, reason: "anoncrypt message to connection \(expected.connectionId): only the peer's authcrypted messages count")
            }
            guard sender == peer else {
                return .rejected(status: 400, reason: "message to connection \(expected.connectionId) not sent by its peer's key")
            }
            return nil
        }
        guard route.beforePeerKey else {
            return .rejected(
                status: 400, reason: "connection \(expected.connectionId) does not know its peer yet: \(route.type) refused")
        }
        return nil
    }

    /// Runs the plugin's handler, which stores the message in its own write transaction (see
    /// `InboundReceipt`); stores it here when the handler did not. A handler that fails leaves the
    /// message stored but unhandled, with the error, for `InboundRecoveryService` to try again
    /// (`maxHandlingAttempts`, then the connection fails with the reason). The peer gets 202 for
    /// a stored message either way: it has nothing to resend.
    func handle(_ inbound: InboundMessage, route: MethodRouter.InboundRoute, tenant: TenantContext) async -> Outcome {
        guard let receipt = inbound.receipt else { preconditionFailure("inbound messages carry their receipt") }
        do {
            try await route.handler(inbound, tenant)
            var claim = receipt.claimed
            if claim == nil {
                claim = try await tenant.database.transaction { tx in
                    _ = try receipt.claim(in: tx)
                    return receipt.claimed
                }
            }
            FaultPoint.reach("inbound.afterStore")
            return claim?.isToHandle == false ? .duplicate : .accepted
        } catch is InboundReceipt.RecipientGone {
            return .rejected(status: 400, reason: "no recipient of this message is known here")
        } catch {
            let reason = "\(inbound.type.split(separator: "/").suffix(2).joined(separator: "/")) could not be handled: \(Self.describe(error))"
            tenant.logger.warning(
                "inbound message handler failed",
                metadata: ["type": "\(inbound.type)", "uid": "\(inbound.uid)", "error": "\(String(reflecting: error))"])
            // A message the handler refuses (wrong thread, wrong state, bad signature) is kept but
            // not retried: only failures that can pass (database, internal) are, and only those
            // fail the connection in the end, so a stranger's message cannot fail a connection.
            let transient = Self.isTransient(error)
            do {
                let maxAttempts = transient ? self.maxHandlingAttempts : 1
                let backoff = Int(handlingBackoff.components.seconds)
                let recorded = try await tenant.database.transaction { tx -> (attempts: Int, connectionId: UUID?)? in
                    var message = receipt.message
                    if message.connectionId == nil {
                        message.connectionId = try tx.connections.findByMyVerkey(message.recipientVerkey)?.id
                    }
                    return try tx.mailbox.recordHandlingFailure(
                        message, error: reason, maxAttempts: maxAttempts, backoffSeconds: max(1, backoff))
                }
                if transient, let recorded, recorded.attempts >= maxAttempts, let connectionId = recorded.connectionId {
                    await router.connectionFailed(
                        connectionId, reason: "\(reason) (after \(recorded.attempts) attempts)", tenant: tenant)
                }
            } catch {
                // Not stored: the peer gets an error and may send it again.
                tenant.logger.warning("inbound handling failure not recorded", metadata: ["error": "\(String(reflecting: error))"])
                return .rejected(status: 500, reason: "the message could not be stored")
            }
            return .accepted
        }
    }

    static func isTransient(_ error: any Error) -> Bool {
        guard let error = error as? AerieError else { return true }
        return [.internalError, .unavailable, .busy, .timeout].contains(error.code)
    }

    /// A handler's failure as the connection's failure reason: an AerieError's safe message,
    /// never internal details.
    static func describe(_ error: any Error) -> String {
        (error as? AerieError)?.message ?? "internal error"
    }
}
