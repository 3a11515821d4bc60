import AerieCore
import AerieRPC
import Foundation
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// An ACA-Py agent (1.2.7 or 1.7.0) for interop tests: started from the venvs `./scripts/test`
/// installs (`.interop/venv-1.2.7`, `.interop/venv-1.7.0`), on loopback only, with an in-memory wallet, no ledger and auto-accept
/// of connection requests; driven through its admin API. `stop()` ends it by its pid.
public final class ACAPyAgent: @unchecked Sendable {
    public struct Unavailable: Error, CustomStringConvertible {
        public let description: String
    }

    /// The ACA-Py releases the interop tests run against.
    public enum Version: String, Sendable, CaseIterable {
        case v1_2_7 = "1.2.7"
        case v1_7_0 = "1.7.0"

        /// 1.2.7 keeps its wallet in memory (`--wallet-test`). 1.7.0 cannot auto-provision an
        /// in-memory store (it opens before provisioning and askar reports "no such table:
        /// config"), so it keeps a sqlite wallet under its temporary HOME, removed by `stop()`.
        var walletArguments: [String] {
            switch self {
            case .v1_2_7: ["--wallet-test"]
            case .v1_7_0: []
            }
        }

        /// The wallet arguments for `store`: the version's own (`walletArguments`), or a sqlite
        /// file under the agent's temporary HOME (ACA-Py's deployed form; what 1.7.0 always uses).
        func walletArguments(_ store: WalletStore) -> [String] {
            store == .file ? [] : walletArguments
        }

        /// The environment variable that overrides the venv's `aca-py`.
        var environmentOverride: String {
            switch self {
            case .v1_2_7: "AERIE_ACAPY"
            case .v1_7_0: "AERIE_ACAPY_17"
            }
        }
    }

    /// Where an agent keeps its wallet.
    public enum WalletStore: Sendable {
        /// The version's own choice (`Version.walletArguments`): in memory for 1.2.7.
        case versionDefault
        /// A sqlite file under the agent's temporary HOME, removed by `stop()`: how a deployed
        /// ACA-Py keeps it (askar's default store), for either version.
        case file
    }

    /// `http://127.0.0.1:<admin port>`.
    public let adminURL: String
    /// Its DIDComm endpoint, `http://127.0.0.1:<inbound port>`.
    public let endpoint: String
    private let process: Process
    private let home: URL
    private let logFile: URL

    private init(adminURL: String, endpoint: String, process: Process, home: URL, logFile: URL) {
        self.adminURL = adminURL
        self.endpoint = endpoint
        self.process = process
        self.home = home
        self.logFile = logFile
    }

    /// The package checkout (Sources/AerieTesting/ACAPyAgent.swift -> root).
    public static var packageRoot: URL {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
    }

    /// The `aca-py` console script of `version`; fails clearly when the venv is missing.
    public static func executable(version: Version = .v1_2_7) throws -> URL {
        let path = ProcessInfo.processInfo.environment[version.environmentOverride]
            ?? packageRoot.appendingPathComponent(".interop/venv-\(version.rawValue)/bin/aca-py").path
        guard FileManager.default.isExecutableFile(atPath: path) else {
            throw Unavailable(
                description:
                    "ACA-Py \(version.rawValue) missing at \(path): run ./scripts/test (it installs acapy-agent \(version.rawValue) into .interop/venv-\(version.rawValue)), or set \(version.environmentOverride)")
        }
        return URL(fileURLWithPath: path)
    }

