import AerieCore
import Foundation
import Synchronization

/// Inbound recipients held in memory, so a message to one opens without the inbound lookup's
/// round trip (`TenantDirectory.inboundRecipient`): verkey -> the tenant, its wrapped data key as
/// read, the key's sealed secret and its connection. Two kinds of entry (`Origin`), each
/// answering only for the messages that can check it:
/// - `made`: a pairwise key this process has just stored with the new connection it is our key
///   of, inserted waiting for its Response (`InboundSenders.awaitsResponse`), in one tenant
///   transaction (`connections.accept`'s Request, out-of-band's); the peer's answer (a Response,
///   20-40 ms later) opens with it. It answers for a Response only
///   (`InboundSenders.openWithRecentRecipient`), whose transaction locks the row and fails unless
///   it is still as inserted (`ConnectionRepository.lockAsRead`, `updated_at = created_at`), then
///   decides on the locked row.
/// - `read`: an established connection and its current key as a database lookup read them
///   (`InboundSenders.remembersAsRead`): the steady state, a peer's messages one after another.
///   It answers only for a type the pipeline just stores (`InboundRoute
///   .opensWithRememberedRecipient`), whose insert checks the connection, the key and the tenant
///   are still as read (`InboundReceipt.asRead`) and stores nothing otherwise.
/// The inbound pipeline looks any other message up in the database as before. What else makes a
/// stale entry safe:
/// - The verkey names its tenant for good (a key is never moved to another tenant), so the
///   directory part never goes stale; an entry holds one tenant's data only and every
///   invalidation names its tenant.
/// - The tenant active with that data key: until the credential NOTIFY (suspend, delete, rewrap)
///   arrives, as the session credential cache (`CredentialCache`), and checked by both kinds'
///   writes.
///
/// Entries leave on the connection NOTIFYs (schema/0004: a state other than the entry's;
/// schema/0028: any other change or a delete), on every credential event of the tenant, on the
/// deletion of their key (schema/0038), at once on this process's own writes of the connection
/// (`PostgresTenantDatabase`), after `maxAge`, and all of them when the LISTEN drops (nothing is
/// served or kept until it is back, as `TenantCache`). A read fills only if none of these
/// happened since it started (`generation`), so a read racing a change cannot put back what the
/// change took away. Bounded: at most `capacity` entries of both kinds, the oldest overwritten
/// first, and no connection whose sealed row exceeds `largestRow` bytes. Holds secrets sealed and
/// a tenant's wrapped key as read (never unwrapped), the connection in clear, in memory only.
package final class RecentRecipients: Sendable {
    /// How an entry came to be held, which decides what it answers for (see the type).
    package enum Origin: Sendable, Hashable {
        /// Made by a transaction of this process: the connection as inserted.
        case made
        /// Read from the database: an established connection as read.
        case read
    }

    package struct Recipient: Sendable {
        package var tenant: TenantID
        package var wrappedDataKey: [UInt8]
        package var recipient: InboundRecipient
        package var origin: Origin

        package init(tenant: TenantID, wrappedDataKey: [UInt8], recipient: InboundRecipient, origin: Origin = .made) {
            self.tenant = tenant
            self.wrappedDataKey = wrappedDataKey
            self.recipient = recipient
            self.origin = origin
        }
    }

    private struct Entry {
        var recipient: Recipient
        var storedAt: ContinuousClock.Instant
        /// Its slot in the ring, so an overwritten slot removes only the entry it held.
        var sequence: UInt64

        /// Kept only with a connection (`remember`).
        var connectionId: UUID? { recipient.recipient.connection?.id }
        var state: String? { recipient.recipient.connection?.state.rawValue }
    }

    private struct State {
        /// Lookups answered from memory (`served`).
        var served = 0
        var listening = false
        /// Moves on at every invalidation (`remember(read:generation:)`).
        var generation: UInt64 = 0
        var byVerkey: [String: Entry] = [:]
        var verkeyOfConnection: [UUID: String] = [:]
        /// Insertion order: slot `sequence % capacity` holds the verkey stored with `sequence`.
        var ring: [String?] = []
        var nextSequence: UInt64 = 0
    }

    private let state = Mutex(State())
    private let capacity: Int
    private let maxAge: Duration
    private let clock = ContinuousClock()

    /// Connections whose sealed row is larger are not kept (a usual one is under 1 KiB; a 64 KiB
    /// invitation's is read from the database as before): for an entry `read`, the bytes of its
    /// row as the database sent them.
    package static let largestRow = 4096

    /// `capacity` 0 turns it off (every inbound message is looked up in the database).
    package init(capacity: Int, maxAge: Duration) {
        self.capacity = max(0, capacity)
        self.maxAge = maxAge
    }

    package static var off: RecentRecipients { RecentRecipients(capacity: 0, maxAge: .zero) }

    package var isEnabled: Bool { capacity > 0 }

    /// The entry of `verkey`, unless it is older than `maxAge` or the LISTEN is down.
    package func lookup(_ verkey: String) -> Recipient? {
        guard isEnabled else { return nil }
        let now = clock.now
        return state.withLock { state in
            guard state.listening, let entry = state.byVerkey[verkey] else { return nil }
            guard now - entry.storedAt < maxAge else {
                Self.remove(verkey, from: &state)
                return nil
            }
            state.served += 1
            return entry.recipient
        }
    }

    /// Lookups answered from memory since this process started (tests: which messages opened
    /// without the database's lookup, whatever else the pool did meanwhile).
    package var served: Int { state.withLock { $0.served } }

    /// Keeps what a committed transaction made (`MadeRecipients.made`); tests also put back an
    /// entry as looked up, as if its invalidation had not arrived yet.
    package func remember(_ made: [Recipient]) {
        guard isEnabled, !made.isEmpty else { return }
        let now = clock.now
        state.withLock { state in
            guard state.listening else { return }
            for recipient in made { insert(recipient, at: now, into: &state) }
        }
    }

    /// Where a database read starts from: `remember(read:generation:)` keeps its answer only if
    /// no entry could have been invalidated since (nil: keep nothing, the LISTEN is down).
    package var generation: UInt64? {
        guard isEnabled else { return nil }
        return state.withLock { $0.listening ? $0.generation : nil }
    }

    /// Keeps what a database lookup read (`origin` `.read`, an established connection with our
    /// current key, `InboundSenders.remembersAsRead`), unless an invalidation happened since
    /// `generation` was taken.
    package func remember(read recipient: Recipient, generation: UInt64) {
        guard isEnabled, recipient.origin == .read else { return }
        let now = clock.now
        state.withLock { state in
            guard state.listening, state.generation == generation else { return }
            insert(recipient, at: now, into: &state)
        }
    }

    private func insert(_ recipient: Recipient, at now: ContinuousClock.Instant, into state: inout State) {
        guard let connectionId = recipient.recipient.connection?.id else { return }
        if state.ring.isEmpty { state.ring = Array(repeating: nil, count: capacity) }
        let verkey = recipient.recipient.verkey
        Self.remove(verkey, from: &state)
        let sequence = state.nextSequence
        state.nextSequence &+= 1
        let slot = Int(sequence % UInt64(capacity))
        if let old = state.ring[slot], state.byVerkey[old]?.sequence == sequence &- UInt64(capacity) {
            Self.remove(old, from: &state)
        }
        state.ring[slot] = verkey
        state.byVerkey[verkey] = Entry(recipient: recipient, storedAt: now, sequence: sequence)
        state.verkeyOfConnection[connectionId] = verkey
    }

    /// A connection NOTIFY of `tenant` (schema/0004: `state` is the new state; schema/0028:
    /// `state` nil, any other change or a delete; `connectionId` nil: several rows). The insert
    /// that made an entry sends its own events, `initialized` then the entry's state (schema/0030;
    /// no connection ever goes back to `initialized`): those keep it.
    package func connectionChanged(tenant: TenantID, connectionId: UUID?, state newState: String?) {
        guard isEnabled else { return }
        guard let connectionId else { return forget(tenant: tenant) }
        state.withLock { state in
            state.generation &+= 1
            Self.remove(connections: CollectionOfOne(connectionId), of: tenant, from: &state, unlessIn: newState)
        }
    }

    /// Connections of `tenant` this process wrote: their entries leave at once.
    package func forget(tenant: TenantID, connections ids: some Sequence<UUID>) {
        guard isEnabled else { return }
        state.withLock { state in
            state.generation &+= 1
            Self.remove(connections: ids, of: tenant, from: &state, unlessIn: nil)
        }
    }

    /// Keys of `tenant` deleted (schema/0038's NOTIFY, or this process's own delete): their
    /// entries leave; nil, every entry of the tenant.
    package func forget(tenant: TenantID, verkeys: some Sequence<String>) {
        guard isEnabled else { return }
        state.withLock { state in
            state.generation &+= 1
            for verkey in verkeys where state.byVerkey[verkey]?.recipient.tenant == tenant { Self.remove(verkey, from: &state) }
        }
    }

    /// Everything of `tenant` changed, or may have (a credential event).
    package func forget(tenant: TenantID) {
        guard isEnabled else { return }
        state.withLock { state in
            state.generation &+= 1
            for (verkey, entry) in state.byVerkey where entry.recipient.tenant == tenant { Self.remove(verkey, from: &state) }
        }
    }

    /// The LISTEN came up or went down: either way events may have been lost, so nothing held
    /// before is kept; while it is down nothing is served or kept.
    package func listenerChanged(listening: Bool) {
        state.withLock { state in
            state.listening = listening
            state.generation &+= 1
            state.byVerkey = [:]
            state.verkeyOfConnection = [:]
            state.ring = []
        }
    }

    /// Entries held now (tests).
    package var count: Int { state.withLock { $0.byVerkey.count } }

    /// The entries of `tenant`'s connections `ids`, but those whose insert sent the event of
    /// `state` (`initialized`, or the entry's own state).
    private static func remove(
        connections ids: some Sequence<UUID>, of tenant: TenantID, from state: inout State, unlessIn newState: String?
    ) {
        for id in ids {
            guard let verkey = state.verkeyOfConnection[id], let entry = state.byVerkey[verkey], entry.recipient.tenant == tenant
            else { continue }
            if let newState, newState == ConnectionRecord.State.initialized.rawValue || newState == entry.state { continue }
            remove(verkey, from: &state)
        }
    }

    private static func remove(_ verkey: String, from state: inout State) {
        guard let id = state.byVerkey.removeValue(forKey: verkey)?.connectionId else { return }
        if state.verkeyOfConnection[id] == verkey { state.verkeyOfConnection[id] = nil }
    }
}

