import AerieClient
import AerieStore
import Foundation

/// `deploy/local-cluster` driven from a test: its own PostgreSQL, N `aerie-server` processes
/// (the debug build next to the tests) and HAProxy, under a temporary directory, on free ports.
public struct LocalCluster: Sendable {
    public let directory: URL
    public let rpcPort: Int
    public let didcommPort: Int
    public let serverBasePort: Int
    public let servers: Int
    /// Extra environment for every server (e.g. `AERIE_ALLOW_PRIVATE_URLS=1`).
    public let serverEnvironment: [String: String]

    public init(servers: Int = 3, serverEnvironment: [String: String] = [:]) throws {
        directory = URL(fileURLWithPath: "/tmp/aerie-cluster-\(UUID().uuidString.prefix(8))")
        rpcPort = try ACAPyAgent.freePort()
        didcommPort = try ACAPyAgent.freePort()
        // deploy/local-cluster gives server i the ports base+i-1, base+100+i-1 and base+200+i-1.
        serverBasePort = try ACAPyAgent.freePortBase(offsets: (0..<servers).flatMap { [$0, 100 + $0, 200 + $0] })
        self.servers = servers
        self.serverEnvironment = serverEnvironment
    }

    /// Runs `deploy/local-cluster arguments`; throws with its output when it fails.
    @discardableResult
    public func run(_ arguments: [String]) async throws -> String {
        let binDir = try BuiltProducts.executable("aerie-server").deletingLastPathComponent().path
        var assignments = [
            "CLUSTER_DIR=\(directory.path)", "CLUSTER_RPC_PORT=\(rpcPort)", "CLUSTER_DIDCOMM_PORT=\(didcommPort)",
            "CLUSTER_SERVER_BASE_PORT=\(serverBasePort)", "AERIE_BIN_DIR=\(binDir)",
        ]
        assignments += serverEnvironment.map { "\($0.key)=\($0.value)" }.sorted()
        return try await DeployScript.run("local-cluster", environment: assignments, arguments: arguments)
    }

    public func start() async throws { try await run(["start", String(servers)]) }

    /// Stops everything and removes the directory.
    public func stopAndRemove() async {
        _ = try? await run(["stop"])
        try? FileManager.default.removeItem(at: directory)
    }

    public var adminToken: String {
        get throws {
            try String(contentsOf: directory.appendingPathComponent("home/admin-token"), encoding: .utf8)
                .trimmingCharacters(in: .whitespacesAndNewlines)
        }
    }

    /// A session through HAProxy.
    public func client() async throws -> AerieClient {
        try await AerieClient.connect(host: "127.0.0.1", port: rpcPort)
    }

    /// HAProxy's current sessions per server of the JSON-RPC backend (`aerie1`...).
    public func rpcSessionsPerServer() async throws -> [String: Int] {
        let status = try await run(["status"])
        var sessions: [String: Int] = [:]
        for line in status.split(separator: "\n") where line.contains("aerie_rpc_servers/") {
            // "  aerie_rpc_servers/aerie1: UP, sessions now 2, total 5" (the status may read "UP 1/2")
            guard let name = line.components(separatedBy: "aerie_rpc_servers/").last?.split(separator: ":").first,
                let now = line.components(separatedBy: "sessions now ").last?.split(separator: ",").first,
                let count = Int(now.trimmingCharacters(in: .whitespaces))
            else { continue }
            sessions[String(name)] = count
        }
        return sessions
    }

    /// The server log of server `index` (1-based).
    public func log(_ index: Int) -> String {
        (try? String(contentsOf: directory.appendingPathComponent("server-\(index).log"), encoding: .utf8)) ?? ""
    }
}

/// The scripts of `deploy/`, run from a test.
enum DeployScript {
    /// Runs `deploy/<name> arguments` with `environment` assignments (`NAME=value`) added;
    /// answers its output, or throws with it when the script fails.
    static func run(_ name: String, environment: [String], arguments: [String]) async throws -> String {
        let root = ACAPyAgent.packageRoot
        let command = environment + [root.appendingPathComponent("deploy/\(name)").path] + arguments
        // AerieStore's spawn: the processes a script leaves running keep no descriptor of ours.
        let outcome = try await offPool { try Subprocess.run(URL(fileURLWithPath: "/usr/bin/env"), command, as: nil, in: root) }
        guard outcome.status == 0 else {
            throw ServerProcess.Unavailable(description: "\(name) \(arguments) failed (\(outcome.status)):\n\(outcome.output)")
        }
        return outcome.output
    }
}
