import AerieCore
import AerieCrypto
import AerieStore
import AerieTesting
import Foundation
import Logging
import Synchronization
import Testing

/// A fresh migrated database and a runtime pool on it, torn down after the body.
struct StoreFixture {
    let database: TestDatabase
    let runtime: AerieDatabase

    static func with(
        maxConnections: Int = 4, acquireTimeout: Duration = .seconds(10),
        configure: (inout DatabaseConfiguration) -> Void = { _ in },
        _ body: (StoreFixture) async throws -> Void
    ) async throws {
        try await TestPostgres.shared.withFreshRuntime(
            maxConnections: maxConnections, acquireTimeout: acquireTimeout, configure: configure
        ) {
            try await body(StoreFixture(database: $0, runtime: $1))
        }
    }

    /// Creates an active tenant with a random token hash (and wrapped data key, unless given).
    @discardableResult
    func createTenant(
        _ label: String, tokenHash: [UInt8] = randomBytes(32), wrappedDataKey: [UInt8] = randomBytes(72), backend: BackendID? = nil
    ) async throws -> TenantRecord {
        let id = TenantID.random()
        return try await runtime.tenants.create(
            id: id, label: label, sealer: Self.labelSealer(id), tokenHash: tokenHash, wrappedDataKey: wrappedDataKey,
            masterKeyFingerprint: "test-master", backend: backend)
    }

    /// Creates an active tenant owned by a new backend: its changes are written to the event log
    /// (schema/0033: the log is its backend's stream; a tenant without one logs nothing).
    func createLoggedTenant(_ label: String) async throws -> TenantRecord {
        let backend = try await runtime.backends.create(id: .random(), label: "backend of \(label)", tokenHash: randomBytes(32))
        return try await createTenant(label, backend: backend.id)
    }

    /// The `aerie_events` NOTIFYs heard from now on (a listener of the runtime role, in place
    /// before this returns; stop it when done).
    func listen() async throws -> (Heard, PostgresEventListener) {
        let heard = Heard()
        let listener = PostgresEventListener(
            conninfo: database.runtimeConninfo, channel: "aerie_events", logger: Logger(label: "test")
        ) { payload in heard.payloads.withLock { $0.append(payload) } }
        listener.start()
        for _ in 0..<500 where !listener.isListening { try await Task.sleep(for: .milliseconds(20)) }
        try #require(listener.isListening)
        return (heard, listener)
    }

    final class Heard: Sendable {
        let payloads = Mutex<[String]>([])

        /// The payloads of `kind` heard so far, parsed, once at least `count` of them arrived
        /// (or after 10 s, with what there is).
        func parsed(kind: String, atLeast count: Int) async throws -> [JSONValue] {
            var found: [JSONValue] = []
            for _ in 0..<500 {
                found = try payloads.withLock { $0 }.map { try JSONValue(parsing: $0) }.filter { $0["kind"] == .string(kind) }
                if found.count >= count { break }
                try await Task.sleep(for: .milliseconds(20))
            }
            return found
        }
    }

    /// How many of `tenant`'s outbox rows are pending: what the outbox quota counts
    /// (schema/0034). In `session`, the superuser's (`asSuperuser`).
    static func pendingOutboxRows(_ session: DatabaseSession, _ tenant: TenantID) throws -> Int {
        try session.query(
            "SELECT count(*)::int FROM aerie.outbox WHERE tenant_id = $1::uuid AND status = 'pending'", [.text(tenant.rawValue)]
        ).int(0, 0) ?? -1
    }

    /// Terminates every session of the runtime role on this database, as a database restart
    /// would (the pool's connections are found dead at their next use); answers how many.
    func killRuntimeSessions() async throws -> Int {
        try await asSuperuser { session in
            try session.query(
                """
                SELECT count(pg_terminate_backend(pid))::int FROM pg_stat_activity
                WHERE datname = current_database() AND usename = 'aerie_app'
                """
            ).int(0, 0) ?? 0
        }
    }

    /// Runs `body` in one transaction as the cluster superuser on this database (RLS does not
    /// apply to it): for inspecting what the runtime role cannot see.
    func asSuperuser<T: Sendable>(_ body: @escaping @Sendable (DatabaseSession) throws -> T) async throws -> T {
        try await withPool(database.superuserConninfo) { try await $0.withSession(body) }
    }

    /// A fresh database, unmigrated unless asked, dropped after the body.
    static func withDatabase(migrate: Bool, _ body: (TestDatabase) async throws -> Void) async throws {
        let database = try await TestPostgres.shared.freshDatabase(migrate: migrate)
        do {
            try await body(database)
        } catch {
            try? await database.drop()
            throw error
        }
        try await database.drop()
    }
}

/// Runs `body` with a pool of `maxConnections` (one) on `conninfo` whose sessions carry `quotas`,
/// shut down afterwards.
func withPool<T: Sendable>(
    _ conninfo: String, maxConnections: Int = 1, quotas: DatabaseConfiguration.Quotas = .unlimited,
    _ body: (AerieDatabase) async throws -> T
) async throws -> T {
    var configuration = DatabaseConfiguration(conninfo: conninfo, maxConnections: maxConnections)
    configuration.quotas = quotas
    let pool = AerieDatabase(configuration: configuration, logger: Logger(label: "test"))
    do {
        let result = try await body(pool)
        await pool.shutdown()
        return result
    } catch {
        await pool.shutdown()
        throw error
    }
}

func randomBytes(_ count: Int) -> [UInt8] {
    (0..<count).map { _ in UInt8.random(in: 0...255) }
}

extension StoreFixture {
    /// A sealer of a fresh data key, for a tenant's label: the wrapped data keys of these tests
    /// are random bytes that wrap nothing.
    static func labelSealer(_ id: TenantID) -> any ValueSealer { DataKey.generate().sealer(for: id) }
}
