import AerieCore
import AerieCrypto
import AerieStore
import AerieTesting
import Foundation
import Logging
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// A fresh database, a runtime pool on it and a master key: tenants are created the way
/// `admin.tenants.create` creates them (a new data key wrapped by the master key), and their
/// contexts unwrap that key from the database.
struct WalletFixture {
    let database: TestDatabase
    let runtime: AerieDatabase
    let masterKey: MasterKey

    /// `migrate: false`: the database has no schema yet (upgrade tests migrate it themselves).
    static func with(migrate: Bool = true, _ body: (WalletFixture) async throws -> Void) async throws {
        let database = try await TestPostgres.shared.freshDatabase(migrate: migrate)
        let fixture = WalletFixture(database: database, runtime: database.runtime(), masterKey: .generate())
        do {
            try await body(fixture)
        } catch {
            await fixture.runtime.shutdown()
            try? await database.drop()
            throw error
        }
        await fixture.runtime.shutdown()
        try await database.drop()
    }

    func createTenant(_ label: String) async throws -> TenantContext {
        let id = TenantID.random()
        let dataKey = DataKey.generate()
        _ = try await runtime.tenants.create(
            id: id, label: label, sealer: dataKey.sealer(for: id), tokenHash: Random.bytes(32),
            wrappedDataKey: masterKey.wrap(dataKey, tenantID: id.rawValue),
            masterKeyFingerprint: masterKey.fingerprint)
        return try await context(id)
    }

    /// The tenant's context, its data key unwrapped from the database by `key`.
    func context(_ id: TenantID, masterKey key: MasterKey? = nil) async throws -> TenantContext {
        let wrapped = try #require(try await runtime.tenants.wrappedDataKey(id))
        let dataKey = try (key ?? masterKey).unwrap(wrapped, tenantID: id.rawValue)
        return TenantContext(
            tenantID: id, database: runtime.tenant(id), keyring: FixedTenantKeyring(tenantID: id, dataKey: dataKey),
            logger: Logger(label: "test"))
    }

    /// Runs `body` in one transaction as the cluster superuser (row-level security does not
    /// apply): to inspect or tamper with what the runtime role cannot see.
    func asSuperuser<T: Sendable>(_ body: @escaping @Sendable (DatabaseSession) throws -> T) async throws -> T {
        try await Self.asSuperuser(database, body)
    }

    static func asSuperuser<T: Sendable>(
        _ database: TestDatabase, _ body: @escaping @Sendable (DatabaseSession) throws -> T
    ) async throws -> T {
        let pool = AerieDatabase(
            configuration: DatabaseConfiguration(conninfo: database.superuserConninfo, maxConnections: 1),
            logger: Logger(label: "test"))
        do {
            let result = try await pool.withSession(body)
            await pool.shutdown()
            return result
        } catch {
            await pool.shutdown()
            throw error
        }
    }

    /// Terminates the one server's `aerie_events` LISTEN backend, then waits (20 s at most) until
    /// a new one is in place: the server saw the old one drop, which clears its caches. Returns
    /// whether exactly one was cut and a new one came.
    static func cutEventListener(_ database: TestDatabase) async throws -> Bool {
        let listening = "SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND query = 'LISTEN aerie_events'"
        let cut = try await asSuperuser(database) { session in
            let result = try session.query("SELECT pg_terminate_backend(pid), pid FROM (\(listening)) AS listener")
            return (0..<result.rowCount).compactMap { result.int($0, 1) }
        }
        guard cut.count == 1 else { return false }
        return try await InboundHandlingTests.eventually {
            let pids = try await asSuperuser(database) { session in
                let result = try session.query(listening)
                return (0..<result.rowCount).compactMap { result.int($0, 0) }
            }
            return pids.count == 1 && !cut.contains(pids[0])
        }
    }

    /// Runs `body` with the context of a live server's tenant: its data key unwrapped with the
    /// server's master key file, on a pool of its own (shut down afterwards). For tests that
    /// change sealed rows behind the server's back.
    static func withContext<T: Sendable>(
        of tenant: TenantID, on server: LiveServer, _ body: (TenantContext) async throws -> T
    ) async throws -> T {
        let master = try readKeyFile(server.home.appendingPathComponent("master-key"))
        let runtime = server.database.runtime(maxConnections: 1)
        do {
            let wrapped = try #require(try await runtime.tenants.wrappedDataKey(tenant))
            let context = TenantContext(
                tenantID: tenant, database: runtime.tenant(tenant),
                keyring: FixedTenantKeyring(tenantID: tenant, dataKey: try master.unwrap(wrapped, tenantID: tenant.rawValue)),
                logger: Logger(label: "test"))
            let result = try await body(context)
            await runtime.shutdown()
            return result
        } catch {
            await runtime.shutdown()
            throw error
        }
    }

