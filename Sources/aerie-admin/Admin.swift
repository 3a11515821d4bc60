import AerieClient
import AerieCore
import AerieServer
import ArgumentParser
import Foundation

struct Admin: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Manage the admin token.",
        subcommands: [RotateToken.self]
    )

    struct RotateToken: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "rotate-token",
            abstract: "Issue a new admin token; the old one stops working at once.",
            discussion: """
                By default this asks the running server (admin.rotateToken) with the current admin
                token, from AERIE_ADMIN_TOKEN or AERIE_HOME/admin-token. The server stores only
                the new token's hash; the token is written to AERIE_HOME/admin-token (or --home),
                mode 0600, replacing the old file, or printed with --print.

                The way back in, when no admin token is at hand (the first-start file was never
                written or was lost): --direct issues the token in the database itself, with the
                server's own database configuration (AERIE_DATABASE_URL, or the embedded cluster
                of AERIE_HOME, started for the purpose if it is not running), as
                `keys rotate-master` does. Run it on the server's host as the user that runs
                aerie-server, with the same environment.

                Exit codes: 0 success, 1 failure, 2 usage error, 3 server unreachable,
                4 admin token missing or rejected.
                """
        )

        @Flag(name: .long, help: "Issue the token in the database directly (no server or old token needed).")
        var direct = false

        @Flag(name: .long, help: "Print the new token instead of writing AERIE_HOME/admin-token (not with --direct).")
        var print = false

        @OptionGroup var options: ServerOptions

        func run() async throws {
            try await reporting {
                let env = ProcessInfo.processInfo.environment
                let home = URL(fileURLWithPath: options.home ?? env["AERIE_HOME"] ?? ".aerie")
                let file = AerieApplication.adminTokenFile(home: home)
                if direct {
                    guard !print else {
                        throw AdminFailure(exitCode: 2, message: "--direct writes the token file; --print is for the server route")
                    }
                    var configuration = try DirectDatabaseAccess.configuration()
                    configuration.home = home
                    do {
                        try await AerieApplication.resetAdminToken(
                            configuration: configuration, file: file, logger: DirectDatabaseAccess.logger)
                    } catch {
                        throw AdminFailure(exitCode: 1, message: "admin token reset failed: \(error)")
                    }
                    Swift.print(Self.done(file, json: options.json))
                    return
                }
                let client = try await options.connect()
                defer { Task { await client.close() } }
                let token: String
                do {
                    guard let issued = try await client.call("admin.rotateToken")["token"]?.stringValue else {
                        throw AdminFailure(exitCode: 1, message: "unexpected admin.rotateToken result")
                    }
                    token = issued
                } catch {
                    throw AdminFailure.from(error)
                }
                if print {
                    Swift.print(options.json ? JSONValue.object(["token": .string(token)]).jsonString : token)
                    return
                }
                do {
                    try AerieApplication.writeAdminTokenFile(token, to: file)
                } catch {
                    // The old token no longer works: do not lose the new one.
                    FileHandle.standardError.write(Data("aerie-admin: cannot write \(file.path) (\(error)); the new token is:\n".utf8))
                    Swift.print(token)
                    throw AdminFailure(exitCode: 1, message: "the admin token was rotated but not written to \(file.path)")
                }
                Swift.print(Self.done(file, json: options.json))
            }
        }

        static func done(_ file: URL, json: Bool) -> String {
            json
                ? JSONValue.object(["file": .string(file.path)]).jsonString
                : "new admin token written to \(file.path) (mode 0600); the old token no longer works"
        }
    }
}
