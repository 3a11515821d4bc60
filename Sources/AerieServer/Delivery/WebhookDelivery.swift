import AerieCore
import AerieCrypto
import AerieStore
import AerieTransport
import Foundation
import Logging
import ServiceLifecycle
import Synchronization

/// Backend webhooks (issue 14 item 4, schema/0025): POSTs each backend's events, read from the
/// durable log after the webhook's cursor, in position order and in batches, signed with the
/// webhook's secret (`Aerie-Signature: t=…,v1=…`, see `WebhookSecret`). A 2xx answer moves the
/// cursor past the batch; anything else (or no answer) waits a backoff (doubling, capped) and
/// sends the same events again. At-least-once: a crash between the receiver's 2xx and the cursor
/// write sends that batch again, so receivers deduplicate by position.
///
/// Any number of servers run this; a lease in the webhook's row (`aerie.claim_webhooks`, SKIP
/// LOCKED) lets one at a time deliver for a backend, and a server restarting takes its own
/// leases back at once. Woken when positions advance (only while some webhook exists), on a
/// poll for retries that came due, and when a delivery ends. Each backend's delivery runs on its
/// own, so a slow or dead receiver delays only its own backend.
final class WebhookDelivery: Service, Sendable {
    struct Settings: Sendable {
        /// Events per POST at most.
        var batchSize = 100
        /// First retry delay, doubled per failed attempt up to `maxBackoff`.
        var backoff: Duration = .seconds(2)
        var maxBackoff: Duration = .seconds(600)
        /// How long a server owns a backend's webhook per round; above the POST's total timeout.
        var leaseSeconds = 60
        /// Webhooks delivered at once by this process, each on its own (the HTTP client needs as
        /// many threads, or a slow receiver would hold a thread others wait for).
        var concurrency = 8
        var poll: Duration = .seconds(1)
        /// The poll while no webhook exists: a webhook set here wakes delivery at once, and the
        /// server that sets one delivers it; this poll only finds those another server set.
        var idlePoll: Duration = .seconds(30)
    }

    static let signatureHeader = "Aerie-Signature"

    let webhooks: BackendWebhooks
    let http: HTTPDelivery
    let masterKeys: MasterKeyring
    let instance: String
    let settings: Settings
    let logger: Logger
    /// How each event is shown: exactly as `events.subscribe` streams it.
    let presenters: EventPresenters
    private let wakeups: AsyncStream<Void>.Continuation
    private let wakes: AsyncStream<Void>
    /// Whether any webhook existed at the last poll (or was set here since): position wakes
    /// cost a claim statement only then.
    private let anyWebhook = Atomic<Bool>(false)
    /// The backends whose delivery runs in this process now (at most `settings.concurrency`).
    private let running = Mutex<Set<BackendID>>([])

    init(
        webhooks: BackendWebhooks, http: HTTPDelivery, masterKeys: MasterKeyring, instance: String, settings: Settings, logger: Logger,
        presenters: EventPresenters
    ) {
        self.presenters = presenters
        self.webhooks = webhooks
        self.http = http
        self.masterKeys = masterKeys
        self.instance = instance
        self.settings = settings
        self.logger = logger
        (wakes, wakeups) = AsyncStream.makeStream(of: Void.self, bufferingPolicy: .bufferingNewest(1))
    }

    /// Whether some webhook exists (as this process last read or set it): then events are
    /// numbered as they are committed rather than on the sequencer's tick.
    var hasWebhooks: Bool { anyWebhook.load(ordering: .relaxed) }

    /// New positions were assigned: deliver them if some webhook exists.
    func positionsAdvanced() {
        if anyWebhook.load(ordering: .relaxed) { wakeups.yield() }
    }

    /// A webhook was set in this process: deliver without waiting for the poll.
    func webhookSet() {
        anyWebhook.store(true, ordering: .relaxed)
        wakeups.yield()
    }

    func run() async throws {
        await cancelWhenGracefulShutdown {
            await withDiscardingTaskGroup { group in
                group.addTask {
                    let clock = ContinuousClock()
                    var lastPoll: ContinuousClock.Instant? = nil
                    repeat {
                        // While none exists, polled every `idlePoll` only (or as soon as one is set here).
                        if self.anyWebhook.load(ordering: .relaxed) || lastPoll.map({ clock.now - $0 >= self.settings.idlePoll }) ?? true {
                            lastPoll = clock.now
                            if let exists = try? await self.webhooks.anyExist() {
                                self.anyWebhook.store(exists, ordering: .relaxed)
                                if exists { self.wakeups.yield() }
                            }
                        }
                    } while (try? await Task.sleep(for: self.settings.poll)) != nil
                }
                for await _ in self.wakes {
                    await self.startDue(in: &group)
                }
                group.cancelAll()
            }
        }
        await http.shutdown()
    }

