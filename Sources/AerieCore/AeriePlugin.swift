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
    func register(with router: inout MethodRouter) throws
}

extension AeriePlugin {
    public static var storage: PluginStorage { .none }
}
