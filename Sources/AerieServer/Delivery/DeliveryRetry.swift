import Foundation

/// When a delivery that failed is tried again, and when it stops: a peer that is down, slow,
/// overloaded or whose mailbox is full (5xx, 408, 429, no answer) is retried with exponential
/// backoff from `backoff`, at most `maxBackoff` apart (a `Retry-After` the peer sent replaces
/// the computed wait, within the same bounds), until `horizon` after the row was enqueued;
/// the last try is at the horizon's end, and only a failure after it fails the message
/// (`MS-105`). A row that carries no message of the tenant's (a handshake Request or Response,
/// a ping, an ack) has the shorter `protocolHorizon`: a stranger's Request naming a dead
/// endpoint must not keep the tenant's outbox busy for days. A peer that refuses the message
/// itself (any other 4xx: Aerie answers 400 to a message that is not for it, 413 to one too
/// large) is not asked again.
struct DeliveryRetry: Sendable {
    /// `AERIE_DELIVERY_BACKOFF_MS`: the wait after the first failure, doubled per failure.
    var backoff: Duration
    /// `AERIE_DELIVERY_MAX_BACKOFF_SECONDS`: the longest wait between two tries.
    var maxBackoff: Duration
    /// `AERIE_DELIVERY_HORIZON_SECONDS`: how long after its enqueue a message is still tried.
    var horizon: Duration
    /// `AERIE_DELIVERY_PROTOCOL_HORIZON_SECONDS`: the same for a row carrying no message.
    var protocolHorizon: Duration

    /// Whether an HTTP answer refuses the message for good: a 4xx other than 408 (request
    /// timeout), 425 (too early) and 429 (too many requests).
    static func refusesForGood(_ status: Int) -> Bool {
        (400..<500).contains(status) && ![408, 425, 429].contains(status)
    }

    /// When to try again after `attempts` failed tries of a row enqueued at `createdAt`, or nil
    /// when its horizon has ended (the row fails).
    func nextAttempt(attempts: Int, createdAt: Date, now: Date, carriesMessage: Bool = true, retryAfter: Duration? = nil) -> Date? {
        let end = createdAt.addingTimeInterval(Self.seconds(horizon(carriesMessage: carriesMessage)))
        guard now < end else { return nil }
        let cap = max(backoff, maxBackoff)
        let computed = min(backoff * (1 << min(max(attempts - 1, 0), 30)), cap)
        let delay = retryAfter.map { min(max($0, .milliseconds(1)), cap) } ?? computed
        return min(now.addingTimeInterval(Self.seconds(delay)), end)
    }

    func horizon(carriesMessage: Bool) -> Duration {
        carriesMessage ? horizon : min(horizon, protocolHorizon)
    }

    static func seconds(_ duration: Duration) -> Double {
        let (seconds, attoseconds) = duration.components
        return Double(seconds) + Double(attoseconds) / 1e18
    }
}
