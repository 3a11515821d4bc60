import Foundation
import Synchronization

/// An in-process cache of what a server read from the database, per tenant: (tenant, key) ->
/// value. Two users: the session credential check (`CredentialCache`: token hash -> wrapped data
/// key) and `connections.get` (`ConnectionViewCache`: connection id -> its view's text). A hit spares the
/// call its database round trip.
///
/// Correctness rests on the `aerie_events` LISTEN (the schema's triggers NOTIFY every change a
/// user caches, in the writing transaction), which drives `listenerChanged` and `invalidate`:
/// - entries are served only while the listener is in place; when it drops, everything is
///   cleared and calls go to the database until it is back (events of the outage are lost);
/// - a change event removes the entries it names (one key, or every entry of its tenant);
/// - a database read may only fill the cache if no invalidation happened since it started
///   (`generation`), so a read that raced a change cannot put back what the change removed.
/// The tenant is part of every key: a lookup never sees another tenant's entries.
/// Bounded: two generations of at most `capacity / 2` entries each; a full current generation
/// becomes the previous one (the older one is dropped), and a hit in the previous one moves it
/// back, which keeps the recently used entries at a constant cost. Entries older than `maxAge`
/// are read again (a bound for what no NOTIFY could cover, e.g. a silently partitioned listener).
package final class TenantCache<Key: Hashable & Sendable, Value: Sendable>: Sendable {
    package enum Lookup {
        case hit(Value)
        /// Read the database; fill the cache only with this generation (nil: do not fill).
        case miss(generation: UInt64?)
    }

    private struct Entry {
        var value: Value
        var storedAt: ContinuousClock.Instant
    }

    private typealias Generation = [TenantID: [Key: Entry]]

    private struct State {
        var listening = false
        var generation: UInt64 = 0
        var current: Generation = [:]
        var currentCount = 0
        var previous: Generation = [:]
    }

    private let state = Mutex(State())
    private let halfCapacity: Int
    private let maxAge: Duration
    private let clock = ContinuousClock()

    /// `capacity` 0 turns the cache off (every call reads the database).
    package init(capacity: Int, maxAge: Duration) {
        self.halfCapacity = max(0, capacity / 2)
        self.maxAge = maxAge
    }

    /// A cache that holds nothing.
    package static var off: TenantCache { TenantCache(capacity: 0, maxAge: .zero) }

    package var isEnabled: Bool { halfCapacity > 0 }

    package func lookup(tenant: TenantID, key: Key) -> Lookup {
        guard isEnabled else { return .miss(generation: nil) }
        let now = clock.now
        return state.withLock { state in
            guard state.listening else { return .miss(generation: nil) }
            if let entry = state.current[tenant]?[key] {
                if now - entry.storedAt < maxAge { return .hit(entry.value) }
                state.current[tenant]?[key] = nil
                state.currentCount -= 1
            } else if let entry = state.previous[tenant]?[key] {
                state.previous[tenant]?[key] = nil
                if now - entry.storedAt < maxAge {
                    Self.insert(entry, tenant: tenant, key: key, into: &state, halfCapacity: halfCapacity)
                    return .hit(entry.value)
                }
            }
            return .miss(generation: state.generation)
        }
    }

    /// Stores what the database answered, unless something was invalidated since `generation`.
    package func store(tenant: TenantID, key: Key, value: Value, generation: UInt64) {
        let entry = Entry(value: value, storedAt: clock.now)
        state.withLock { state in
            guard state.listening, state.generation == generation else { return }
            Self.insert(entry, tenant: tenant, key: key, into: &state, halfCapacity: halfCapacity)
        }
    }

    /// Everything of `tenant` changed (or may have).
    package func invalidate(tenant: TenantID) {
        state.withLock { state in
            state.generation &+= 1
            if let removed = state.current.removeValue(forKey: tenant) { state.currentCount -= removed.count }
            state.previous[tenant] = nil
        }
    }

    /// These keys of `tenant` changed (or may have).
    package func invalidate(tenant: TenantID, keys: some Sequence<Key>) {
        state.withLock { state in
            state.generation &+= 1
            // Most changes are to connections nobody read through the cache: nothing to look up
            // key by key (each NOTIFY and each transaction that wrote a connection come here).
            guard state.current[tenant] != nil || state.previous[tenant] != nil else { return }
            for key in keys {
                if state.current[tenant]?.removeValue(forKey: key) != nil { state.currentCount -= 1 }
                state.previous[tenant]?[key] = nil
            }
            if state.current[tenant]?.isEmpty == true { state.current[tenant] = nil }
            if state.previous[tenant]?.isEmpty == true { state.previous[tenant] = nil }
        }
    }

    /// The LISTEN connection came up (true) or went down (false): either way nothing cached
    /// before can be trusted, since events may have been lost in between.
    package func listenerChanged(listening: Bool) {
        state.withLock { state in
            state.generation &+= 1
            state.listening = listening
            state.current = [:]
            state.currentCount = 0
            state.previous = [:]
        }
    }

    /// Entries held now (tests).
    package var count: Int {
        state.withLock { state in state.currentCount + state.previous.values.reduce(0) { $0 + $1.count } }
    }

    private static func insert(_ entry: Entry, tenant: TenantID, key: Key, into state: inout State, halfCapacity: Int) {
        if state.current[tenant]?[key] == nil {
            if state.currentCount >= halfCapacity {
                state.previous = state.current
                state.current = [:]
                state.currentCount = 0
            }
            state.currentCount += 1
        }
        state.current[tenant, default: [:]][key] = entry
    }
}

extension TenantCache.Lookup: Equatable where Value: Equatable {}

/// Tenant session credentials: (tenant, token hash) -> the tenant's WRAPPED data key, as the
/// per-call check last read it from `aerie.tenants` (schema/0007 NOTIFYs every rotate, suspend,
/// resume, rewrap and delete). The key is still unwrapped per call, so no unwrapped key outlives
/// its call.
package typealias CredentialCache = TenantCache<[UInt8], [UInt8]>

/// `connections.get`'s answers: (tenant, connection id) -> the connection's view as JSON text
/// (`ConnectionView.text`), as a read through row-level security last produced it: a hit is
/// copied into the response line as it is. Invalidated by the connection NOTIFYs
/// (schema/0004: insert and state change; schema/0028: any other change, delete), by every
/// credential event of the tenant, and at once by this process's own writes when they end
/// (`PostgresTenantDatabase`). Holds tenant data in clear, in memory only: never logged or written.
package typealias ConnectionViewCache = TenantCache<UUID, JSONText>

/// The connections sent over (`ConnectionSender`): (tenant, connection id) -> the record and its
/// key's sealed secret as a read through row-level security last answered. An entry only spares
/// a send its read: the send's write checks under the row's lock that the connection is still as
/// read (`ConnectionRepository.lockAsRead`) and decides on the locked row when it is not.
/// Invalidated like `ConnectionViewCache` (its NOTIFYs and credential events); holds tenant data
/// in clear, in memory only.
package typealias ConnectionSendCache = TenantCache<UUID, SendingConnection>

/// A `ConnectionSendCache` entry.
package struct SendingConnection: Sendable {
    package var record: ConnectionRecord
    package var sealedSecret: [UInt8]

    package init(record: ConnectionRecord, sealedSecret: [UInt8]) {
        self.record = record
        self.sealedSecret = sealedSecret
    }
}
