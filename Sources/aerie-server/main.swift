import AerieServer
import Foundation
import Logging
import ServiceLifecycle

let arguments = CommandLine.arguments.dropFirst()
if arguments.contains("--help") || arguments.contains("-h") {
    print("""
        USAGE: aerie-server

        Aerie: a multi-tenant DIDComm v1 wallet server. Serves line-delimited JSON-RPC 2.0 over TCP
        (default 127.0.0.1:7400). With no AERIE_DATABASE_URL it runs its own PostgreSQL cluster
        (under AERIE_HOME/pg; as root, under the postgres user's home when that user cannot reach
        AERIE_HOME) and stops it on exit. The first start writes the admin token to
        AERIE_HOME/admin-token (mode 0600); manage tenants with aerie-admin.

        Stop with SIGTERM or SIGINT: new sessions are refused, running calls finish, then it exits.

        \(AerieConfiguration.environmentHelp)
        """)
    exit(0)
}
if arguments.contains("--version") {
    print("aerie-server \(AerieApplication.version)")
    exit(0)
}
if let unknown = arguments.first {
    FileHandle.standardError.write(Data("aerie-server: unknown argument '\(unknown)'; configuration is by environment, see --help\n".utf8))
    exit(2)
}

let configuration: AerieConfiguration
do {
    configuration = try AerieConfiguration.fromEnvironment()
} catch {
    FileHandle.standardError.write(Data("aerie-server: \(error)\n".utf8))
    exit(2)
}

configuration.operations.bootstrapLogging()
// Metrics are bound to their backend when created: bootstrap before anything records.
if configuration.operations.metricsListen != nil { _ = AerieMetrics.registry }
let logger = Logger(label: "aerie")

do {
    let prepared = try await AerieApplication.prepare(configuration: configuration, logger: logger)
    let group = ServiceGroup(
        configuration: ServiceGroupConfiguration(
            services: prepared.services.map { ServiceGroupConfiguration.ServiceConfiguration(service: $0) },
            gracefulShutdownSignals: [.sigterm, .sigint],
            logger: logger))
    try await group.run()
} catch {
    logger.critical("aerie-server failed: \(error)")
    exit(1)
}
