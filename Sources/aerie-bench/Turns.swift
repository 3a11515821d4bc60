import Foundation

/// How a benchmark runs its work: shares of turns, calls at most so many at a time, resources
/// stopped whatever happens.
enum Turns {
    /// `count` split into `rounds` shares as even as they go (the first ones larger by one).
    static func shares(of count: Int, in rounds: Int) -> [Int] {
        let rounds = max(1, min(rounds, count))
        return (0..<rounds).map { count / rounds + ($0 < count % rounds ? 1 : 0) }
    }

    /// `count` calls of `one`, at most `width` at a time.
    static func launch(_ count: Int, width: Int, _ one: @escaping @Sendable () async throws -> Void) async throws {
        try await withThrowingTaskGroup(of: Void.self) { group in
            var launched = 0
            while launched < min(width, count) {
                group.addTask { try await one() }
                launched += 1
            }
            while try await group.next() != nil {
                if launched < count {
                    group.addTask { try await one() }
                    launched += 1
                }
            }
        }
    }

    /// `body` with `resource`, stopped after it whether `body` returned or threw.
    static func stopping<Resource, T>(
        _ resource: Resource, stop: (Resource) async -> Void, _ body: (Resource) async throws -> T
    ) async throws -> T {
        let value: T
        do {
            value = try await body(resource)
        } catch {
            await stop(resource)
            throw error
        }
        await stop(resource)
        return value
    }

    /// The median of a benchmark's per-round ratios (one round hit harder on one side cannot
    /// decide it), and their min and max (the spread).
    static func spread(_ ratios: [Double]) -> (median: Double, min: Double, max: Double) {
        let sorted = ratios.sorted()
        guard !sorted.isEmpty else { return (.nan, .nan, .nan) }
        let middle = sorted.count / 2
        let median = sorted.count.isMultiple(of: 2) ? (sorted[middle - 1] + sorted[middle]) / 2 : sorted[middle]
        return (median, sorted[0], sorted[sorted.count - 1])
    }
}
