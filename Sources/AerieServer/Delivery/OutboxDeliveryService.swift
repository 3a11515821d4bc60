import AerieCore
import AerieStore
import AerieTransport
import Foundation
import Logging
import Metrics
import ServiceLifecycle
import Synchronization

/// Delivers the durable outbox: the rows this process's transactions enqueued under its lease,
/// handed over by the store after their commit (`OutboxWakeup`: no scan, no claim), and rows due
/// across all tenants (through `aerie.due_outbox`: retries, other writers' rows, leases that ran
/// out), each claimed, posted and marked under its own tenant. A row is marked sent only after a 2xx, so a
/// restart resends what was not confirmed; failures retry with capped exponential backoff (or the
/// peer's `Retry-After`) until the retry horizon ends (`DeliveryRetry`), after which the row
/// fails and the plugins' connection-failure hooks are told; a refusal no retry can change
/// (`HTTPDelivery.Failure.permanent`, or a 4xx answer other than 408, 425 and 429) fails at once.
/// At-least-once: a crash between the peer's 2xx and the mark sends the row again after restart
/// (the envelope, and so the message `@id`, is the same every time, so peers can de-duplicate).
///
/// Deliveries run side by side within `DeliveryLimits` (slots per destination address, fewer for
/// a destination that stops answering): each one that ends wakes the loop, which starts more as
/// slots free up; no delivery waits for another's peer.
struct OutboxDeliveryService: Service {
    let database: AerieDatabase
    let contexts: TenantContexts
    let delivery: HTTPDelivery
    let limits: DeliveryLimits
    /// Reads return-routed replies.
    let inbound: InboundProcessor
    /// Told of a connection whose message failed for good.
    let hooks: ConnectionHooks
    let wakeup: OutboxWakeup
    /// This server in its leases: a restart takes back its previous run's leases at once.
    let instance: String
    /// How long a claimed row is this server's (`AERIE_DELIVERY_LEASE_SECONDS`): longer than one
    /// delivery can take (HTTPDelivery's total timeout plus queueing). A server that dies holding
    /// a lease leaves the row to the others once it runs out (or to its own restart at once).
    let leaseSeconds: Int
    /// Returns once this process has bound its DIDComm address (throws if it could not).
    let ready: @Sendable () async throws -> Void
    let retry: DeliveryRetry
    let pollInterval: Duration
    let logger: Logger
    /// Whether a poll scans: every `pollInterval` while rows are known to wait, else every 10 s
    /// (another server's rows whose lease ran out wait that much longer).
    let schedule = OutboxPollSchedule(idleInterval: .seconds(10))
    /// The marks of delivered rows without a message, written in batches.
    let marks = OutboxSentMarks()
    /// The marks of delivered rows with a message, written at once, together when they meet.
    let messageMarks = OutboxMessageMarks()

