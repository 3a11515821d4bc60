import AerieCore
import Synchronization

/// Counts one session's running requests; `acquire` suspends the reader at the limit, which stops
/// reading from the socket and pushes back on the client through TCP.
package final class InFlightLimiter: Sendable {
    private struct State {
        var available: Int
        var waiters: [CheckedContinuation<Void, Never>] = []
    }

    private let state: Mutex<State>

    package init(limit: Int) {
        state = Mutex(State(available: max(1, limit)))
    }

    package func acquire() async {
        let acquired = state.withLock { state -> Bool in
            if state.available > 0 {
                state.available -= 1
                return true
            }
            return false
        }
        if acquired { return }
        await withCheckedContinuation { continuation in
            let resumeNow = state.withLock { state -> Bool in
                if state.available > 0 {
                    state.available -= 1
                    return true
                }
                state.waiters.append(continuation)
                return false
            }
            if resumeNow { continuation.resume() }
        }
    }

    package func release() {
        let waiter = state.withLock { state -> CheckedContinuation<Void, Never>? in
            if state.waiters.isEmpty {
                state.available += 1
                return nil
            }
            return state.waiters.removeFirst()
        }
        waiter?.resume()
    }
}

/// Collects the responses of one batch's entries as they finish; the entry that completes the
/// batch gets them all (notifications add nothing).
final class BatchResponses: Sendable {
    private struct State {
        var remaining: Int
        var responses: [RPCResponseText] = []
    }

    private let state: Mutex<State>

    init(expected: Int) {
        state = Mutex(State(remaining: expected))
    }

    /// Adds one entry's response; answers every response once the last entry is in, else nil.
    func add(_ response: RPCResponseText?) -> [RPCResponseText]? {
        state.withLock { state in
            if let response { state.responses.append(response) }
            state.remaining -= 1
            return state.remaining == 0 ? state.responses : nil
        }
    }
}
