import AerieCore
import AerieStore
import Foundation
import Logging
import Synchronization

/// The marks of delivered outbox rows that carry no sent message (a connection's Request,
/// Response, trust ping, didexchange complete, problem reports), gathered for `window` and
/// written together: one round trip for all of them, of every tenant
/// (`AerieDatabase.markOutboxSent(_:)`), where each took its own. Two per connection accepted.
///
/// A mark is committed asynchronously anyway, so a crash may lose it and the row is sent again
/// (delivery is at least once); gathering adds at most `window` to that, and to a backend's
/// delivery event of the row. A row stays leased by this server until marked, so no other server
/// sends it meanwhile; the delivery service writes the marks gathered before it gives its leases
/// back at shutdown. Rows carrying a message are marked at once: their message's status and
/// delivery event are what a backend waits for.
final class OutboxSentMarks: Sendable {
    /// How long the first mark of a batch waits for others.
    let window: Duration
    /// Marks per round trip at most: a bigger batch goes in several.
    let maxPerWrite: Int
    private struct Gathered {
        var rows: [TenantID: [UUID]] = [:]
        /// The wait of the batch being gathered, cut short by `finish`.
        var window: Task<Void, Never>?
        var finished = false
    }
    private let gathered = Mutex(Gathered())
    private let signals: AsyncStream<Void>
    private let signal: AsyncStream<Void>.Continuation

    init(window: Duration = .milliseconds(100), maxPerWrite: Int = 500) {
        self.window = window
        self.maxPerWrite = max(1, maxPerWrite)
        (signals, signal) = AsyncStream.makeStream(of: Void.self, bufferingPolicy: .bufferingNewest(1))
    }

    /// Gathers the mark of row `id` of `tenant`, delivered.
    func add(_ id: UUID, tenant: TenantID) {
        let first = gathered.withLock { gathered in
            defer { gathered.rows[tenant, default: []].append(id) }
            return gathered.rows.isEmpty
        }
        if first { signal.yield() }
    }

    /// Writes the gathered marks, a batch `window` after its first mark, until `finish`; then
    /// what is left.
    func run(database: AerieDatabase, logger: Logger) async {
        let window = self.window
        for await _ in signals {
            let wait = Task { _ = try? await Task.sleep(for: window) }
            let finished = gathered.withLock { gathered in
                gathered.window = wait
                return gathered.finished
            }
            if finished { wait.cancel() }
            await wait.value
            await write(database: database, logger: logger)
        }
        await write(database: database, logger: logger)
    }

    /// Ends `run` once it has written what is gathered, without waiting out the window.
    func finish() {
        gathered.withLock { gathered in
            gathered.finished = true
            gathered.window?.cancel()
        }
        signal.finish()
    }

    private func write(database: AerieDatabase, logger: Logger) async {
        let rows = gathered.withLock { gathered in
            defer { gathered.rows = [:] }
            return gathered.rows
        }
        // Chunks of at most `maxPerWrite` marks, each one round trip.
        var chunks: [[TenantID: [UUID]]] = [[:]]
        var inChunk = 0
        for (tenant, ids) in rows {
            for id in ids {
                if inChunk == maxPerWrite {
                    chunks.append([:])
                    inChunk = 0
                }
                chunks[chunks.count - 1][tenant, default: []].append(id)
                inChunk += 1
            }
        }
        for chunk in chunks where !chunk.isEmpty {
            do {
                try await database.markOutboxSent(chunk)
            } catch {
                // The rows stay pending under this server's lease, and are sent again once it
                // ends (or at this server's restart): at least once, as for any mark lost.
                let count = chunk.values.reduce(0) { $0 + $1.count }
                logger.warning("outbox rows not marked sent", metadata: ["rows": "\(count)", "error": "\(String(reflecting: error))"])
            }
        }
    }
}
