import Logging

/// Who is calling, as established by `session.authenticate` and re-checked on every call.
public enum Principal: Sendable {
    case anonymous
    case tenant(TenantContext)
    case admin
    /// A backend session calling a method open to backends (`Access.adminOrBackend`,
    /// `Access.backend`): the handler scopes what it does to that backend's tenants.
    case backend(BackendID)
}

/// What a handler learns about the call it serves.
public struct CallContext: Sendable {
    public var principal: Principal
    public var logger: Logger
    /// The session the call arrived on, for methods that push notifications later.
    public var session: any SessionHandle

    public init(principal: Principal, logger: Logger, session: any SessionHandle) {
        self.principal = principal
        self.logger = logger
        self.session = session
    }
}

/// A client session as plugins see it: an id, and a way to push notifications to it.
public protocol SessionHandle: Sendable {
    var id: UInt64 { get }
    /// Queues a JSON-RPC notification; returns false when the session is gone or its queue is full.
    @discardableResult
    func notify(method: String, params: JSONValue) -> Bool
    /// How many notifications the session's queue takes now without overflowing (0 when full or
    /// closed). A sender that keeps its own place (the event stream) queues only this many and
    /// reads the rest again later, so it never overflows and never loses one.
    var notificationRoom: Int { get }
    /// Runs `action` once when the session closes (at once if it already has), so whatever
    /// holds the session (a push subscription) can let it go.
    func onClose(_ action: @escaping @Sendable () -> Void)
    /// The tenant the session is authenticated as right now (nil: none, or admin); push checks
    /// it on every delivery, so a session that re-authenticated as another tenant gets nothing
    /// of the first one's.
    var tenantID: TenantID? { get }
    /// The hash of the token the session authenticated with (nil: not authenticated).
    var credentialTokenHash: [UInt8]? { get }
    /// Forgets the session's credential if it is still the one hashed `tokenHash`, and then
    /// sends the notification `method` with `params` (why the session must authenticate again).
    func revokeCredential(ifStill tokenHash: [UInt8], method: String, params: JSONValue)
}

extension SessionHandle {
    public var tenantID: TenantID? { nil }
    public var credentialTokenHash: [UInt8]? { nil }
    public var notificationRoom: Int { 1 }
    public func revokeCredential(ifStill tokenHash: [UInt8], method: String, params: JSONValue) {}

    /// Sessions that never close (test doubles) have nothing to run.
    public func onClose(_ action: @escaping @Sendable () -> Void) {}
}
