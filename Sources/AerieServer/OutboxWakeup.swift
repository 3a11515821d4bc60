import AerieCore

/// Wakes the delivery service as soon as a transaction has enqueued something.
final class OutboxWakeup: OutboxSignal {
    let stream: AsyncStream<Void>
    private let continuation: AsyncStream<Void>.Continuation

    init() {
        (stream, continuation) = AsyncStream<Void>.makeStream(bufferingPolicy: .bufferingNewest(1))
    }

    func outboxChanged() { continuation.yield() }
    func finish() { continuation.finish() }
}
