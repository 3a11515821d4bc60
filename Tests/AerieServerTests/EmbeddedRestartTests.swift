import AerieClient
import AerieCore
import AerieStore
import AerieTesting
import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// Issue 12 item 6: the real `aerie-server` binary with the embedded default, killed with
/// SIGKILL, comes back on the same AERIE_HOME, whether its PostgreSQL survived (reused) or was
/// killed too and left a postmaster.pid naming a PID another program now holds.
@Suite(.serialized, .timeLimit(.minutes(10))) struct EmbeddedRestartTests {
    /// One `aerie-server` process on `home`.
    final class ServerProcess {
        let process = Process()
        let port: Int

        init(home: URL, port: Int, didcommPort: Int) throws {
            self.port = port
            self.home = home
            process.executableURL = try BuiltProducts.executable("aerie-server")
            var environment = ProcessInfo.processInfo.environment.filter { !$0.key.hasPrefix("AERIE_") }
            environment["AERIE_HOME"] = home.path
            environment["AERIE_RPC_LISTEN"] = "127.0.0.1:\(port)"
            environment["AERIE_DIDCOMM_LISTEN"] = "127.0.0.1:\(didcommPort)"
            environment["AERIE_METRICS_LISTEN"] = "off"
            environment["AERIE_SCHEMA_DIR"] = SchemaLocator.defaultDirectory().path
            environment["AERIE_LOG_LEVEL"] = "warning"
            process.environment = environment
            process.standardOutput = FileHandle.nullDevice
            // Kept so a server that exits says why in the failure (e.g. a port taken meanwhile).
            _ = FileManager.default.createFile(atPath: stderrLog.path, contents: nil)
            process.standardError = try FileHandle(forWritingTo: stderrLog)
            try process.run()
        }

        /// Beside the home (not in it: the server makes its home itself); removed with the test's files.
        var stderrLog: URL { URL(fileURLWithPath: home.path + "-\(port).stderr") }
        let home: URL

        /// The end of what the server wrote to stderr.
        var stderrTail: String {
            let text = (try? String(contentsOf: stderrLog, encoding: .utf8)) ?? ""
            return String(text.suffix(2000))
        }

        /// Waits until `system.ping` answers (first start runs initdb: allow a while).
        func ready(seconds: Int = 120) async throws {
            let clock = ContinuousClock()
            let deadline = clock.now.advanced(by: .seconds(seconds))
            while clock.now < deadline {
                guard process.isRunning else {
                    Issue.record("aerie-server exited with \(process.terminationStatus): \(stderrTail)")
                    throw Failure("aerie-server exited")
                }
                if let client = try? await AerieClient.connect(host: "127.0.0.1", port: port) {
                    let pong = try? await client.call("system.ping")
                    await client.close()
                    if pong != nil { return }
                }
                try await Task.sleep(for: .milliseconds(200))
            }
            throw Failure("aerie-server did not answer within \(seconds) s")
        }

        func signal(_ number: Int32) async throws {
            kill(process.processIdentifier, number)
            for _ in 0..<600 where process.isRunning { try await Task.sleep(for: .milliseconds(100)) }
            #expect(!process.isRunning)
        }
    }

    struct Failure: Error, CustomStringConvertible {
        let description: String
        init(_ description: String) { self.description = description }
    }


    /// PIDs of processes whose working directory is the cluster's data directory (every
    /// PostgreSQL process of it).
    static func clusterProcesses(_ data: URL) -> [pid_t] {
        let target = data.resolvingSymlinksInPath().path
        let entries = (try? FileManager.default.contentsOfDirectory(atPath: "/proc")) ?? []
        return entries.compactMap { entry in
            guard let pid = pid_t(entry),
                let cwd = try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/\(entry)/cwd"), cwd == target
            else { return nil }
            return pid
        }
    }

    /// A tenant made with the admin token the server wrote to `home`, with setting `k` set to
    /// `value`; answers the tenant's token.
    static func tenantWithSetting(home: URL, port: Int, label: String, value: String) async throws -> String {
        let adminToken = try String(contentsOf: home.appendingPathComponent("admin-token"), encoding: .utf8)
            .trimmingCharacters(in: .whitespacesAndNewlines)
        let admin = try await tenantClient(port: port, token: adminToken)
        let created = try await admin.call("admin.tenants.create", params: ["label": .string(label)])
        await admin.close()
        let token = try #require(created["token"]?.stringValue)
        let client = try await tenantClient(port: port, token: token)
        _ = try await client.call("settings.set", params: ["key": "k", "value": .string(value)])
        await client.close()
        return token
    }

    static func tenantClient(port: Int, token: String) async throws -> AerieClient {
        let client = try await AerieClient.connect(host: "127.0.0.1", port: port)
        try await client.authenticate(token: token)
        return client
    }

    @Test func killedServerComesBackOnItsEmbeddedDatabase() async throws {
        // Short: the cluster's Unix socket path must stay under 108 bytes.
        let home = URL(fileURLWithPath: "/tmp/aerie-rs-\(UUID().uuidString.prefix(8))")
        let data = EmbeddedPostgres.clusterDirectory(forHome: home).appendingPathComponent("data")
        defer {
            try? FileManager.default.removeItem(at: home)
            for log in (try? FileManager.default.contentsOfDirectory(atPath: "/tmp")) ?? [] where log.hasPrefix(home.lastPathComponent + "-") {
                try? FileManager.default.removeItem(atPath: "/tmp/" + log)
            }
        }
        let port = try ACAPyAgent.freePort()
        let didcommPort = try ACAPyAgent.freePort()
        var server = try ServerProcess(home: home, port: port, didcommPort: didcommPort)
        var stand: Process? = nil
        do {
            try await server.ready()
            // The embedded default keeps every acknowledged commit through a crash.
            let conf = try String(contentsOf: data.appendingPathComponent("aerie.conf"), encoding: .utf8)
            for setting in ["fsync = on", "synchronous_commit = on", "full_page_writes = on"] {
                #expect(conf.contains(setting))
            }
            let token = try await Self.tenantWithSetting(home: home, port: port, label: "survivor", value: "before the crash")

            // 1. kill -9 of the server alone: its PostgreSQL keeps running and is reused.
            try await server.signal(SIGKILL)
            let survivors = Self.clusterProcesses(data)
            #expect(!survivors.isEmpty, "the embedded PostgreSQL should outlive a killed server")
            server = try ServerProcess(home: home, port: port, didcommPort: didcommPort)
            try await server.ready()
            var again = try await Self.tenantClient(port: port, token: token)
            #expect(try await again.call("settings.get", params: ["key": "k"])["value"] == "before the crash")
            _ = try await again.call("settings.set", params: ["key": "k", "value": "after one restart"])
            await again.close()

            // 2. Server and PostgreSQL killed; postmaster.pid then names a live, unrelated process
            //    (PID reuse after a crash): PostgreSQL alone would refuse to start.
            try await server.signal(SIGKILL)
            for pid in Self.clusterProcesses(data) { kill(pid, SIGKILL) }
            for _ in 0..<100 where !Self.clusterProcesses(data).isEmpty { try await Task.sleep(for: .milliseconds(100)) }
            #expect(Self.clusterProcesses(data).isEmpty)
            // Owned by the cluster's OS user (postgres when we are root), as a reused PID would
            // be: PostgreSQL cannot tell it from a live postmaster.
            let other = Process()
            if geteuid() == 0 {
                other.executableURL = URL(fileURLWithPath: "/usr/bin/setpriv")
                other.arguments = ["--reuid=postgres", "--regid=postgres", "--clear-groups", "/bin/sleep", "120"]
            } else {
                other.executableURL = URL(fileURLWithPath: "/bin/sleep")
                other.arguments = ["120"]
            }
            try other.run()
            stand = other
            let pidFile = data.appendingPathComponent("postmaster.pid")
            var lines = try String(contentsOf: pidFile, encoding: .utf8).components(separatedBy: "\n")
            lines[0] = "\(other.processIdentifier)"
            try lines.joined(separator: "\n").write(to: pidFile, atomically: false, encoding: .utf8)

            server = try ServerProcess(home: home, port: port, didcommPort: didcommPort)
            try await server.ready()
            again = try await Self.tenantClient(port: port, token: token)
            #expect(try await again.call("settings.get", params: ["key": "k"])["value"] == "after one restart")
            _ = try await again.call("settings.set", params: ["key": "k", "value": "after two restarts"])
            await again.close()

            // 3. Both killed again, the stale postmaster.pid left as is (its PID is gone).
            try await server.signal(SIGKILL)
            for pid in Self.clusterProcesses(data) { kill(pid, SIGKILL) }
            for _ in 0..<100 where !Self.clusterProcesses(data).isEmpty { try await Task.sleep(for: .milliseconds(100)) }
            #expect(FileManager.default.fileExists(atPath: pidFile.path))
            server = try ServerProcess(home: home, port: port, didcommPort: didcommPort)
            try await server.ready()
            again = try await Self.tenantClient(port: port, token: token)
            #expect(try await again.call("settings.get", params: ["key": "k"])["value"] == "after two restarts")
            await again.close()

            // A graceful stop stops the embedded cluster too.
            try await server.signal(SIGTERM)
            #expect(Self.clusterProcesses(data).isEmpty)
        } catch {
            if server.process.isRunning { try? await server.signal(SIGTERM) }
            for pid in Self.clusterProcesses(data) { kill(pid, SIGKILL) }
            stand?.terminate()
            throw error
        }
        stand?.terminate()
    }

    /// As root, an AERIE_HOME the `postgres` OS user cannot reach (a clone in root's mode-0700
    /// home): the cluster lives under that user's home instead, is stopped with the server, and
    /// is found again, with its data, by the next start and by `aerie-admin`.
    @Test(.enabled(if: geteuid() == 0, "only root runs the cluster as another OS user"))
    func homeUnderAPrivateDirectoryKeepsItsClusterWhereItsUserCanReachIt() async throws {
        let parent = URL(fileURLWithPath: "/tmp/aerie-700-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(
            at: parent.appendingPathComponent("clone"), withIntermediateDirectories: true)
        #expect(chmod(parent.path, 0o700) == 0)
        let home = parent.appendingPathComponent("clone/.aerie")
        let cluster = EmbeddedPostgres.clusterDirectory(forHome: home)
        let data = cluster.appendingPathComponent("data")
        #expect(!cluster.path.hasPrefix(parent.path + "/"), "\(cluster.path)")
        defer {
            try? FileManager.default.removeItem(at: parent)
            try? FileManager.default.removeItem(at: cluster)
        }
        let port = try ACAPyAgent.freePort()
        let didcommPort = try ACAPyAgent.freePort()
        var server = try ServerProcess(home: home, port: port, didcommPort: didcommPort)
        do {
            try await server.ready()
            #expect(FileManager.default.fileExists(atPath: data.appendingPathComponent("PG_VERSION").path))
            #expect(!FileManager.default.fileExists(atPath: home.appendingPathComponent("pg").path))
            let recorded = try String(contentsOf: cluster.appendingPathComponent("home"), encoding: .utf8)
            #expect(recorded.trimmingCharacters(in: .whitespacesAndNewlines) == home.path)
            // Nothing was opened up on the way: the parent stays private, the secrets stay home.
            var info = stat()
            #expect(stat(parent.path, &info) == 0 && info.st_mode & 0o777 == 0o700)
            #expect(stat(home.appendingPathComponent("admin-token").path, &info) == 0 && info.st_mode & 0o777 == 0o600)
            #expect(stat(cluster.path, &info) == 0 && info.st_mode & 0o777 == 0o700 && info.st_uid == getpwnam("postgres").pointee.pw_uid)

            let token = try await Self.tenantWithSetting(home: home, port: port, label: "private-home", value: "kept")

            try await server.signal(SIGTERM)
            #expect(Self.clusterProcesses(data).isEmpty, "a graceful stop stops the cluster")

            // aerie-admin finds the same cluster: nothing left to migrate, and still no <home>/pg.
            var environment = ProcessInfo.processInfo.environment.filter { !$0.key.hasPrefix("AERIE_") }
            environment["AERIE_HOME"] = home.path
            environment["AERIE_SCHEMA_DIR"] = SchemaLocator.defaultDirectory().path
            let migrate = try await runProcess(
                try BuiltProducts.executable("aerie-admin"), ["migrate", "--json"], environment: environment)
            #expect(migrate.status == 0, "\(migrate.stderr)")
            #expect(migrate.stdout.contains("{\"applied\":[]}"), "\(migrate.stdout)")
            #expect(!FileManager.default.fileExists(atPath: home.appendingPathComponent("pg").path))
            #expect(Self.clusterProcesses(data).isEmpty, "aerie-admin stops the cluster it started")

            server = try ServerProcess(home: home, port: port, didcommPort: didcommPort)
            try await server.ready()
            let again = try await Self.tenantClient(port: port, token: token)
            #expect(try await again.call("settings.get", params: ["key": "k"])["value"] == "kept")
            await again.close()
            try await server.signal(SIGTERM)
            #expect(Self.clusterProcesses(data).isEmpty)
        } catch {
            if server.process.isRunning { try? await server.signal(SIGTERM) }
            for pid in Self.clusterProcesses(data) { kill(pid, SIGKILL) }
            throw error
        }
    }
}
