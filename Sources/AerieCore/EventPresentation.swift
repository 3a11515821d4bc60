import Synchronization

/// How clients are shown one event (a NOTIFY payload or a row of the durable event log, which
/// carry the same fields): registered by the plugin that owns the event's kind
/// (`EventPresenterRegistry.presentEvents`), so the server's push and event stream know no
/// plugin's kinds.
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

/// How each event kind is presented, as the plugins register it (`AeriePlugin.register(presenters:)`);
/// one plugin owns each kind.
public struct EventPresenterRegistry: Sendable {
    /// Event kind (`message`, `connection`, ...) -> how clients are shown it.
    public private(set) var presenters: [String: EventPresenter] = [:]
    /// The plugin currently registering; set by `install(_:)` so errors name it.
    private var currentPlugin = "core"

    public init() {}

    /// Lets `plugin` register the kinds it presents.
    public mutating func install(_ plugin: some AeriePlugin) throws {
        let previous = currentPlugin
        currentPlugin = type(of: plugin).name
        defer { currentPlugin = previous }
        try plugin.register(presenters: &self)
    }

    /// Registers how clients are shown events of `kind` (the `kind` the schema's triggers write).
    public mutating func presentEvents(ofKind kind: String, with presenter: @escaping EventPresenter) throws {
        guard presenters[kind] == nil else {
            throw RouterError(message: "event kind '\(kind)' is presented twice (the second by '\(currentPlugin)')")
        }
        presenters[kind] = presenter
    }
}

/// The presenters of the plugins a server runs, filled once they are registered: the server's
/// push and event stream are made before the plugins (a plugin may subscribe through them).
public final class EventPresenters: Sendable {
    private let presenters = Mutex<[String: EventPresenter]>([:])

    public init() {}

    public func install(_ registry: EventPresenterRegistry) {
        presenters.withLock { $0 = registry.presenters }
    }

    /// How an event of `kind` is shown; nil when no plugin presents it.
    public func present(kind: String, data: JSONValue) -> EventPresentation? {
        presenters.withLock { $0[kind] }?(data)
    }
}
