import AerieTransport
import ServiceLifecycle

/// Owns the outbound HTTP machinery; stops its threads after the RPC server drained.
struct TransportService: Service {
    let resolvers: [URLResolver]

    func run() async throws {
        try? await gracefulShutdown()
        for resolver in resolvers { await resolver.shutdown() }
    }
}
