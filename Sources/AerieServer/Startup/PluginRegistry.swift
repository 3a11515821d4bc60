import AerieCore
import AerieStore
import ConnectionsPlugin
import DeletePlugin
import DiscoverFeaturesPlugin
import IssueCredentialPlugin
import MessagesPlugin
import OutOfBandPlugin
import PresentProofPlugin

/// The protocol plugins `AERIE_PLUGINS` can name, each with how to build it: the one place a
/// plugin joins the server. A plugin that is not selected is not built; one built on another
/// names it in `requires`, and selecting it without that one is a configuration error.
/// `system` and `session` are not listed: they are always on.
struct PluginRegistry: Sendable {
    /// What the server hands plugin factories.
    struct Services: Sendable {
        /// Resolves short URLs and judges peers' endpoints (the server's `URLResolver`).
        let fetcher: any URLFetcher
        /// Where peers reach us (`AERIE_PUBLIC_ENDPOINT`, or the bound DIDComm address).
        let endpoint: @Sendable () -> String
        /// Push subscriptions for tenant sessions.
        let events: any EventSubscriptions
        /// What strangers may ask of the connection protocols, and the out-of-band wait.
        var connections = AerieConfiguration.Connections()
        /// The protocols the enabled plugins serve, filled once the router is built.
        let protocols: ServedProtocols
        /// The connections sent over, as last read (`AerieDatabase.sendingConnections`); `.off`:
        /// every send reads its connection.
        var sendingConnections = ConnectionSendCache.off
        /// Sending over connections, for every plugin that sends.
        var sender: any ConnectionSender { ConnectionSendService(endpoint: endpoint, connections: sendingConnections) }
    }

    /// The plugins built so far, for a factory that builds on one of them.
    struct Built {
        fileprivate var plugins: [any AeriePlugin] = []

        func plugin<P: AeriePlugin>(_ type: P.Type) -> P? {
            plugins.lazy.compactMap { $0 as? P }.first
        }

        /// The connections plugin's services, for a plugin built on it.
        func connections(for dependent: String) throws -> any ConnectionHandshakes {
            guard let connections = plugin(ConnectionsPlugin.self) else {
                throw AerieConfiguration.Invalid(description: "the \(dependent) plugin needs the connections plugin")
            }
            return connections.handshakes
        }

        /// The plugins built so far that take out-of-band attached requests over.
        var attachedRequestHandlers: [any AttachedRequestHandler] {
            plugins.compactMap { $0 as? any AttachedRequestHandler }
        }
    }

    struct Entry: Sendable {
        let name: String
        let requires: [String]
        /// The plugin's tables: known without building it.
        let storage: PluginStorage
        let build: @Sendable (Services, Built) throws -> any AeriePlugin

        init<P: AeriePlugin>(
            _ type: P.Type, requires: [String] = [], build: @escaping @Sendable (Services, Built) throws -> P
        ) {
            self.name = P.name
            self.requires = requires
            self.storage = P.storage
            self.build = { try build($0, $1) }
        }
    }

    /// In build order: a plugin comes after those it requires.
    static let standard = PluginRegistry(entries: [
        Entry(ConnectionsPlugin.self) { services, _ in
            ConnectionsPlugin(
                fetcher: services.fetcher, endpoint: services.endpoint, commits: services.events,
                pendingConnectionsMax: services.connections.pendingMax, sender: services.sender)
        },
        // Protocol plugins before out-of-band (which hands them attached requests) and messages
        // (which leaves the types they handle to them).
        Entry(IssueCredentialPlugin.self) { services, _ in
            IssueCredentialPlugin(sender: services.sender, limits: services.connections.openExchanges)
        },
        Entry(PresentProofPlugin.self, requires: [ConnectionsPlugin.name]) { services, _ in
            PresentProofPlugin(sender: services.sender, limits: services.connections.openExchanges)
        },
        Entry(OutOfBandPlugin.self, requires: [ConnectionsPlugin.name]) { services, built in
            OutOfBandPlugin(
                handshakes: try built.connections(for: OutOfBandPlugin.name), defaultTimeout: services.connections.outOfBandTimeout,
                attachedHandlers: built.attachedRequestHandlers)
        },
        Entry(DeletePlugin.self, requires: [ConnectionsPlugin.name]) { _, built in
            DeletePlugin(handshakes: try built.connections(for: DeletePlugin.name))
        },
        Entry(MessagesPlugin.self) { services, _ in MessagesPlugin(events: services.events, sender: services.sender) },
        Entry(DiscoverFeaturesPlugin.self, requires: [ConnectionsPlugin.name]) { services, built in
            DiscoverFeaturesPlugin(
                handshakes: try built.connections(for: DiscoverFeaturesPlugin.name), protocols: services.protocols)
        },
    ])

    let entries: [Entry]

    var names: [String] { entries.map(\.name) }

    /// Every plugin's migrations, enabled or not: the schema does not depend on `AERIE_PLUGINS`.
    var migrations: [Migration] {
        entries.flatMap { entry in entry.storage.migrations.map { Migration($0, plugin: entry.name) } }
    }

    /// Every plugin's storage, with the repositories of the `selected` ones available; `extra`
    /// plugins (tests') are enabled.
    func stores(selected: [String], extra: [any AeriePlugin] = []) throws -> PluginStores {
        try PluginStores(
            entries.map { (name: $0.name, storage: $0.storage, enabled: selected.contains($0.name)) }
                + extra.map { (name: type(of: $0).name, storage: type(of: $0).storage, enabled: true) })
    }

    /// The names `requested` selects, in build order (nil: every plugin). Unknown names and a
    /// plugin selected without one it requires are configuration errors naming the fix.
    func select(_ requested: [String]?) throws -> [String] {
        guard let requested else { return names }
        for name in requested where !names.contains(name) && name != "system" {
            throw AerieConfiguration.Invalid(
                description: "AERIE_PLUGINS names unknown plugin '\(name)'; available: \(names.joined(separator: ", "))")
        }
        let selected = entries.filter { requested.contains($0.name) }
        for entry in selected {
            for needed in entry.requires where !requested.contains(needed) {
                throw AerieConfiguration.Invalid(
                    description: "AERIE_PLUGINS enables '\(entry.name)', which is built on '\(needed)': add '\(needed)'")
            }
        }
        return selected.map(\.name)
    }

    /// Builds the selected plugins, in order.
    func build(_ selected: [String], services: Services) throws -> [any AeriePlugin] {
        var built = Built()
        for entry in entries where selected.contains(entry.name) {
            built.plugins.append(try entry.build(services, built))
        }
        return built.plugins
    }
}
