import AerieStore
import Logging
import ServiceLifecycle

/// Holds the database for the server's lifetime: on shutdown (after the RPC server drained) it
/// closes the pool and stops an embedded cluster.
struct DatabaseService: Service {
    let database: AerieDatabase
    let embedded: EmbeddedPostgres?
    let logger: Logger

    func run() async throws {
        try? await gracefulShutdown()
        await database.shutdown()
        if let embedded {
            do {
                try await embedded.stop()
            } catch {
                logger.error("could not stop embedded PostgreSQL", metadata: ["error": "\(error)"])
            }
        }
    }
}