    /// Claims due webhooks for the free slots and starts each delivery on its own: one that
    /// waits on a slow receiver holds its slot and its backend, never the others'. A delivery
    /// that ends frees its slot and wakes the loop, which claims again (that backend may have
    /// more events, others may be due).
    private func startDue(in group: inout DiscardingTaskGroup) async {
        while !Task.isCancelled {
            let busy = running.withLock { $0 }
            let free = settings.concurrency - busy.count
            guard free > 0 else { return }
            let claimed: [ClaimedWebhook]
            do {
                claimed = try await webhooks.claim(
                    instance: instance, leaseSeconds: settings.leaseSeconds, limit: free, running: busy)
            } catch {
                if !(error is CancellationError) {
                    logger.warning("webhook claim failed", metadata: ["error": "\(String(reflecting: error))"])
                }
                return
            }
            for webhook in claimed {
                running.withLock { _ = $0.insert(webhook.backend) }
                group.addTask {
                    await self.deliver(webhook)
                    self.running.withLock { _ = $0.remove(webhook.backend) }
                    self.wakeups.yield()
                }
            }
            if claimed.count < free { return }
        }
    }

    private func deliver(_ webhook: ClaimedWebhook) async {
        do {
            let events = try await webhooks.events(for: webhook, limit: settings.batchSize)
            guard let last = events.last else {
                try await webhooks.release(webhook, instance: instance)
                return
            }
            let secret: WebhookSecret
            do {
                secret = try openSecret(webhook)
            } catch {
                try await fail(webhook, "the webhook secret cannot be opened with this server's master keys; set the webhook again")
                return
            }
            let body = Self.body(backend: webhook.backend, events: events, presenters: presenters)
            let timestamp = Int64(Date().timeIntervalSince1970)
            let headers = ["\(Self.signatureHeader): \(secret.header(timestamp: timestamp, body: body))"]
            do {
                let response = try await http.post(body, to: webhook.url, contentType: "application/json", headers: headers)
                if (200..<300).contains(response.status) {
                    try await webhooks.delivered(webhook, upTo: last.position, instance: instance)
                } else {
                    try await fail(webhook, "the receiver answered HTTP \(response.status)")
                }
            } catch let failure as HTTPDelivery.Failure {
                try await fail(webhook, failure.message)
            }
        } catch is CancellationError {
            // Shutting down: give the lease back so another server (or this one restarted) goes on.
            try? await webhooks.release(webhook, instance: instance)
        } catch {
            logger.warning(
                "webhook delivery failed", metadata: ["backend": "\(webhook.backend)", "error": "\(String(reflecting: error))"])
            try? await webhooks.release(webhook, instance: instance)
        }
    }

    private func openSecret(_ webhook: ClaimedWebhook) throws -> WebhookSecret {
        guard let fingerprint = MasterKey.fingerprint(ofWrapped: webhook.secretWrapped), let key = masterKeys.key(fingerprint: fingerprint)
        else { throw CryptoError(.wrongMasterKey, "no master key for the webhook secret") }
        return try key.unwrapWebhookSecret(webhook.secretWrapped, backendID: webhook.backend.rawValue, generation: webhook.generation)
    }

    private func fail(_ webhook: ClaimedWebhook, _ reason: String) async throws {
        let delay = Self.backoff(attempts: webhook.attempts, base: settings.backoff, cap: settings.maxBackoff)
        try await webhooks.failed(webhook, error: reason, retryAfterSeconds: delay, instance: instance)
    }

    /// Seconds before the next attempt after `attempts` earlier failures and one more now.
    static func backoff(attempts: Int, base: Duration, cap: Duration) -> Double {
        let seconds = MailboxRetentionService.seconds(base) * pow(2, Double(min(max(attempts, 0), 30)))
        return min(seconds, MailboxRetentionService.seconds(cap))
    }

    /// `{"backendId", "events": [{tenantId, position, kind, …}], "fromPosition", "toPosition"}`:
    /// each event exactly as `events.subscribe` pushes it.
    static func body(backend: BackendID, events: [LoggedEvent], presenters: EventPresenters) -> [UInt8] {
        JSONValue.object([
            "backendId": .string(backend.rawValue),
            "events": .array(events.map(presenters.logged)),
            "fromPosition": .int(events.first?.position ?? 0),
            "toPosition": .int(events.last?.position ?? 0),
        ]).serialized()
    }
}
