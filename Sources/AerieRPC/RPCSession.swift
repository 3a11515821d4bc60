import AerieCore
import Synchronization

/// One TCP session's state: who authenticated on it, and its bounded notification queue.
final class RPCSession: SessionHandle, Sendable {
    let id: UInt64
    private let credentialState = Mutex<SessionCredential?>(nil)
    private let queue: AsyncStream<JSONValue>.Continuation
    let notifications: AsyncStream<JSONValue>

    init(id: UInt64, notificationQueueLimit: Int) {
        self.id = id
        (notifications, queue) = AsyncStream.makeStream(of: JSONValue.self, bufferingPolicy: .bufferingOldest(notificationQueueLimit))
    }

    var credential: SessionCredential? {
        get { credentialState.withLock { $0 } }
        set { credentialState.withLock { $0 = newValue } }
    }

    /// Forgets the credential, but only if it is still the one that failed a re-check.
    func revoke(ifStill tokenHash: [UInt8]) {
        credentialState.withLock { current in
            if current?.tokenHash == tokenHash { current = nil }
        }
    }

    @discardableResult
    func notify(method: String, params: JSONValue) -> Bool {
        let message: JSONValue = ["jsonrpc": "2.0", "method": .string(method), "params": params]
        if case .enqueued = queue.yield(message) { return true }
        return false
    }

    func finish() { queue.finish() }
}
