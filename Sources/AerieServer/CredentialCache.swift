import AerieCore
import Synchronization

/// This process's cache of tenant session credentials: (tenant, token hash) -> the tenant's
/// WRAPPED data key, as the per-call check last read it from `aerie.tenants`. A hit spares the
/// call its database round trip; the key is still unwrapped per call, so no unwrapped key
/// outlives its call.
///
/// Correctness rests on the `aerie_events` LISTEN (schema/0007 NOTIFYs every rotate, suspend,
/// resume, rewrap and delete in the writing transaction):
/// - entries are served only while the listener is in place; when it drops, everything is
///   cleared and calls go to the database until it is back (events of the outage are lost);
/// - a change event removes every entry of its tenant;
/// - a database read may only fill the cache if no invalidation happened since it started
///   (`generation`), so a read that raced a change cannot put back what the change removed.
/// Bounded: two generations of at most `capacity / 2` entries each; a full current generation
/// becomes the previous one (the older one is dropped), and a hit in the previous one moves it
/// back, which keeps the recently used entries at a constant cost.
final class CredentialCache: Sendable {
    enum Lookup: Equatable {
        case hit(wrappedDataKey: [UInt8])
        /// Read the database; fill the cache only with this generation (nil: do not fill).
        case miss(generation: UInt64?)
    }

    private struct Entry {
        var wrappedDataKey: [UInt8]
        var storedAt: ContinuousClock.Instant
    }

    private typealias Generation = [TenantID: [[UInt8]: Entry]]

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
    init(capacity: Int, maxAge: Duration) {
        self.halfCapacity = max(0, capacity / 2)
        self.maxAge = maxAge
    }

    var isEnabled: Bool { halfCapacity > 0 }

    func lookup(tenant: TenantID, tokenHash: [UInt8]) -> Lookup {
        guard isEnabled else { return .miss(generation: nil) }
        let now = clock.now
        return state.withLock { state in
            guard state.listening else { return .miss(generation: nil) }
            if let entry = state.current[tenant]?[tokenHash] {
                if now - entry.storedAt < maxAge { return .hit(wrappedDataKey: entry.wrappedDataKey) }
                state.current[tenant]?[tokenHash] = nil
                state.currentCount -= 1
            } else if let entry = state.previous[tenant]?[tokenHash] {
                state.previous[tenant]?[tokenHash] = nil
                if now - entry.storedAt < maxAge {
                    Self.insert(entry, tenant: tenant, tokenHash: tokenHash, into: &state, halfCapacity: halfCapacity)
                    return .hit(wrappedDataKey: entry.wrappedDataKey)
                }
            }
            return .miss(generation: state.generation)
        }
    }

    /// Stores what the database answered, unless something was invalidated since `generation`.
    func store(tenant: TenantID, tokenHash: [UInt8], wrappedDataKey: [UInt8], generation: UInt64) {
        let entry = Entry(wrappedDataKey: wrappedDataKey, storedAt: clock.now)
        state.withLock { state in
            guard state.listening, state.generation == generation else { return }
            Self.insert(entry, tenant: tenant, tokenHash: tokenHash, into: &state, halfCapacity: halfCapacity)
        }
    }

    /// A credential of `tenant` changed (any of its tokens, its status or its key).
    func invalidate(tenant: TenantID) {
        state.withLock { state in
            state.generation &+= 1
            if let removed = state.current.removeValue(forKey: tenant) { state.currentCount -= removed.count }
            state.previous[tenant] = nil
        }
    }

    /// The LISTEN connection came up (true) or went down (false): either way nothing cached
    /// before can be trusted, since events may have been lost in between.
    func listenerChanged(listening: Bool) {
        state.withLock { state in
            state.generation &+= 1
            state.listening = listening
            state.current = [:]
            state.currentCount = 0
            state.previous = [:]
        }
    }

    /// Entries held now (tests).
    var count: Int {
        state.withLock { state in state.currentCount + state.previous.values.reduce(0) { $0 + $1.count } }
    }

    private static func insert(_ entry: Entry, tenant: TenantID, tokenHash: [UInt8], into state: inout State, halfCapacity: Int) {
        if state.current[tenant]?[tokenHash] == nil {
            if state.currentCount >= halfCapacity {
                state.previous = state.current
                state.current = [:]
                state.currentCount = 0
            }
            state.currentCount += 1
        }
        state.current[tenant, default: [:]][tokenHash] = entry
    }
}