/// What one transaction made that can receive messages: the keys it stored and the connections
/// it inserted (every run of its body; a body run again adds the same ones), paired after the
/// `COMMIT` (`recipients`: a connection inserted with our key of it); and the keys it deleted,
/// whose entries leave when it ends, committed or not.
final class MadeRecipients: Sendable {
    private struct Made {
        var keys: [String: [UInt8]] = [:]
        var connections: [ConnectionRecord] = []
        /// Inserted, then written again in the same transaction: not as inserted.
        var changed: Set<UUID> = []
        var deletedKeys: Set<String> = []
    }

    private let made = Mutex(Made())

    func key(_ verkey: String, sealedSecret: [UInt8]) {
        made.withLock { $0.keys[verkey] = sealedSecret }
    }

    /// Only a connection inserted waiting for a Response (`InboundSenders.awaitsResponse`) is
    /// kept: an entry answers for a Response only. `sealedBytes`: the size of its sealed row; a
    /// larger one than `RecentRecipients.largestRow` is not kept.
    func connection(_ record: ConnectionRecord, sealedBytes: Int) {
        guard InboundSenders.awaitsResponse(record), sealedBytes <= RecentRecipients.largestRow else { return }
        made.withLock { $0.connections.append(record) }
    }

    func deletedKey(_ verkey: String) {
        _ = made.withLock { $0.deletedKeys.insert(verkey) }
    }

    var deletedKeys: Set<String> { made.withLock { $0.deletedKeys } }

    /// A connection written other than by its insert (updated, deleted).
    func changed(_ id: UUID) {
        _ = made.withLock { $0.changed.insert(id) }
    }

    /// The recipients made, each connection as its row was inserted: `updatedAt` is its
    /// `createdAt`, as in the row (both are the inserting transaction's `now()`), which is what
    /// `lockAsRead` checks for it.
    func recipients(tenant: TenantID, wrappedDataKey: [UInt8]) -> [RecentRecipients.Recipient] {
        made.withLock { made in
            made.connections.compactMap { record in
                guard !made.changed.contains(record.id), let verkey = record.myVerkey, let sealed = made.keys[verkey]
                else { return nil }
                var inserted = record
                inserted.updatedAt = inserted.createdAt
                return RecentRecipients.Recipient(
                    tenant: tenant, wrappedDataKey: wrappedDataKey,
                    recipient: InboundRecipient(verkey: verkey, sealedSecret: sealed, connection: inserted))
            }
        }
    }
}
