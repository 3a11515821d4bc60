/// What a push subscription wants: `nil` lets everything through.
public struct EventFilter: Sendable, Equatable {
    /// Message types (normalised as stored) for `messages.received`.
    public var types: Set<String>?
    /// Pairwise DIDs (ours) for both `messages.received` and `connections.stateChanged`.
    public var pairwiseDids: Set<String>?

    public init(types: Set<String>? = nil, pairwiseDids: Set<String>? = nil) {
        self.types = types
        self.pairwiseDids = pairwiseDids
    }
}

/// Server push as plugins see it: a session subscribes for its tenant's events, and the server
/// sends `messages.received` and `connections.stateChanged` notifications to it.
public protocol EventSubscriptions: Sendable {
    /// Returns once events committed from now on reach the session (this process is listening).
    func subscribe(_ session: any SessionHandle, tenant: TenantID, filter: EventFilter) async throws
    /// Returns whether the session had a subscription.
    @discardableResult
    func unsubscribe(_ session: any SessionHandle) -> Bool
    /// Calls `observer` for every event of `kind` that any process commits (this one's too), as
    /// this process hears it: the tenant and the event's fields. For waking waits sooner than a
    /// poll would; not a delivery guarantee: nothing is heard while `hearsCommits` is false.
    func observe(kind: String, _ observer: @escaping @Sendable (TenantID, JSONValue) -> Void)
    /// Whether committed events are heard now (the server's LISTEN connection is up).
    var hearsCommits: Bool { get }
}
