import AerieCore
import AerieStore
import AerieTransport
import Foundation
import Logging
import ServiceLifecycle
import Synchronization

/// Wakes the delivery service as soon as a transaction has enqueued something.
final class OutboxWakeup: OutboxSignal {
    let stream: AsyncStream<Void>
    private let continuation: AsyncStream<Void>.Continuation

    init() {
        (stream, continuation) = AsyncStream<Void>.makeStream(bufferingPolicy: .bufferingNewest(1))
    }

    func outboxChanged() { continuation.yield() }
    func finish() { continuation.finish() }
}

/// Delivers the durable outbox: rows due across all tenants (through `aerie.due_outbox`), each
/// read, posted and marked under its own tenant. A row is marked sent only after a 2xx, so a
/// restart resends what was not confirmed; failures retry with exponential backoff up to a
/// limit, after which the row (and a connection still being set up) fails.
struct OutboxDeliveryService: Service {
    let database: AerieDatabase
    let contexts: TenantContexts
    let delivery: HTTPDelivery
    let inbound: InboundProcessor
    /// Whose delivery-failure hooks a connection's final failure runs (the connections plugin's).
    let router: MethodRouter
    let wakeup: OutboxWakeup
    let maxAttempts: Int
    let backoff: Duration
    let pollInterval: Duration
    let logger: Logger

    static let batchSize = 32
    /// Longer than one delivery can take (HTTPDelivery's total timeout plus queueing).
    static let leaseSeconds = 120
    static let maxBackoff: Duration = .seconds(300)

    func run() async throws {
        let wakeup = self.wakeup
        let pollInterval = self.pollInterval
        await withGracefulShutdownHandler {
            await withDiscardingTaskGroup { group in
                group.addTask {
                    while !Task.isCancelled {
                        try? await Task.sleep(for: pollInterval)
                        wakeup.outboxChanged()
                    }
                }
                for await _ in wakeup.stream {
                    await deliverDue()
                }
                group.cancelAll()
            }
        } onGracefulShutdown: {
            wakeup.finish()
        }
        await delivery.shutdown()
    }

    func deliverDue() async {
        let due: [(tenant: TenantID, id: UUID)]
        do {
            due = try await database.dueOutbox(limit: Self.batchSize)
        } catch {
            logger.warning("outbox poll failed", metadata: ["error": "\(String(reflecting: error))"])
            return
        }
        await withDiscardingTaskGroup { group in
            for row in due {
                group.addTask { await deliver(row.id, tenant: row.tenant) }
            }
        }
    }

    func deliver(_ id: UUID, tenant tenantID: TenantID) async {
        do {
            // The claim checks that the tenant is active; its context is built only when a failure needs it.
            guard let item = try await database.claimOutbox(id, tenant: tenantID, leaseSeconds: Self.leaseSeconds) else { return }
            let failure: String
            do {
                let response = try await delivery.post(item.envelope, to: item.endpoint)
                if (200..<300).contains(response.status) {
                    try await database.markOutboxSent(id, tenant: tenantID)
                    if response.body.first == UInt8(ascii: "{") {
                        _ = await inbound.process(response.body)
                    }
                    return
                }
                failure = "the endpoint answered HTTP \(response.status)"
            } catch let error as HTTPDelivery.Failure {
                failure = error.message
            }
            let attempts = item.attempts + 1
            let giveUp = attempts >= maxAttempts
            let delay = min(backoff * (1 << min(attempts - 1, 20)), Self.maxBackoff)
            let next = giveUp ? nil : Date().addingTimeInterval(Double(delay.components.seconds))
            guard let tenant = try await contexts.context(for: tenantID, tokenHash: nil, logger: logger) else { return }
            try await tenant.database.transaction {
                try $0.outbox.recordFailure(id, attempts: attempts, nextAttemptAt: next, error: failure)
            }
            tenant.logger.info(
                "delivery failed", metadata: ["outbox": "\(id)", "attempts": "\(attempts)", "error": "\(failure)", "final": "\(giveUp)"])
            if giveUp, let connectionId = item.connectionId {
                await router.deliveryFailed(
                    connectionId, reason: "delivery failed after \(attempts) attempts: \(failure)", tenant: tenant)
            }
        } catch {
            logger.warning("outbox delivery error", metadata: ["outbox": "\(id)", "error": "\(String(reflecting: error))"])
        }
    }
}