    /// Starts an agent and waits (at most `readyTimeout`) until `/status/ready` says so.
    /// `extraArguments` are appended to its command line (e.g. `--auto-accept-invites` for an invitee).
    /// Both versions take the same flags (askar wallet, no ledger); `wallet` overrides where the
    /// wallet is kept (`Version.walletArguments`). A port taken between
    /// `freePort()` and ACA-Py's bind (other tests start agents and servers at the same time) is
    /// retried with new ports, at most three times.
    public static func start(
        version: Version = .v1_2_7, label: String = "ACA-Py Inviter", extraArguments: [String] = [],
        wallet: WalletStore = .versionDefault, readyTimeout: Duration = .seconds(60)
    ) async throws -> ACAPyAgent {
        // Starting ACA-Py costs seconds of CPU; suites run in parallel on two cores, so at most
        // two start at once and each one's ready timeout counts from its own start.
        await startSlots.acquire()
        defer { startSlots.release() }
        var attempt = 1
        while true {
            do {
                return try await launch(
                    version: version, label: label, extraArguments: extraArguments, wallet: wallet, readyTimeout: readyTimeout)
            } catch is PortTaken where attempt < 3 {
                attempt += 1
            }
        }
    }

    private static let startSlots = InFlightLimiter(limit: 2)

    struct PortTaken: Error, CustomStringConvertible {
        let description: String
    }