    /// Every row of `aerie.tenant_keys` (tenant, verkey, sealed hex, created_at), as the superuser sees it.
    func keyRows() async throws -> [[String?]] {
        try await asSuperuser { session in
            try session.query(
                "SELECT tenant_id::text, verkey, encode(sealed_secret, 'hex'), created_at::text FROM aerie.tenant_keys ORDER BY verkey"
            ).allRows()
        }
    }
}

/// Runs `body` and returns the error it throws, recording an issue when it throws none.
func thrownError(sourceLocation: SourceLocation = #_sourceLocation, _ body: () async throws -> Any) async -> (
    any Error
)? {
    do {
        let value = try await body()
        Issue.record("expected an error, got \(value)", sourceLocation: sourceLocation)
        return nil
    } catch {
        return error
    }
}

/// A temporary directory, removed after `body`.
func withTemporaryDirectory<T>(_ body: (URL) async throws -> T) async throws -> T {
    let url = FileManager.default.temporaryDirectory.appendingPathComponent("aerie-keys-\(UUID().uuidString)")
    try FileManager.default.createDirectory(
        at: url, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
    defer { try? FileManager.default.removeItem(at: url) }
    return try await body(url)
}

/// Writes a key file as the server does: base64, mode 0600.
func writeKeyFile(_ url: URL, _ key: MasterKey) throws {
    guard
        FileManager.default.createFile(
            atPath: url.path, contents: Data((key.base64 + "\n").utf8), attributes: [.posixPermissions: 0o600])
    else { throw CocoaError(.fileWriteUnknown) }
}

func readKeyFile(_ url: URL) throws -> MasterKey {
    try MasterKey(base64: String(contentsOf: url, encoding: .utf8))
}

func fileMode(_ url: URL) throws -> Int {
    try (FileManager.default.attributesOfItem(atPath: url.path)[.posixPermissions] as? NSNumber)?.intValue ?? -1
}

/// Runs an executable off the concurrency pool (`offPool`) and
/// returns its exit status and output. One still running after `timeout` is killed and the call
/// throws, so a tool that hangs fails its test.
func runProcess(
    _ executable: URL, _ arguments: [String], environment: [String: String], timeout: TimeInterval = 120
) async throws -> (
    status: Int32, stdout: String, stderr: String
) {
    try await offPool {
        let process = Process()
        process.executableURL = executable
        process.arguments = arguments
        process.environment = environment
        let out = Pipe()
        let err = Pipe()
        process.standardOutput = out
        process.standardError = err
        try process.run()
        let killed = LockedData()
        let watchdog = DispatchWorkItem {
            guard process.isRunning else { return }
            killed.set(Data())
            kill(process.processIdentifier, SIGKILL)
        }
        DispatchQueue.global().asyncAfter(deadline: .now() + timeout, execute: watchdog)
        defer { watchdog.cancel() }
        // Read stderr on its own thread so a full pipe cannot stall the process.
        let errData = LockedData()
        let reader = Thread { errData.set(err.fileHandleForReading.readDataToEndOfFile()) }
        reader.start()
        let stdout = out.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        while !errData.isSet { usleep(1000) }
        if killed.isSet {
            throw ProcessTimedOut(
                description: "\(executable.lastPathComponent) \(arguments.joined(separator: " ")) "
                    + "still ran after \(timeout) s and was killed; stderr: \(String(decoding: errData.value, as: UTF8.self))")
        }
        return (
            process.terminationStatus, String(decoding: stdout, as: UTF8.self),
            String(decoding: errData.value, as: UTF8.self)
        )
    }
}

struct ProcessTimedOut: Error, CustomStringConvertible {
    let description: String
}

private final class LockedData: @unchecked Sendable {
    private let lock = NSLock()
    private var data: Data?
    func set(_ value: Data) { lock.withLock { data = value } }
    var isSet: Bool { lock.withLock { data != nil } }
    var value: Data { lock.withLock { data ?? Data() } }
}

extension TenantDirectory {
    /// The tenant holding `verkey`, as the inbound endpoint finds it (its connection's sealed
    /// columns are not opened here: these keys have none).
    func owner(ofVerkey verkey: String) async throws -> InboundOwner? {
        try await inboundRecipient(verkeys: [verkey], recent: true, sealer: { id, _ in DataKey.generate().sealer(for: id) })
    }
}
