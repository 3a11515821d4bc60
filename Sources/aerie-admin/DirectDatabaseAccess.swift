import AerieServer
import Logging

/// What the commands that work on the database directly (`migrate`, `keys rotate-master`) share:
/// the server's own configuration from the environment, and a quiet logger.
enum DirectDatabaseAccess {
    static func configuration() throws -> AerieConfiguration {
        do {
            return try AerieConfiguration.fromEnvironment()
        } catch {
            throw AdminFailure(exitCode: 2, message: "\(error)")
        }
    }

    static var logger: Logger {
        var logger = Logger(label: "aerie-admin")
        logger.logLevel = .warning
        return logger
    }
}