    private static func launch(
        version: Version, label: String, extraArguments: [String], wallet: WalletStore, readyTimeout: Duration
    ) async throws -> ACAPyAgent {
        let executable = try executable(version: version)
        let inbound = try freePort()
        let admin = try freePort()
        let home = FileManager.default.temporaryDirectory.appendingPathComponent("aerie-acapy-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: home, withIntermediateDirectories: true)
        let logFile = home.appendingPathComponent("acapy.log")
        _ = FileManager.default.createFile(atPath: logFile.path, contents: nil)
        let process = Process()
        process.executableURL = executable
        process.currentDirectoryURL = home
        process.arguments = [
            "start", "--inbound-transport", "http", "127.0.0.1", "\(inbound)", "--outbound-transport", "http",
            "--endpoint", "http://127.0.0.1:\(inbound)", "--admin", "127.0.0.1", "\(admin)", "--admin-insecure-mode",
            "--no-ledger", "--wallet-type", "askar", "--wallet-name", "w\(UInt32.random(in: 0...UInt32.max))",
            "--wallet-key", "aerie-test-key", "--auto-provision", "--auto-accept-requests", "--auto-ping-connection",
            "--label", label, "--log-level", "warning",
        ] + version.walletArguments(wallet) + extraArguments
        var environment = ProcessInfo.processInfo.environment
        environment["HOME"] = home.path
        environment["PYTHONUNBUFFERED"] = "1"
        for proxy in ["http_proxy", "https_proxy", "HTTP_PROXY", "HTTPS_PROXY", "all_proxy", "ALL_PROXY"] {
            environment[proxy] = nil
        }
        process.environment = environment
        let log = try FileHandle(forWritingTo: logFile)
        process.standardOutput = log
        process.standardError = log
        process.standardInput = FileHandle.nullDevice
        try process.run()
        let agent = ACAPyAgent(
            adminURL: "http://127.0.0.1:\(admin)", endpoint: "http://127.0.0.1:\(inbound)", process: process, home: home,
            logFile: logFile)
        let deadline = ContinuousClock.now + readyTimeout
        while true {
            let running = process.isRunning
            var ready = false
            if running { ready = (try? await agent.admin("GET", "/status/ready"))?["ready"]?.boolValue == true }
            // The inbound transport can fail to bind while the admin API still comes up ready.
            if agent.log().contains("address already in use") {
                let output = agent.log()
                await agent.stop()
                throw PortTaken(description: "ACA-Py could not bind its ports:\n\(output.suffix(2000))")
            }
            if !running {
                let output = agent.log()
                await agent.stop()
                throw Unavailable(description: "ACA-Py exited during start-up:\n\(output.suffix(4000))")
            }
            if ready { return agent }
            guard ContinuousClock.now < deadline else {
                let output = agent.log()
                await agent.stop()
                throw Unavailable(description: "ACA-Py was not ready within \(readyTimeout):\n\(output.suffix(4000))")
            }
            try await Task.sleep(for: .milliseconds(250))
        }
    }

    /// Calls the admin API; answers its JSON.
    public func admin(_ method: String, _ path: String, body: JSONValue? = nil) async throws -> JSONValue {
        let response = try await LoopbackHTTP.request(
            method, url: adminURL + path, body: body.map { $0.serialized() }, contentType: body == nil ? nil : "application/json")
        guard (200..<300).contains(response.status) else {
            throw Unavailable(
                description: "ACA-Py \(method) \(path) answered \(response.status): \(String(decoding: response.body, as: UTF8.self))")
        }
        return try JSONValue(parsing: response.body)
    }

    /// Polls `GET /connections/{id}` until its `state` is one of `states`.
    public func waitForConnection(_ id: String, states: Set<String>, timeout: Duration = .seconds(30)) async throws -> JSONValue {
        let deadline = ContinuousClock.now + timeout
        while true {
            let record = try await admin("GET", "/connections/\(id)")
            if let state = record["state"]?.stringValue, states.contains(state) { return record }
            guard ContinuousClock.now < deadline else {
                throw Unavailable(description: "ACA-Py connection \(id) is \(record["state"]?.stringValue ?? "?"), not \(states)\n\(log().suffix(3000))")
            }
            try await Task.sleep(for: .milliseconds(200))
        }
    }

    /// What the agent wrote so far.
    public func log() -> String {
        (try? String(contentsOf: logFile, encoding: .utf8)) ?? ""
    }

    /// Stops the agent (SIGINT, then SIGKILL after 3 s: it lingers on SIGTERM) by its pid, off the
    /// concurrency pool.
    public func stop() async {
        let process = self.process
        let home = self.home
        await offPool {
            if process.isRunning {
                process.interrupt()
                let deadline = Date().addingTimeInterval(3)
                while process.isRunning, Date() < deadline { usleep(50_000) }
                if process.isRunning { kill(process.processIdentifier, SIGKILL) }
                process.waitUntilExit()
            }
            try? FileManager.default.removeItem(at: home)
        }
    }

    /// A loopback TCP port free right now (bound, read back and closed).
    /// The operating-system process id (for CPU accounting in benchmarks).
    public var processIdentifier: Int32 { process.processIdentifier }

    /// A TCP port that was free a moment ago on 127.0.0.1.
    /// A port to hand to a process that binds it later. Picked at random below the kernel's
    /// ephemeral range (32768-60999), where neither outgoing connections nor port-0 listeners
    /// (every in-process test server) can take it in the meantime, and checked free now; a
    /// process-wide set keeps two picks of one run apart.
    public static func freePort() throws -> Int {
        for _ in 0..<200 {
            let candidate = Int.random(in: 20_000..<32_000)
            guard picked.withLock({ $0.insert(candidate).inserted }) else { continue }
            if canBind(candidate) { return candidate }
        }
        throw Unavailable(description: "no free port found in 20000-31999")
    }

    /// A base port `b` such that `b + offset` is free for every offset, all reserved like
    /// `freePort`'s answers (no later `freePort` hands one out): for a script that derives its
    /// ports from one base (`deploy/local-cluster`).
    public static func freePortBase(offsets: [Int]) throws -> Int {
        let span = offsets.max() ?? 0
        for _ in 0..<200 {
            let base = Int.random(in: 20_000..<(32_000 - span))
            let ports = offsets.map { base + $0 }
            let reserved = picked.withLock { picked in
                guard ports.allSatisfy({ !picked.contains($0) }) else { return false }
                picked.formUnion(ports)
                return true
            }
            guard reserved else { continue }
            if ports.allSatisfy(canBind) { return base }
        }
        throw Unavailable(description: "no base port with \(offsets.count) free ports found in 20000-31999")
    }

    private static let picked = Mutex<Set<Int>>([])

    private static func canBind(_ port: Int) -> Bool {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = UInt16(port).bigEndian
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) }
        }
        return bound == 0
    }
}
