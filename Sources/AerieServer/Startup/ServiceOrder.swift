import AerieRPC
import AerieTransport
import ServiceLifecycle

/// The services of a running server, in the order they start: each field below starts after the
/// ones above it, and the group stops them in reverse, so the RPC server drains before the
/// database closes. Optional ones run only when configured.
struct ServiceOrder {
    /// First to start and last to stop, so probes see the whole drain.
    var operatorEndpoint: HTTPListener?
    /// Closes the pool (and stops an embedded cluster) after everything that uses it.
    var database: DatabaseService
    /// Stops its parsing thread after every service that parses.
    var parsing: InboundParsing
    /// Stops the resolvers' threads after everything that fetches.
    var transport: TransportService
    var events: EventHub
    var eventStreams: EventStreams
    var webhooks: WebhookDelivery
    var delivery: OutboxDeliveryService?
    var inboundRecovery: InboundRecoveryService
    var sealingSweep: SealingMigrationService?
    var retention: MailboxRetentionService?
    var didcomm: HTTPListener
    var rpc: RPCServer
    /// Last to start, so shutdown reaches it first: `/readyz` turns 503 before anything drains.
    var drainSignal: DrainSignalService?

    var services: [any Service] {
        let ordered: [(any Service)?] = [
            operatorEndpoint, database, parsing, transport, events, eventStreams, webhooks, delivery, inboundRecovery,
            sealingSweep, retention, didcomm, rpc, drainSignal,
        ]
        return ordered.compactMap { $0 }
    }
}
