import AerieCore
import AerieStore
import AerieTransport
import ServiceLifecycle
import Synchronization

/// The operator's HTTP endpoint (`AERIE_METRICS_LISTEN`, off the DIDComm port):
/// - `GET /metrics`: Prometheus text format (`AerieMetrics`, `MetricsSampler`);
/// - `GET /healthz`: 200 while the process serves HTTP at all (liveness);
/// - `GET /readyz`: 200 only when this server should get traffic: migrations applied (the
///   endpoint starts after they are), the pool reaches the database, the LISTEN connection is
///   up, and the server is not draining after SIGTERM; 503 with the failing checks otherwise.
///   The database check is one round trip on the shared pool at most every
///   `databaseCheckMaxAge`, however often probes come.
struct OperatorEndpoint: Sendable {
    let sampler: MetricsSampler
    let events: EventHub
    let readiness: Readiness
    private let databaseCheck: RecentAnswer<Bool>

    /// How long the readiness database check may take before it counts as failed.
    static let databaseCheckTimeout: Duration = .seconds(2)
    /// How long its answer serves later probes.
    static let databaseCheckMaxAge: Duration = .seconds(1)

    init(sampler: MetricsSampler, database: AerieDatabase, events: EventHub, readiness: Readiness) {
        self.sampler = sampler
        self.events = events
        self.readiness = readiness
        databaseCheck = RecentAnswer(maxAge: Self.databaseCheckMaxAge) { await Self.databaseAnswers(database) }
    }

    func answer(_ request: HTTPListener.Request) async -> HTTPListener.Answer {
        guard request.method == .GET else { return HTTPListener.Answer(status: 405) }
        switch request.path {
        case "/metrics":
            return HTTPListener.Answer(
                status: 200, contentType: "text/plain; version=0.0.4; charset=utf-8", body: await sampler.scrape())
        case "/healthz":
            return HTTPListener.Answer(status: 200, contentType: "text/plain; charset=utf-8", body: Array("ok\n".utf8))
        case "/readyz":
            let failing = await failingChecks()
            let body: JSONValue = ["ready": .bool(failing.isEmpty), "failing": .array(failing.map { .string($0) })]
            var bytes = body.serialized()
            bytes.append(UInt8(ascii: "\n"))
            return HTTPListener.Answer(status: failing.isEmpty ? 200 : 503, contentType: "application/json", body: bytes)
        default:
            return HTTPListener.Answer(status: 404)
        }
    }

    /// The names of the readiness checks that fail now (empty: ready).
    func failingChecks() async -> [String] {
        var failing: [String] = []
        if readiness.isDraining { failing.append("draining") }
        if !events.isListening { failing.append("listen") }
        if !(await databaseCheck.value()) { failing.append("database") }
        return failing
    }

    private static func databaseAnswers(_ database: AerieDatabase) async -> Bool {
        await withTaskGroup(of: Bool.self) { group in
            group.addTask { (try? await database.ping()) != nil }
            group.addTask {
                try? await Task.sleep(for: databaseCheckTimeout)
                return false
            }
            defer { group.cancelAll() }
            return await group.next() ?? false
        }
    }
}

/// Whether the server is draining: set the moment graceful shutdown starts, before the JSON-RPC
/// server drains, so a load balancer polling `/readyz` stops sending new work at once.
final class Readiness: Sendable {
    private let draining = Mutex(false)

    var isDraining: Bool { draining.withLock { $0 } }
    func startDraining() { draining.withLock { $0 = true } }
}

/// Listed last among the services, so graceful shutdown (which runs in reverse order) reaches it
/// first: it marks the server draining, then lets the others stop.
struct DrainSignalService: Service {
    let readiness: Readiness

    func run() async throws {
        try? await gracefulShutdown()
        readiness.startDraining()
    }
}
