import Synchronization

/// How clients are shown one event (a NOTIFY payload or a row of the durable event log, which
/// carry the same fields): registered by the plugin that owns the event's kind
/// (`MethodRouter.presentEvents`), so the server's push and event stream know no plugin's kinds.
public struct EventPresentation: Sendable, Equatable {
    /// The push to tenant sessions (`messages.received`, ...); nil: this event is not pushed.
    public var pushMethod: String?
    /// The push's params, and the members of a backend stream's `events.event`.
    public var fields: JSONValue
    /// What a push filter's `types` may match; nil: the filter's types do not apply.
    public var types: [String]?

    public init(pushMethod: String?, fields: JSONValue, types: [String]? = nil) {
        self.pushMethod = pushMethod
        self.fields = fields
        self.types = types
    }
}

/// The fields of an event of its kind, or nil when `data` is not one it presents.
public typealias EventPresenter = @Sendable (_ data: JSONValue) -> EventPresentation?

/// The presenters of the plugins a server runs, filled once the router is built: the server's
/// push and event stream are made before the plugins (a plugin may subscribe through them).
public final class EventPresenters: Sendable {
    private let presenters = Mutex<[String: EventPresenter]>([:])

    public init() {}

    public func install(_ router: MethodRouter) {
        presenters.withLock { $0 = router.eventPresenters }
    }

    /// How an event of `kind` is shown; nil when no plugin presents it.
    public func present(kind: String, data: JSONValue) -> EventPresentation? {
        presenters.withLock { $0[kind] }?(data)
    }
}
