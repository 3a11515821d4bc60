import Synchronization

/// How many deliveries run at once in this process, and to one destination (`scheme://host:port`
/// of the endpoint): a slow or tarpitting peer holds at most `perDestination` of the
/// `concurrency` slots, and the due scan skips its rows while it does, so it delays only its own.
final class DeliveryLimits: Sendable {
    let concurrency: Int
    let perDestination: Int
    private let running = Mutex<[String: Int]>([:])

    init(concurrency: Int, perDestination: Int) {
        self.concurrency = max(1, concurrency)
        self.perDestination = max(1, min(perDestination, concurrency))
    }

    /// Free slots in this process.
    var available: Int { concurrency - running.withLock { $0.values.reduce(0, +) } }

    /// The destinations at their limit: the due scan skips their rows.
    var busyDestinations: Set<String> {
        let limit = perDestination
        return running.withLock { Set($0.filter { $0.value >= limit }.keys) }
    }

    /// Takes a slot for `destination`, or answers false when the process or the destination
    /// is at its limit.
    func start(_ destination: String) -> Bool {
        running.withLock { running in
            guard running.values.reduce(0, +) < concurrency, running[destination, default: 0] < perDestination else { return false }
            running[destination, default: 0] += 1
            return true
        }
    }

    /// Gives back `destination`'s slot; answers whether the loop should scan again (the last
    /// scan left due rows behind, `scanned(leftRows:)`).
    @discardableResult
    func finish(_ destination: String) -> Bool {
        running.withLock { running in
            let left = running[destination, default: 1] - 1
            running[destination] = left > 0 ? left : nil
        }
        return lastScanLeftRows.withLock { $0 }
    }

    /// Whether the last due scan may have left due rows behind: only then does a delivery that
    /// ends cost another scan (a round trip each; most end with nothing left to send).
    private let lastScanLeftRows = Mutex(true)

    func scanned(leftRows: Bool) {
        lastScanLeftRows.withLock { $0 = leftRows }
    }
}