    func run() async throws {
        await releasePreviousLeases()
        let wakeup = self.wakeup
        let limits = self.limits
        let pollInterval = self.pollInterval
        let schedule = self.schedule
        // A slot is free: scan again only if the last scan left due rows behind (new rows wake
        // the loop themselves, retries the poller); else start a handed row if one waits for it.
        let finished: @Sendable (DeliveryLimits.Slot, DeliveryLimits.Outcome) -> Void = { slot, outcome in
            if limits.finish(slot, outcome: outcome) {
                wakeup.outboxChanged()
            } else if wakeup.hasHanded {
                wakeup.wake()
            }
        }
        // The poller alone is cancelled at shutdown; running deliveries finish (each is bounded
        // by HTTPDelivery's total timeout) before the service returns.
        let poller = Task {
            while !Task.isCancelled {
                try? await Task.sleep(for: pollInterval)
                if schedule.scanDue() { wakeup.outboxChanged() }
            }
        }
        let (marks, database, logger) = (self.marks, self.database, self.logger)
        let marking = Task { await marks.run(database: database, logger: logger) }
        await withGracefulShutdownHandler {
            await withDiscardingTaskGroup { group in
                for await _ in wakeup.stream {
                    for (row, slot) in wakeup.takeHanded({ limits.start($0) }) {
                        group.addTask {
                            finished(slot, await deliver(row.item, tenant: row.tenant))
                        }
                    }
                    guard wakeup.takeScanRequest() else { continue }
                    let (rows, mayHaveLeftRows) = await dueRows()
                    schedule.scanned(foundRows: !rows.isEmpty || mayHaveLeftRows)
                    let started = rows.compactMap { row in limits.start(row.destination).map { (row, $0) } }
                    limits.scanned(leftRows: mayHaveLeftRows || started.count < rows.count)
                    for (row, slot) in started {
                        group.addTask {
                            finished(slot, await deliver(row.id, tenant: row.tenant))
                        }
                    }
                }
            }
        } onGracefulShutdown: {
            wakeup.finish()
        }
        poller.cancel()
        // Every delivery has ended: the marks gathered are written, then rows handed over but
        // not started go back to the scans of the other servers now rather than when their lease
        // ends.
        marks.finish()
        await marking.value
        if wakeup.hasHanded {
            _ = try? await database.releaseOutboxLeases(instance: instance)
        }
        await delivery.shutdown()
    }

    /// Due rows for the free slots, skipping destinations at their limit, and whether the scan
    /// may have left due rows behind (no free slot, a full answer, busy destinations skipped, or
    /// the scan failed).
    func dueRows() async -> (rows: [(tenant: TenantID, id: UUID, destination: String)], mayHaveLeftRows: Bool) {
        let available = limits.available
        guard available > 0 else { return ([], true) }
        do {
            // A few more than the free slots: rows of a destination that fills up meanwhile are skipped.
            let busy = limits.busyDestinations
            let asked = available + 16
            let rows = try await database.dueOutbox(limit: asked, busyDestinations: busy)
            return (rows, rows.count >= asked || !busy.isEmpty)
        } catch {
            logger.warning("outbox poll failed", metadata: ["error": "\(String(reflecting: error))"])
            return ([], true)
        }
    }

    /// Takes back the leases of this instance's previous run, once this process holds its
    /// DIDComm address (`ready`): a second process started by mistake with a live server's
    /// instance name fails to bind and so never takes that server's leases. Nothing happens when
    /// the address is not bound within 30 s.
    func releasePreviousLeases() async {
        let ready = self.ready
        let bound = await withTaskGroup(of: Bool.self) { group in
            group.addTask { (try? await ready()) != nil }
            group.addTask {
                try? await Task.sleep(for: .seconds(30))
                return false
            }
            defer { group.cancelAll() }
            return await group.next() ?? false
        }
        guard bound else { return }
        do {
            let released = try await database.releaseOutboxLeases(instance: instance)
            if released > 0 { logger.info("took back outbox leases of the previous run", metadata: ["rows": "\(released)"]) }
            // From now on new rows are inserted under this run's lease and handed over.
            wakeup.startLeasing()
        } catch {
            logger.warning("outbox leases not released", metadata: ["error": "\(String(reflecting: error))"])
        }
    }

    /// `aerie_delivery_attempts_total{outcome}` and `aerie_delivery_duration_seconds{outcome}`:
    /// `sent` (2xx), `http_error` (any other answer), `unreachable` (no answer) or `refused`
    /// (the address policy or the URL rules forbid the endpoint: not retried).
    func recordAttempt(_ outcome: String, since started: ContinuousClock.Instant) {
        attemptCounts(outcome).increment()
        attemptDurations(outcome).record(duration: ContinuousClock.now - started)
    }

    private let attemptCounts = MetricHandles { values in
        Counter(label: "aerie_delivery_attempts_total", dimensions: [("outcome", values[0])])
    }
    private let attemptDurations = MetricHandles { values in
        Metrics.Timer(label: "aerie_delivery_duration_seconds", dimensions: [("outcome", values[0])])
    }

