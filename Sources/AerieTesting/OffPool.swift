import Foundation

/// Runs blocking `work` (a process's exit, a pipe read to its end) on a thread of its own and
/// awaits its result. Blocking on the concurrency pool would hold one of its threads, two on a
/// 2-core machine: two such waits at once stall every other task of the test run.
public func offPool<T: Sendable>(_ work: @escaping @Sendable () throws -> T) async throws -> T {
    try await withCheckedThrowingContinuation { continuation in
        Thread.detachNewThread { continuation.resume(with: Result { try work() }) }
    }
}

/// `offPool` for work that cannot fail.
public func offPool<T: Sendable>(_ work: @escaping @Sendable () -> T) async -> T {
    await withCheckedContinuation { continuation in
        Thread.detachNewThread { continuation.resume(returning: work()) }
    }
}
