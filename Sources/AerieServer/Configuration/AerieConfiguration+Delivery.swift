extension AerieConfiguration {
    /// Sending the outbox to peers: how many at once, how long a server owns a row, when a failed
    /// send is tried again and when it stops.
    public struct Delivery: Sendable {
        /// Whether this process delivers the outbox (tests turn it off to hold messages back).
        public var enabled = true
        /// `AERIE_DELIVERY_HORIZON_SECONDS`: how long a peer's outage (no answer, 5xx, 408, 429)
        /// is retried before a message (and a connection still being set up) fails: 72 hours.
        public var horizon: Duration = .seconds(72 * 3600)
        /// `AERIE_DELIVERY_PROTOCOL_HORIZON_SECONDS`: the same for what carries no message of the
        /// tenant's (handshake Requests and Responses, pings): an hour.
        public var protocolHorizon: Duration = .seconds(3600)
        /// `AERIE_DELIVERY_BACKOFF_MS`: first retry delay, doubled each attempt up to `maxBackoff`.
        public var backoff: Duration = .seconds(2)
        /// `AERIE_DELIVERY_MAX_BACKOFF_SECONDS`: the longest wait between two tries (and the most
        /// a peer's `Retry-After` is honoured): an hour.
        public var maxBackoff: Duration = .seconds(3600)
        /// How often the outbox is polled besides the in-process wake-up, while rows are known to
        /// wait (`OutboxPollSchedule`; else every 10 s).
        public var pollInterval: Duration = .seconds(1)
        /// `AERIE_DELIVERY_LEASE_SECONDS`: how long a server owns an outbox row it is sending; the
        /// rows of a server that died are sent by another once their lease ends. Keep it above
        /// the longest send (15 s).
        public var leaseSeconds = 120
        /// `AERIE_DELIVERY_CONCURRENCY`: deliveries running at once in this process (each holds a
        /// blocking transfer thread while it waits for the peer).
        public var concurrency = 32
        /// `AERIE_DELIVERY_PER_DESTINATION`: deliveries running at once to one destination address
        /// (`DeliveryLimits`: all ports of one host), so a slow or tarpitting peer holds at most
        /// this many of the process's slots and delays only its own rows.
        public var perDestination = 4

        public init() {}

        var retry: DeliveryRetry {
            DeliveryRetry(backoff: backoff, maxBackoff: maxBackoff, horizon: horizon, protocolHorizon: protocolHorizon)
        }
    }

    /// Backend webhooks: which URLs are taken and how events are posted to them.
    public struct Webhooks: Sendable {
        /// `AERIE_WEBHOOK_ALLOW_HTTP=1`: backend webhooks may be http:// URLs too (development and
        /// tests; the default accepts https:// only).
        public var allowHTTP = false
        /// `AERIE_WEBHOOK_BATCH_SIZE`: events per webhook POST at most.
        public var batchSize = 100
        /// `AERIE_WEBHOOK_BACKOFF_MS`: first webhook retry delay, doubled per failed attempt up to
        /// `maxBackoff`.
        public var backoff: Duration = .seconds(2)
        /// The longest wait between two webhook attempts (10 minutes).
        public var maxBackoff: Duration = .seconds(600)
        /// A webhook POST's total timeout (10 s); its connect timeout is 5 s.
        public var timeout: Duration = .seconds(10)

        public init() {}

        var settings: WebhookDelivery.Settings {
            WebhookDelivery.Settings(batchSize: batchSize, backoff: backoff, maxBackoff: maxBackoff)
        }
    }
}
