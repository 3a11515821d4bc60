import AerieCore
import Foundation
import Synchronization

/// How fast strangers' Requests are taken (`InboundSenders.areStrangers`): a token bucket per
/// tenant and invitation (`AERIE_INVITATION_REQUESTS_PER_MINUTE`) and per tenant and sender key
/// (`AERIE_SENDER_REQUESTS_PER_MINUTE`), each allowing a burst of one minute's worth. Checked in
/// memory once the sender is authenticated and before anything is stored or signed, so a flood
/// costs what opening it costs. Per process: with several servers behind one endpoint, a
/// stranger gets each limit once per server.
///
/// Bounded: at most `maxBuckets` buckets of each kind. A full table first drops the buckets that
/// have refilled (they hold nothing a new bucket would not); if every one is still in use, a key
/// without a bucket is admitted untracked (at most one sweep a second). A stranger with many sender
/// keys is still held by the invitation's bucket, and only tenants make invitations.
final class RequestRateLimits: Sendable {
    struct Limits: Sendable, Equatable {
        /// Requests per minute to one invitation of one tenant; 0 = no limit.
        var perInvitation: Int
        /// Requests per minute from one sender key to one tenant; 0 = no limit.
        var perSender: Int
    }

    static let maxBuckets = 10_000

    fileprivate struct Key: Hashable {
        var tenant: TenantID
        var subject: String
    }

    fileprivate struct Bucket {
        var tokens: Double
        var updated: ContinuousClock.Instant
    }

    fileprivate struct Table {
        var buckets: [Key: Bucket] = [:]
        var lastSweep: ContinuousClock.Instant?
    }

    private struct Tables {
        var invitations = Table()
        var senders = Table()
    }

    let limits: Limits
    private let tables = Mutex(Tables())

    init(_ limits: Limits) {
        self.limits = limits
    }

    /// Takes one Request to `invitation` from `sender` if both buckets allow it (neither is
    /// charged otherwise); else the limit that refused it.
    func admit(
        tenant: TenantID, invitation: UUID, sender: String, now: ContinuousClock.Instant = .now
    ) -> InboundRefusal.Reason? {
        let invitationKey = Key(tenant: tenant, subject: invitation.lowercasedString)
        let senderKey = Key(tenant: tenant, subject: sender)
        let limits = self.limits
        return tables.withLock { tables in
            let senderOK = tables.senders.take(senderKey, perMinute: limits.perSender, now: now, charge: false)
            guard senderOK else { return .senderRate }
            guard tables.invitations.take(invitationKey, perMinute: limits.perInvitation, now: now, charge: true) else {
                return .invitationRate
            }
            _ = tables.senders.take(senderKey, perMinute: limits.perSender, now: now, charge: true)
            return nil
        }
    }

    /// Buckets held now (tests).
    var bucketCount: (invitations: Int, senders: Int) {
        tables.withLock { ($0.invitations.buckets.count, $0.senders.buckets.count) }
    }
}

extension RequestRateLimits.Table {
    /// Whether `key`'s bucket has a token, refilled at `perMinute` a minute up to `perMinute`;
    /// `charge` takes it.
    fileprivate mutating func take(
        _ key: RequestRateLimits.Key, perMinute: Int, now: ContinuousClock.Instant, charge: Bool
    ) -> Bool {
        guard perMinute > 0 else { return true }
        let capacity = Double(perMinute)
        var bucket: RequestRateLimits.Bucket
        if let found = buckets[key] {
            bucket = found
            bucket.tokens = min(capacity, bucket.tokens + Self.seconds(now - bucket.updated) * capacity / 60)
            bucket.updated = now
        } else {
            guard makeRoom(now: now, capacity: capacity) else { return true }
            bucket = .init(tokens: capacity, updated: now)
        }
        guard bucket.tokens >= 1 else {
            buckets[key] = bucket
            return false
        }
        if charge { bucket.tokens -= 1 }
        buckets[key] = bucket
        return true
    }

    /// Room for one more bucket: drops the refilled ones when the table is full (once a second at
    /// most). False: still full.
    private mutating func makeRoom(now: ContinuousClock.Instant, capacity: Double) -> Bool {
        guard buckets.count >= RequestRateLimits.maxBuckets else { return true }
        if let lastSweep, now - lastSweep < .seconds(1) { return false }
        lastSweep = now
        buckets = buckets.filter { _, bucket in
            bucket.tokens + Self.seconds(now - bucket.updated) * capacity / 60 < capacity
        }
        return buckets.count < RequestRateLimits.maxBuckets
    }

    private static func seconds(_ duration: Duration) -> Double {
        let (seconds, attoseconds) = duration.components
        return Double(seconds) + Double(attoseconds) / 1e18
    }
}
