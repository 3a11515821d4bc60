import Foundation

/// `deploy/patroni-cluster` driven from a test: etcd and two PostgreSQL nodes under Patroni with
/// synchronous replication, under a temporary directory, on loopback ports of their own.
public struct PatroniCluster: Sendable {
    public let directory: URL
    /// Node i listens on base+i (PostgreSQL) and base+100+i (REST API); etcd on base+200, base+201.
    public let basePort: Int

    public init() throws {
        directory = URL(fileURLWithPath: "/tmp/aerie-patroni-\(UUID().uuidString.prefix(8))")
        // Reserved with the other tests' free ports, so none of them takes one of these.
        basePort = try ACAPyAgent.freePortBase(offsets: [1, 2, 101, 102, 200, 201])
    }

    @discardableResult
    public func run(_ arguments: [String]) async throws -> String {
        try await DeployScript.run(
            "patroni-cluster", environment: ["PATRONI_DIR=\(directory.path)", "PATRONI_BASE_PORT=\(basePort)"],
            arguments: arguments)
    }

    /// Starts etcd and both nodes; returns once there is a primary with a synchronous standby and
    /// Aerie's roles and database exist.
    public func start() async throws { try await run(["start"]) }

    /// The node (1 or 2) that is primary now, or nil while there is none.
    public func primary() async -> Int? {
        (try? await run(["primary"])).flatMap { Int($0.trimmingCharacters(in: .whitespacesAndNewlines)) }
    }

    /// `kill -9` of node `index`'s Patroni and PostgreSQL.
    public func kill(_ index: Int) async throws { try await run(["kill", String(index)]) }

    public func restart(_ index: Int) async throws { try await run(["restart", String(index)]) }

    /// The multi-host conninfo (`target_session_attrs=read-write`) for `role`.
    public func conninfo(role: String) async throws -> String {
        try await run(["conninfo", role]).trimmingCharacters(in: .whitespacesAndNewlines)
    }

    public func stopAndRemove() async {
        _ = try? await run(["stop"])
        try? FileManager.default.removeItem(at: directory)
    }

    public func log(node index: Int) -> String {
        (try? String(contentsOf: directory.appendingPathComponent("node\(index).log"), encoding: .utf8)) ?? ""
    }
}
