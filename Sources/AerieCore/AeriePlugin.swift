/// A protocol plugin: registers the JSON-RPC methods and inbound DIDComm message types it serves.
///
/// Plugins depend on AerieCore and AerieCrypto only; storage, transport and the wire reach them
/// through `TenantContext`.
public protocol AeriePlugin: Sendable {
    /// The name used in `AERIE_PLUGINS` (e.g. `connections`, `out-of-band`).
    static var name: String { get }
    /// The tables the plugin owns and their upkeep; read from the type, whether or not the plugin
    /// is enabled.
    static var storage: PluginStorage { get }
    /// Registers the JSON-RPC methods and inbound message types the plugin serves.
    func register(with router: inout MethodRouter) throws
    /// Registers what the plugin is told about connections (failures, a peer's first message);
    /// none by default.
    func register(hooks: inout ConnectionHooks)
    /// Registers how the event kinds the plugin owns are shown to clients; none by default.
    func register(presenters: inout EventPresenterRegistry) throws
}

extension AeriePlugin {
    public static var storage: PluginStorage { .none }
    public func register(hooks: inout ConnectionHooks) {}
    public func register(presenters: inout EventPresenterRegistry) throws {}
}
