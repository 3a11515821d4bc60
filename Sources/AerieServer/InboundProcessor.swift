import AerieCore
import AerieCrypto
import AerieStore
import Foundation
import Logging

/// Turns a packed inbound DIDComm message into a stored, dispatched one: finds the tenant by
/// recipient key, unpacks with that tenant's wallet (once more for a `forward` addressed to
/// us), stores the message in the tenant's mailbox (once per recipient key and `@id`) and
/// hands it to the plugin that registered its type.
struct InboundProcessor: Sendable {
    let database: AerieDatabase
    let contexts: TenantContexts
    let router: MethodRouter
    let logger: Logger

    enum Outcome: Sendable, Equatable {
        case accepted
        case duplicate
        case rejected(status: Int, reason: String)

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
        let outcome: Outcome
        do {
            outcome = try await process(envelope, depth: 0)
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
        let threadId = message["~thread"]?["thid"]?.stringValue.map { String($0.prefix(256)) }
        let recipient = unpacked.recipientVerkey
        let sender = unpacked.senderVerkey
        let stored = try await tenant.database.transaction { tx -> (uid: UUID, inserted: Bool)? in
            let connection = try tx.connections.findByMyVerkey(recipient)
            // A connection deleted while this message was being opened: its key is gone too (the
            // lookup above waited for the deleting transaction's lock), so the message is refused.
            if connection == nil, try tx.keys.sealedSecret(verkey: recipient) == nil { return nil }
            return try tx.mailbox.insert(
                MailboxMessage(
                    connectionId: connection?.id, recipientVerkey: recipient, senderVerkey: sender, messageId: messageId,
                    type: type, threadId: threadId, payload: message))
        }
        guard let stored else { return .rejected(status: 400, reason: "no recipient of this message is known here") }
        guard stored.inserted else { return .duplicate }
        let inbound = InboundMessage(
            type: type, id: messageId, body: message, senderVerkey: sender, recipientVerkey: recipient,
            uid: stored.uid.uuidString.lowercased())
        do {
            try await route.handler(inbound, tenant)
        } catch {
            // Stored: the tenant can still see it and retry with connections.updateState.
            tenant.logger.warning(
                "inbound message handler failed",
                metadata: ["type": "\(type)", "uid": "\(inbound.uid)", "error": "\(String(reflecting: error))"])
        }
        return .accepted
    }
}
