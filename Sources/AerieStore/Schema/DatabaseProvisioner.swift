import AerieCore
import Foundation
import NIOPosix

/// Superuser-side set-up shared by `EmbeddedPostgres` and the test support: the three roles
/// and databases owned by the owner role. Idempotent, and tolerant of a concurrent run.
package enum DatabaseProvisioner {
    package static let ownerRole = "aerie_owner"
    package static let runtimeGroupRole = "aerie_runtime"
    package static let runtimeLoginRole = "aerie_app"

    /// Creates `aerie_owner` (owns schema and tables), the NOLOGIN group `aerie_runtime` (what
    /// migrations grant to) and the login `aerie_app` in it (what the server connects as; owns
    /// nothing, no superuser, no BYPASSRLS). A password, when given, is set on both logins.
    package static func ensureRoles(_ superuser: PostgresConnection, password: String?) throws {
        let script = """
            DO $$ BEGIN
                IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = '\(ownerRole)') THEN
                    CREATE ROLE \(ownerRole) LOGIN;
                END IF;
                IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = '\(runtimeGroupRole)') THEN
                    CREATE ROLE \(runtimeGroupRole) NOLOGIN;
                END IF;
                IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = '\(runtimeLoginRole)') THEN
                    CREATE ROLE \(runtimeLoginRole) LOGIN;
                END IF;
            END $$;
            ALTER ROLE \(ownerRole) NOSUPERUSER NOBYPASSRLS;
            ALTER ROLE \(runtimeLoginRole) NOSUPERUSER NOBYPASSRLS NOCREATEDB NOCREATEROLE;
            GRANT \(runtimeGroupRole) TO \(runtimeLoginRole);
            """
        var passwords = ""
        if let password {
            let literal = "'" + password.replacingOccurrences(of: "'", with: "''") + "'"
            passwords = """
                ALTER ROLE \(ownerRole) PASSWORD \(literal);
                ALTER ROLE \(runtimeLoginRole) PASSWORD \(literal);
                """
        }
        do {
            try superuser.script(script + passwords)
        } catch let error as PostgresError where error.sqlState == "23505" || error.sqlState == "42710" {
            // Another process created a role between our check and CREATE ROLE: run again.
            try superuser.script(script + passwords)
        }
    }

    /// Creates database `name` owned by the owner role unless it exists.
    package static func ensureDatabase(_ superuser: PostgresConnection, name: String) throws {
        let exists = try superuser.query("SELECT 1 FROM pg_database WHERE datname = $1", [.text(name)])
        guard exists.rowCount == 0 else { return }
        do {
            try superuser.script(
                "CREATE DATABASE \(TenantDirectory.quoteIdentifier(name)) OWNER \(ownerRole) ENCODING 'UTF8' TEMPLATE template0")
        } catch let error as PostgresError where error.sqlState == "42P04" {
            // Created concurrently: fine.
        }
    }

    /// Drops database `name`, disconnecting its sessions.
    package static func dropDatabase(_ superuser: PostgresConnection, name: String) throws {
        try superuser.script("DROP DATABASE IF EXISTS \(TenantDirectory.quoteIdentifier(name)) WITH (FORCE)")
    }

    /// Runs `body` on a blocking thread with a superuser connection.
    package static func withSuperuser<T: Sendable>(
        _ conninfo: String, _ body: @escaping @Sendable (PostgresConnection) throws -> T
    ) async throws -> T {
        try await NIOThreadPool.singleton.runIfActive {
            let connection = try PostgresConnection(conninfo: conninfo)
            defer { connection.close() }
            return try body(connection)
        }
    }
}
