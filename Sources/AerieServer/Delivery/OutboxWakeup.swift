import AerieCore
import Synchronization

/// The delivery service's wake-up, and the store's `OutboxSignal`: rows a tenant transaction of
/// this process enqueued arrive here once it committed. Inserted under this process's lease
/// (`enqueueLease`), they are handed over as they are (`takeHanded`): no scan finds them and no
/// claim is needed. A wake-up that asks for a scan (`outboxChanged`: the poller, rows left
/// behind by a full scan, rows inserted without the lease) is kept apart, so handed rows cost
/// no scan.
final class OutboxWakeup: OutboxSignal {
    let stream: AsyncStream<Void>
    private let continuation: AsyncStream<Void>.Continuation
    /// The lease of this process's delivery service; nil when it has none (delivery disabled).
    private let lease: OutboxLease?
    /// Rows handed over and not started at most: past it, new rows are inserted due for the scan
    /// (and the memory they would hold stays in the database).
    let maxHanded: Int

    struct Handed: Sendable {
        var tenant: TenantID
        var item: OutboxItem
        var destination: String
    }

    private struct State {
        /// Leasing starts once the service took back its previous run's leases (`startLeasing`),
        /// so that release never frees a row this run holds.
        var leasing = false
        var handed: [Handed] = []
        var scanRequested = true
    }
    private let state = Mutex(State())

    init(lease: OutboxLease?, maxHanded: Int = 1024) {
        (stream, continuation) = AsyncStream<Void>.makeStream(bufferingPolicy: .bufferingNewest(1))
        self.lease = lease
        self.maxHanded = maxHanded
    }

    var enqueueLease: OutboxLease? {
        guard let lease else { return nil }
        return state.withLock { $0.leasing && $0.handed.count < maxHanded } ? lease : nil
    }

    func committed(_ items: [OutboxItem], tenant: TenantID) {
        let own = lease?.instance
        state.withLock { state in
            for item in items {
                if let own, item.leasedBy == own {
                    state.handed.append(Handed(tenant: tenant, item: item, destination: OutboxItem.destination(of: item.endpoint)))
                } else {
                    state.scanRequested = true
                }
            }
        }
        continuation.yield()
    }

    /// Asks the loop for a due scan.
    func outboxChanged() {
        state.withLock { $0.scanRequested = true }
        continuation.yield()
    }

    /// Wakes the loop without asking for a scan (a slot is free for a handed row).
    func wake() { continuation.yield() }

    func startLeasing() { state.withLock { $0.leasing = true } }

    /// The handed rows `start` admits, in order, with their slots, removed from the queue; the
    /// others wait for a free slot.
    func takeHanded(_ start: (String) -> DeliveryLimits.Slot?) -> [(row: Handed, slot: DeliveryLimits.Slot)] {
        state.withLock { state in
            var taken: [(row: Handed, slot: DeliveryLimits.Slot)] = []
            var kept: [Handed] = []
            for row in state.handed {
                if let slot = start(row.destination) { taken.append((row, slot)) } else { kept.append(row) }
            }
            state.handed = kept
            return taken
        }
    }

    var hasHanded: Bool { state.withLock { !$0.handed.isEmpty } }

    /// Whether a scan was asked for since the last call.
    func takeScanRequest() -> Bool {
        state.withLock { state in
            defer { state.scanRequested = false }
            return state.scanRequested
        }
    }

    func finish() { continuation.finish() }
}
