import AerieCore
import AerieStore
import Foundation
import Logging
import ServiceLifecycle

/// Tries again the inbound messages whose handling failed (stored unhandled by
/// `InboundProcessor.handle`): at start and every `interval`, each when its backoff is due, until
/// the processor's attempt limit, after which the message's connection fails with the reason.
/// A suspended tenant's messages wait until it is active again.
struct InboundRecoveryService: Service {
    let database: AerieDatabase
    let contexts: TenantContexts
    let processor: InboundProcessor
    let interval: Duration
    let logger: Logger

    static let batchSize = 100

    func run() async throws {
        try? await cancelWhenGracefulShutdown {
            while !Task.isCancelled {
                do {
                    let retried = try await recoverDue()
                    if retried > 0 { logger.info("retried unhandled inbound messages", metadata: ["count": "\(retried)"]) }
                } catch {
                    logger.warning("inbound recovery failed", metadata: ["error": "\(String(reflecting: error))"])
                }
                try await Task.sleep(for: interval)
            }
        }
    }

    /// One pass over the due messages of every tenant; answers how many were tried.
    @discardableResult
    func recoverDue() async throws -> Int {
        let due = try await database.unhandledMailbox(limit: Self.batchSize)
        var tried = 0
        for (tenantID, uid) in due {
            guard let tenant = try await contexts.context(for: tenantID, tokenHash: nil, logger: logger),
                let stored = try await tenant.database.transaction({ tx in try tx.mailbox.get(uid) })
            else { continue }
            guard let route = processor.router.inboundRoute(for: stored.type) else { continue }
            // Authenticated again, as on arrival: the connection may have changed meanwhile. A
            // message that no longer passes is given up (its attempts are spent).
            let recipient = try await tenant.database.read { tx in
                try tx.connections.inboundRecipient(verkeys: [stored.recipientVerkey])
            }
            guard let (connection, sender) = try await processor.authenticate(
                sender: stored.senderVerkey, connection: recipient?.connection, route: route, tenant: tenant)
            else {
                _ = try await tenant.database.transaction { tx in
                    try tx.mailbox.recordHandlingFailure(
                        stored, error: "the sender is not this connection's peer", maxAttempts: 1, backoffSeconds: 1)
                }
                continue
            }
            var linked = stored
            linked.connectionId = connection.id
            let inbound = InboundMessage(
                type: stored.type, id: stored.messageId, body: stored.payload, senderVerkey: stored.senderVerkey,
                recipientVerkey: stored.recipientVerkey, uid: uid,
                receipt: InboundReceipt(message: linked), connection: connection, sender: sender,
                recipientSealedSecret: recipient?.sealedSecret)
            _ = await processor.handle(inbound, route: route, tenant: tenant)
            tried += 1
        }
        return tried
    }
}
