import AerieTransport
import ServiceLifecycle

/// Owns the outbound HTTP machinery; stops its threads after the RPC server drained.
struct TransportService: Service {
    let resolver: URLResolver

    func run() async throws {
        try? await gracefulShutdown()
        await resolver.shutdown()
    }
}
