import AerieRPC
import Foundation

/// Everything `aerie-server` is configured with, grouped by the subsystem that uses it: each
/// service is handed its group. Each default is written once, on its property here or in its
/// group (or in `RPCServerConfiguration`, `HTTPListener.Limits`, `DatabaseConfiguration.Quotas`);
/// `AerieConfiguration+Environment` reads the `AERIE_*` variables and builds `--help` from them.
public struct AerieConfiguration: Sendable {
    /// `AERIE_HOME`: state directory (embedded cluster, master key, admin token).
    public var home: URL
    /// `AERIE_PLUGINS`: comma-separated plugin names; nil means all available.
    public var plugins: [String]?
    /// `AERIE_INSTANCE`: this server's name in outbox and webhook leases, unique among the
    /// servers of one database and the same across its restarts. Default: host name, state
    /// directory and DIDComm listen address.
    public var instance: String?
    public var database: Database
    public var caches = Caches()
    public var secrets = Secrets()
    public var rpc = RPCServerConfiguration()
    public var didcomm = DIDComm()
    public var connections = Connections()
    public var outbound = Outbound()
    public var delivery = Delivery()
    public var webhooks = Webhooks()
    public var events = Events()
    public var tenants = Tenants()
    public var operations = Operations()

    public var instanceName: String {
        instance ?? "\(ProcessInfo.processInfo.hostName):\(home.standardizedFileURL.path):\(didcomm.host):\(didcomm.port)"
    }

    /// Every other setting starts at its default (the one place defaults are written: `--help`
    /// reads them from here); set what differs on the value.
    public init(home: URL = URL(fileURLWithPath: ".aerie"), databaseURL: String? = nil, ownerDatabaseURL: String? = nil) {
        self.home = home
        self.database = Database(url: databaseURL, ownerURL: ownerDatabaseURL)
    }

    public struct Invalid: Error, CustomStringConvertible {
        public let description: String
    }

    public enum LogFormat: String, Sendable {
        case text, json
    }

    public struct ListenAddress: Sendable, Equatable, CustomStringConvertible {
        public var host: String
        public var port: Int

        public init(host: String, port: Int) {
            self.host = host
            self.port = port
        }

        public var description: String { host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)" }
    }

    /// Parses `HOST:PORT` (`[::1]:7400` for IPv6).
    public static func parseListen(_ value: String, variable: String) throws -> (String, Int) {
        guard let colon = value.lastIndex(of: ":"),
            let port = Int(value[value.index(after: colon)...]), (0...65535).contains(port)
        else {
            throw Invalid(description: "\(variable) must be HOST:PORT, got '\(value)'")
        }
        var host = String(value[..<colon])
        if host.hasPrefix("["), host.hasSuffix("]") { host = String(host.dropFirst().dropLast()) }
        guard !host.isEmpty else { throw Invalid(description: "\(variable) must be HOST:PORT, got '\(value)'") }
        return (host, port)
    }
}
