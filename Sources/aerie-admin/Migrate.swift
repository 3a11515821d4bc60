import AerieServer
import AerieStore
import ArgumentParser
import Foundation
import Logging

struct Migrate: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Apply pending database migrations (each once, in order).",
        discussion: """
            Uses AERIE_OWNER_DATABASE_URL (or AERIE_DATABASE_URL) when set; otherwise the embedded
            cluster of AERIE_HOME, started for the migration if it is not already running.
            Migrations come from AERIE_SCHEMA_DIR, ./schema, or the source checkout's schema/.
            """
    )

    @Flag(name: .long, help: "Print JSON instead of text, for scripts.")
    var json = false

    func run() async throws {
        try await reporting {
            let configuration = try DirectDatabaseAccess.configuration()
            let logger = DirectDatabaseAccess.logger
            let schema = configuration.database.schemaDirectory ?? SchemaLocator.defaultDirectory()
            let applied: [Int]
            do {
                applied = try await AerieApplication.migrate(configuration: configuration, schemaDirectory: schema, logger: logger)
            } catch {
                throw AdminFailure(exitCode: 1, message: "migration failed: \(error)")
            }
            if json {
                print("{\"applied\":[\(applied.map(String.init).joined(separator: ","))]}")
            } else if applied.isEmpty {
                print("database is up to date")
            } else {
                print("applied migrations: \(applied.map(String.init).joined(separator: ", "))")
            }
        }
    }
}
