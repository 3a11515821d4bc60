import AerieCore
import Foundation

/// A bounded hand-over of byte pieces between a store thread (which may block) and the calls of
/// one session (which must not): an export's store thread puts sealed chunks that
/// `exportChunk` calls take; an import's calls put what the client sends and its store thread
/// takes it. At most `capacity` pieces wait, so memory stays flat however large the archive. The
/// blocking side waits at most `stallTimeout` for the other (a client gone quiet), then fails,
/// which rolls its transaction back. `close(with:)` ends it for both sides.
final class ArchiveHandoff: @unchecked Sendable {
    private let condition = NSCondition()
    private var pieces: [[UInt8]] = []
    private var ended = false
    private var failure: AerieError?
    private var waitingTaker: CheckedContinuation<[UInt8]?, any Error>?
    private var waitingPutter: CheckedContinuation<Void, any Error>?
    let capacity: Int
    let stallTimeout: TimeInterval

    init(capacity: Int = 4, stallTimeout: TimeInterval = 120) {
        self.capacity = capacity
        self.stallTimeout = stallTimeout
    }

    // MARK: - The store thread's side (blocking)

    /// Puts `piece`, waiting while the queue is full.
    func blockingPut(_ piece: [UInt8]) throws {
        condition.lock()
        let deadline = Date(timeIntervalSinceNow: stallTimeout)
        while pieces.count >= capacity, failure == nil {
            if !condition.wait(until: deadline) { failure = Self.stalled }
        }
        if let failure {
            condition.unlock()
            throw failure
        }
        if let taker = waitingTaker {
            waitingTaker = nil
            condition.unlock()
            taker.resume(returning: piece)
            return
        }
        pieces.append(piece)
        condition.unlock()
    }

    /// Marks the end of what the store thread puts.
    func finish() {
        condition.lock()
        ended = true
        let taker = waitingTaker
        waitingTaker = nil
        condition.broadcast()
        condition.unlock()
        taker?.resume(returning: nil)
    }

    /// The next piece, waiting for one; nil once the other side finished.
    func blockingTake() throws -> [UInt8]? {
        condition.lock()
        let deadline = Date(timeIntervalSinceNow: stallTimeout)
        while pieces.isEmpty, !ended, failure == nil {
            if !condition.wait(until: deadline) { failure = Self.stalled }
        }
        if let failure {
            condition.unlock()
            throw failure
        }
        guard !pieces.isEmpty else {
            condition.unlock()
            return nil
        }
        let piece = pieces.removeFirst()
        let putter = waitingPutter
        waitingPutter = nil
        condition.unlock()
        putter?.resume()
        return piece
    }

    // MARK: - The calls' side (async, never blocking a thread)

    /// The next piece the store thread put; nil once it finished.
    func take() async throws -> [UInt8]? {
        try await withCheckedThrowingContinuation { continuation in
            condition.lock()
            if let failure {
                condition.unlock()
                continuation.resume(throwing: failure)
            } else if !pieces.isEmpty {
                let piece = pieces.removeFirst()
                condition.signal()
                condition.unlock()
                continuation.resume(returning: piece)
            } else if ended {
                condition.unlock()
                continuation.resume(returning: nil)
            } else if waitingTaker != nil {
                condition.unlock()
                continuation.resume(throwing: AerieError(.conflict, "another call is already reading this archive"))
            } else {
                waitingTaker = continuation
                condition.unlock()
            }
        }
    }

    /// Puts `piece` for the store thread, waiting while the queue is full.
    func put(_ piece: [UInt8]) async throws {
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
            condition.lock()
            if let failure {
                condition.unlock()
                continuation.resume(throwing: failure)
                return
            }
            if ended {
                condition.unlock()
                continuation.resume(throwing: AerieError.invalidParams("the archive has already ended", field: "data"))
                return
            }
            pieces.append(piece)
            condition.signal()
            if pieces.count > capacity {
                waitingPutter = continuation
                condition.unlock()
            } else {
                condition.unlock()
                continuation.resume()
            }
        }
    }

    /// Ends the hand-over: both sides' waits and later calls fail with `error`.
    func close(with error: AerieError) {
        condition.lock()
        if failure == nil { failure = error }
        let taker = waitingTaker
        let putter = waitingPutter
        waitingTaker = nil
        waitingPutter = nil
        condition.broadcast()
        condition.unlock()
        taker?.resume(throwing: error)
        putter?.resume(throwing: error)
    }

    static let stalled = AerieError(.timeout, "the other side of the archive transfer stopped")
}
