import AerieCore
import Synchronization

/// One TCP session's state: who authenticated on it, and its bounded notification queue.
///
/// A notification is handed to `write` by the thread that notifies (the event hub's LISTEN
/// thread, mostly), which puts its line on the connection; no task of the session runs for it, so
/// a push costs one hop, to the connection's event loop. The queue is the notifications handed
/// over and not yet written to the socket: at its limit one `messages.overflow` notification is
/// queued and every later one is dropped until everything queued has been written, so a slow
/// reader loses notifications (and learns that it did), it never holds up the server or other
/// sessions, and the lines waiting for it stay bounded.
final class RPCSession: SessionHandle, Sendable {
    let id: UInt64
    private let credentialState = Mutex<CredentialState>(CredentialState())

    private struct CredentialState {
        var credential: SessionCredential?
        /// Set when an authentication was refused for want of a place: the session is closed
        /// once that answer is written.
        var closing = false
    }
    /// Puts a notification on the connection, then calls `written` (written to the socket, or
    /// failed because the connection closed).
    typealias Writer = @Sendable (_ notification: JSONValue, _ written: @escaping @Sendable () -> Void) -> Void
    private let write: Writer
    private let queueLimit: Int
    private let state = Mutex<QueueState>(QueueState())
    /// Takes (or moves) the session's place among the authenticated ones for a credential, or
    /// says why there is none.
    private let admit: @Sendable (SessionCredential.Kind) -> AerieError?

    private struct QueueState {
        var pending = 0
        var overflowed = false
        var closed = false
        var closeActions: [@Sendable () -> Void] = []
    }

    static let overflowMethod = "messages.overflow"

    init(
        id: UInt64, notificationQueueLimit: Int, write: @escaping Writer,
        admit: @escaping @Sendable (SessionCredential.Kind) -> AerieError? = { _ in nil }
    ) {
        self.id = id
        self.admit = admit
        self.write = write
        self.queueLimit = max(1, notificationQueueLimit)
    }

    var credential: SessionCredential? { credentialState.withLock { $0.credential } }

    /// Whether the session is to be closed after the answer being written (a refused
    /// authentication).
    var isClosing: Bool { credentialState.withLock { $0.closing } }

    /// Makes `credential` the session's once it has a place; throws `busy` (and marks the session
    /// closing) when the server or the credential has no place left.
    func authenticate(as credential: SessionCredential) throws {
        if let refusal = admit(credential.kind) {
            credentialState.withLock { $0.closing = true }
            throw refusal
        }
        credentialState.withLock { $0.credential = credential }
    }

    var tenantID: TenantID? {
        if case .tenant(let id)? = credential?.kind { id } else { nil }
    }

    var credentialTokenHash: [UInt8]? { credential?.tokenHash }

    /// Forgets the credential, but only if it is still the one that failed a re-check.
    @discardableResult
    func revoke(ifStill tokenHash: [UInt8]) -> Bool {
        credentialState.withLock { state in
            guard state.credential?.tokenHash == tokenHash else { return false }
            state.credential = nil
            return true
        }
    }

    func revokeCredential(ifStill tokenHash: [UInt8], method: String, params: JSONValue) {
        if revoke(ifStill: tokenHash) { notify(method: method, params: params) }
    }

    @discardableResult
    func notify(method: String, params: JSONValue) -> Bool {
        enum Decision {
            case write
            case overflow
            case drop
        }
        let decision = state.withLock { state -> Decision in
            if state.closed || state.overflowed { return .drop }
            // One place more than the limit, for the overflow notice.
            state.pending += 1
            if state.pending > queueLimit {
                state.overflowed = true
                return .overflow
            }
            return .write
        }
        // Written outside the lock: a write that fails at once calls `written` on this thread.
        switch decision {
        case .drop:
            return false
        case .overflow:
            let notice: JSONValue = [
                "jsonrpc": "2.0", "method": .string(Self.overflowMethod),
                "params": ["dropped": "notifications are dropped until the queued ones are read"],
            ]
            write(notice) { self.didSend() }
            return false
        case .write:
            write(["jsonrpc": "2.0", "method": .string(method), "params": params]) { self.didSend() }
            return true
        }
    }

    var notificationRoom: Int {
        state.withLock { state in state.closed || state.overflowed ? 0 : max(0, queueLimit - state.pending) }
    }

    /// A notification handed to `write` has been written (or failed): an emptied queue ends an
    /// overflow.
    private func didSend() {
        state.withLock { state in
            state.pending = max(0, state.pending - 1)
            if state.pending == 0 { state.overflowed = false }
        }
    }

    func onClose(_ action: @escaping @Sendable () -> Void) {
        let runNow = state.withLock { state in
            if state.closed { return true }
            state.closeActions.append(action)
            return false
        }
        if runNow { action() }
    }

    func finish() {
        let actions = state.withLock { state in
            state.closed = true
            defer { state.closeActions = [] }
            return state.closeActions
        }
        for action in actions { action() }
    }
}
