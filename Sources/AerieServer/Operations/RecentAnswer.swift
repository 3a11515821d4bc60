import Synchronization

/// The answer of a check that costs a database round trip, reused for `maxAge`: however many
/// probes and scrapes arrive, at most one check runs at a time and one starts per `maxAge`;
/// callers arriving while it runs wait for its answer instead of starting their own.
final class RecentAnswer<Value: Sendable>: Sendable {
    private struct State {
        var answer: (at: ContinuousClock.Instant, value: Value)?
        var running = false
        var waiters: [CheckedContinuation<Value, Never>] = []
    }

    private enum Step {
        case answer(Value)
        case wait
        case check
    }

    let maxAge: Duration
    private let check: @Sendable () async -> Value
    private let state = Mutex(State())

    init(maxAge: Duration, check: @escaping @Sendable () async -> Value) {
        self.maxAge = maxAge
        self.check = check
    }

    func value() async -> Value {
        let now = ContinuousClock.now
        let step = state.withLock { state -> Step in
            if let answer = state.answer, now - answer.at < maxAge { return .answer(answer.value) }
            if state.running { return .wait }
            state.running = true
            return .check
        }
        switch step {
        case .answer(let value):
            return value
        case .wait:
            return await withCheckedContinuation { continuation in
                let ready = state.withLock { state -> Value? in
                    guard state.running else { return state.answer?.value }
                    state.waiters.append(continuation)
                    return nil
                }
                if let ready { continuation.resume(returning: ready) }
            }
        case .check:
            let value = await check()
            let waiters = state.withLock { state in
                state.answer = (ContinuousClock.now, value)
                state.running = false
                defer { state.waiters = [] }
                return state.waiters
            }
            for waiter in waiters { waiter.resume(returning: value) }
            return value
        }
    }
}
