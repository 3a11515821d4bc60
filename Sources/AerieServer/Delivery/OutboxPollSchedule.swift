import Foundation
import Synchronization

/// When the delivery service's poller asks for a due scan. Rows this process writes are handed
/// over or ask for a scan themselves (`OutboxWakeup`); the poll finds the rest: retries that
/// came due, rows a scan left behind, and other servers' rows whose lease ran out. It scans
/// every `pollInterval` while it knows of such rows (the last scan found some, or a failed
/// delivery's retry is due), and otherwise only every `idleInterval`, so an idle server does not
/// ask the database every second.
final class OutboxPollSchedule: Sendable {
    let idleInterval: Duration

    private struct State {
        var lastScan: ContinuousClock.Instant? = nil
        /// The last scan found rows, or may have left some behind.
        var foundRows = true
        /// The earliest retry recorded by this process since the scan that covered the previous one.
        var nextRetry: Date? = nil
    }
    private let state = Mutex(State())

    init(idleInterval: Duration) {
        self.idleInterval = idleInterval
    }

    /// Whether the poll now should scan.
    func scanDue(now: ContinuousClock.Instant = .now, date: Date = Date()) -> Bool {
        state.withLock { state in
            guard let lastScan = state.lastScan else { return true }
            if state.foundRows { return true }
            if let retry = state.nextRetry, retry <= date { return true }
            return now - lastScan >= idleInterval
        }
    }

    /// A scan ran (at `now`, `date`) and found rows or not.
    func scanned(foundRows: Bool, now: ContinuousClock.Instant = .now, date: Date = Date()) {
        state.withLock { state in
            state.lastScan = now
            state.foundRows = foundRows
            if let retry = state.nextRetry, retry <= date { state.nextRetry = nil }
        }
    }

    /// A delivery failed and its row is tried again at `date`.
    func retry(at date: Date) {
        state.withLock { state in state.nextRetry = min(state.nextRetry ?? date, date) }
    }
}
