import Synchronization
import Testing

@testable import AerieServer

/// The readiness and metrics checks behind `RecentAnswer`: a burst of probes costs one check.
struct RecentAnswerTests {
    final class Counter: Sendable {
        private let count = Mutex(0)
        var value: Int { count.withLock { $0 } }
        func next() -> Int { count.withLock { $0 += 1; return $0 } }
    }

    @Test func concurrentCallersShareOneCheckAndTheAnswerExpires() async throws {
        let checks = Counter()
        let answer = RecentAnswer<Int>(maxAge: .seconds(2)) {
            let number = checks.next()
            try? await Task.sleep(for: .milliseconds(100))
            return number
        }
        let first = await withTaskGroup(of: Int.self) { group in
            for _ in 0..<200 { group.addTask { await answer.value() } }
            return await group.reduce(into: [Int]()) { $0.append($1) }
        }
        #expect(first.count == 200)
        #expect(Set(first) == [1], "every caller got the one check's answer")
        #expect(checks.value == 1)
        #expect(await answer.value() == 1)
        try await Task.sleep(for: .milliseconds(2200))
        #expect(await answer.value() == 2, "an answer older than maxAge is checked again")
        #expect(checks.value == 2)
    }
}