    /// Delivers a scanned row once claimed (the claim checks that the tenant is active).
    func deliver(_ id: UUID, tenant tenantID: TenantID) async -> DeliveryLimits.Outcome {
        do {
            let contexts = self.contexts
            guard
                let item = try await database.claimOutbox(
                    id, tenant: tenantID, leaseSeconds: leaseSeconds, instance: instance,
                    sealer: { try contexts.sealer(for: $0, wrappedDataKey: $1) })
            else { return .answered(address: nil) }
            return await deliver(item, tenant: tenantID)
        } catch {
            logger.warning("outbox delivery error", metadata: ["outbox": "\(id)", "error": "\(String(reflecting: error))"])
            return .answered(address: nil)
        }
    }

    /// Posts a row this process holds the lease of (claimed, or enqueued under its lease), then
    /// marks it sent or records the failure (`DeliveryRetry` says when it is tried again or
    /// whether it fails). The tenant's context is built only when a failure needs it. Answers
    /// how the destination fared, for `DeliveryLimits.finish`.
    func deliver(_ item: OutboxItem, tenant tenantID: TenantID) async -> DeliveryLimits.Outcome {
        let id = item.id
        var outcome = DeliveryLimits.Outcome.answered(address: nil)
        do {
            let failure: String
            var permanent = false
            var retryAfter: Duration?
            let started = ContinuousClock.now
            do {
                let response = try await delivery.post(item.envelope, to: item.endpoint)
                outcome = .answered(address: response.address)
                recordAttempt((200..<300).contains(response.status) ? "sent" : "http_error", since: started)
                if (200..<300).contains(response.status) {
                    FaultPoint.reach("outbox.afterPost")
                    // A return-routed reply is stored and handled before the row is marked sent,
                    // so a crash between the two sends the row again instead of losing the reply.
                    if response.body.first == UInt8(ascii: "{") {
                        _ = await inbound.process(response.body)
                    }
                    if item.messageUid == nil {
                        marks.add(id, tenant: tenantID)
                    } else {
                        try await messageMarks.mark(id, tenant: tenantID, database: database)
                    }
                    return outcome
                }
                failure = "the endpoint answered HTTP \(response.status)"
                permanent = DeliveryRetry.refusesForGood(response.status)
                retryAfter = response.retryAfter
            } catch let error as HTTPDelivery.Failure {
                recordAttempt(error.permanent ? "refused" : "unreachable", since: started)
                outcome = error.timedOut ? .timedOut(address: error.address) : .answered(address: error.address)
                failure = error.message
                permanent = error.permanent
            }
            let attempts = item.attempts + 1
            // A refusal no retry can change (address policy, unusable URL, a 4xx) fails at once.
            let next =
                permanent
                ? nil
                : retry.nextAttempt(
                    attempts: attempts, createdAt: item.createdAt, now: Date(), carriesMessage: item.messageUid != nil,
                    retryAfter: retryAfter)
            let giveUp = next == nil
            if let next { schedule.retry(at: next) }
            guard let tenant = try await contexts.context(for: tenantID, tokenHash: nil, logger: logger) else { return outcome }
            try await tenant.database.transaction {
                try $0.outbox.recordFailure(id, attempts: attempts, nextAttemptAt: next, error: failure)
            }
            tenant.logger.info(
                "delivery failed", metadata: ["outbox": "\(id)", "attempts": "\(attempts)", "error": "\(failure)", "final": "\(giveUp)"])
            if giveUp, let connectionId = item.connectionId {
                await hooks.connectionFailed(
                    connectionId,
                    reason: permanent
                        ? "delivery refused: \(failure)"
                        : "delivery failed after \(attempts) attempts in "
                            + "\(retry.horizon(carriesMessage: item.messageUid != nil).components.seconds) s: \(failure)",
                    tenant: tenant)
            }
        } catch {
            logger.warning("outbox delivery error", metadata: ["outbox": "\(id)", "error": "\(String(reflecting: error))"])
        }
        return outcome
    }
}
