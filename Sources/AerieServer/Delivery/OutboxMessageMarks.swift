import AerieCore
import AerieStore
import Foundation
import Synchronization

/// The marks of delivered outbox rows that carry a sent message, written as they come, without
/// a window: a mark made while another write is under way waits for it to end and goes with the
/// others made meanwhile, in one round trip (`AerieDatabase.markOutboxMessagesSent`, one
/// statement per tenant). Alone a mark costs what it did; under load (deliveries ending at
/// once) marks share their round trips, statements and commits, as commits share a flush.
///
/// The caller returns once its mark is written, or with the write's error (every mark of that
/// write failed: their rows stay pending under this server's lease and are sent again, at least
/// once, as for any mark lost). A caller that finds no write under way writes its own mark and
/// those gathered, then hands the writing to the next mark gathered; the others wait.
final class OutboxMessageMarks: Sendable {
    /// Marks per write at most: more wait for the next.
    let maxPerWrite: Int
    private typealias Waiter = CheckedContinuation<Bool, any Error>
    private struct Mark {
        var tenant: TenantID
        var id: UUID
        /// Resumed with true once written; nil for the writer's own mark.
        var waiter: Waiter?
    }
    private struct State {
        var writing = false
        var gathered: [Mark] = []
    }
    private let state = Mutex(State())

    init(maxPerWrite: Int = 500) {
        self.maxPerWrite = max(1, maxPerWrite)
    }

    /// Marks row `id` of `tenant` sent, with its message.
    func mark(_ id: UUID, tenant: TenantID, database: AerieDatabase) async throws {
        while true {
            let writes = state.withLock { state in
                defer { state.writing = true }
                return !state.writing
            }
            if writes { return try await write(first: Mark(tenant: tenant, id: id), database: database) }
            // A write is under way: wait for the one after it, unless it ended meanwhile (false:
            // try again to write).
            let written = try await withCheckedThrowingContinuation { (waiter: Waiter) in
                let waits = state.withLock { state in
                    if state.writing { state.gathered.append(Mark(tenant: tenant, id: id, waiter: waiter)) }
                    return state.writing
                }
                if !waits { waiter.resume(returning: false) }
            }
            if written { return }
        }
    }

    /// Writes `first` with the marks gathered so far, then hands the writing over to the first
    /// mark gathered after (it tries again), so that no caller writes for others for long.
    private func write(first: Mark, database: AerieDatabase) async throws {
        let maxPerWrite = self.maxPerWrite
        let batch = [first] + state.withLock { state in
            let taken = Array(state.gathered.prefix(maxPerWrite - 1))
            state.gathered.removeFirst(taken.count)
            return taken
        }
        var rows: [TenantID: [UUID]] = [:]
        for mark in batch { rows[mark.tenant, default: []].append(mark.id) }
        let outcome: Result<Void, any Error>
        do {
            try await database.markOutboxMessagesSent(rows)
            outcome = .success(())
        } catch {
            outcome = .failure(error)
        }
        for mark in batch.dropFirst() { mark.waiter?.resume(with: outcome.map { true }) }
        let next = state.withLock { state in
            state.writing = false
            return state.gathered.isEmpty ? nil : state.gathered.removeFirst().waiter
        }
        next?.resume(returning: false)
        try outcome.get()
    }
}
