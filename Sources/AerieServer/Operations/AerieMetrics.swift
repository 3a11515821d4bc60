import AerieRPC
import AerieStore
import Metrics
import Prometheus
import Synchronization

/// The process's metrics, in Prometheus' text format on the operator endpoint.
///
/// Counters and histograms are recorded where things happen, through swift-metrics (calls in
/// `RPCDispatcher`, inbound messages in `InboundProcessor`, deliveries in `OutboxDeliveryService`,
/// pool waits in `ConnectionPool`); levels (sessions, pool use, LISTEN, outbox backlog, tenants)
/// are sampled here at each scrape. No label carries a tenant id, token, key or peer address.
public enum AerieMetrics {
    /// The registry swift-metrics records into, bootstrapped on first use: a process has one
    /// (`MetricsSystem.bootstrap` may run once), so every server in it shares the figures.
    /// `aerie-server` touches it before anything records, so no metric is bound to the no-op
    /// backend; `AerieApplication.prepare` does too when an operator endpoint is configured.
    public static let registry: PrometheusCollectorRegistry = {
        let registry = PrometheusCollectorRegistry()
        var factory = PrometheusMetricsFactory(registry: registry)
        factory.defaultDurationHistogramBuckets = [
            .microseconds(500), .milliseconds(1), .milliseconds(2), .milliseconds(5), .milliseconds(10),
            .milliseconds(25), .milliseconds(50), .milliseconds(100), .milliseconds(250), .milliseconds(500),
            .seconds(1), .seconds(2.5), .seconds(5), .seconds(10), .seconds(30),
        ]
        MetricsSystem.bootstrap(factory)
        return registry
    }()
}

/// Samples the levels of one running server into the registry before each scrape. The database
/// figures (outbox backlog, tenants by status) cost one query, read at most every `statsMaxAge`
/// however often (and however many at once) the endpoint is scraped.
final class MetricsSampler: Sendable {
    let rpcServer: RPCServer
    let database: AerieDatabase
    let events: EventHub
    let registry: PrometheusCollectorRegistry
    static let statsMaxAge: Duration = .seconds(5)
    private let stats: RecentAnswer<AerieDatabase.OperatorStats?>

    init(rpcServer: RPCServer, database: AerieDatabase, events: EventHub, registry: PrometheusCollectorRegistry = AerieMetrics.registry) {
        self.rpcServer = rpcServer
        self.database = database
        self.events = events
        self.registry = registry
        stats = RecentAnswer(maxAge: Self.statsMaxAge) { try? await database.operatorStats() }
    }

    /// The text exposition, after sampling.
    func scrape() async -> [UInt8] {
        await sample()
        return registry.emitToBuffer()
    }

    func sample() async {
        let sessions = rpcServer.sessionCounts
        gauge("aerie_rpc_sessions", ["state": "authenticated"], "Open JSON-RPC sessions").set(Double(sessions.authenticated))
        gauge("aerie_rpc_sessions", ["state": "unauthenticated"], "Open JSON-RPC sessions").set(Double(sessions.unauthenticated))

        let pool = database.pool.usage
        gauge("aerie_db_pool_connections", ["state": "in_use"], "Database pool connections").set(Double(pool.inUse))
        gauge("aerie_db_pool_connections", ["state": "idle"], "Database pool connections").set(Double(pool.idle))
        gauge("aerie_db_pool_size", [:], "Database pool capacity (AERIE_DB_POOL_SIZE)").set(Double(pool.capacity))
        gauge("aerie_db_pool_waiting", [:], "Callers waiting for a database connection").set(Double(pool.waiting))

        gauge("aerie_listen_up", [:], "1 while the LISTEN connection (push, credential changes) is up").set(events.isListening ? 1.0 : 0.0)

        let stats = await self.stats.value()
        gauge("aerie_database_up", [:], "1 when the last database figures could be read").set(stats == nil ? 0.0 : 1.0)
        if let stats {
            gauge("aerie_outbox_pending", [:], "Outbox rows waiting for delivery, all tenants").set(Double(stats.outboxPending))
            gauge("aerie_outbox_oldest_pending_seconds", [:], "Age of the oldest pending outbox row")
                .set(stats.outboxOldestPendingSeconds)
            for status in ["active", "suspended"] {
                gauge("aerie_tenants", ["status": status], "Tenants by status").set(Double(stats.tenantsByStatus[status] ?? 0))
            }
        }
    }

    private func gauge(_ name: String, _ labels: [String: String], _ help: String) -> Prometheus.Gauge {
        // The whole name as the metric's name (no namespace, subsystem or unit to join).
        let descriptor = MetricNameDescriptor(metricName: name, unitName: "", helpText: help)
        return labels.isEmpty
            ? registry.makeGauge(descriptor: descriptor)
            : registry.makeGauge(descriptor: descriptor, labels: labels.sorted { $0.key < $1.key }.map { ($0.key, $0.value) })
    }
}
