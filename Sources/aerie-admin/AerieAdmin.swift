import AerieClient
import AerieCore
import ArgumentParser
import Foundation

@main
struct AerieAdmin: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "aerie-admin",
        abstract: "Manage an Aerie server: tenants, the admin token, the master key and database migrations.",
        discussion: """
            Tenant commands talk JSON-RPC to a running aerie-server with the admin token, read from
            AERIE_ADMIN_TOKEN or from AERIE_HOME/admin-token (AERIE_HOME defaults to ./.aerie).
            `migrate`, `keys` and `admin rotate-token --direct` talk to PostgreSQL directly.

            Exit codes: 0 success, 1 the server refused the request, 2 usage error,
            3 server unreachable, 4 admin token missing or rejected.
            """,
        subcommands: [Migrate.self, Tenant.self, Backend.self, Keys.self, Admin.self]
    )
}

/// Options every command that talks to the server takes.
struct ServerOptions: ParsableArguments {
    @Option(name: .long, help: "Server address HOST:PORT (default: AERIE_RPC_LISTEN or 127.0.0.1:7400).")
    var server: String?

    @Option(name: .long, help: "State directory holding admin-token (default: AERIE_HOME or ./.aerie).")
    var home: String?

    @Flag(name: .long, help: "Print JSON instead of text, for scripts.")
    var json = false

    /// `token`: the admin token to use instead of this server's own (another server's, for a move).
    func connect(token given: String? = nil) async throws -> AerieClient {
        let env = ProcessInfo.processInfo.environment
        let address = server ?? env["AERIE_RPC_LISTEN"] ?? "127.0.0.1:7400"
        guard let colon = address.lastIndex(of: ":"), let port = Int(address[address.index(after: colon)...]) else {
            throw AdminFailure(exitCode: 2, message: "--server must be HOST:PORT, got '\(address)'")
        }
        var host = String(address[..<colon])
        if host.hasPrefix("["), host.hasSuffix("]") { host = String(host.dropFirst().dropLast()) }
        let token = try given ?? adminToken(env: env)
        let client: AerieClient
        do {
            client = try await AerieClient.connect(host: host, port: port)
        } catch {
            throw AdminFailure(exitCode: 3, message: "cannot reach aerie-server at \(address): is it running? (\(error))")
        }
        do {
            try await client.authenticate(token: token)
        } catch let error as AerieClientError where error.stableCode == "unauthenticated" {
            await client.close()
            throw AdminFailure(exitCode: 4, message: "the server rejected the admin token (\(error.message))")
        } catch {
            await client.close()
            throw AdminFailure.from(error)
        }
        return client
    }

    private func adminToken(env: [String: String]) throws -> String {
        if let token = env["AERIE_ADMIN_TOKEN"], !token.isEmpty { return token }
        let dir = home ?? env["AERIE_HOME"] ?? ".aerie"
        let path = URL(fileURLWithPath: dir).appendingPathComponent("admin-token").path
        guard let data = FileManager.default.contents(atPath: path),
            let token = String(data: data, encoding: .utf8)?.trimmingCharacters(in: .whitespacesAndNewlines), !token.isEmpty
        else {
            throw AdminFailure(exitCode: 4, message: "no admin token: set AERIE_ADMIN_TOKEN or run where \(path) exists (--home)")
        }
        return token
    }

    /// Calls one admin method and prints the result (JSON or text).
    func run(_ method: String, params: JSONValue, text: (JSONValue) -> String) async throws {
        let client = try await connect()
        defer { Task { await client.close() } }
        let result: JSONValue
        do {
            result = try await client.call(method, params: params)
        } catch {
            throw AdminFailure.from(error)
        }
        print(json ? result.prettyJSON : text(result))
    }
}

/// A failure with the exit code the command should end with.
struct AdminFailure: Error, CustomStringConvertible {
    let exitCode: Int32
    let message: String
    var description: String { message }

    static func from(_ error: any Error) -> AdminFailure {
        if let failure = error as? AdminFailure { return failure }
        if let error = error as? AerieClientError {
            if error.code == 0 { return AdminFailure(exitCode: 3, message: "lost the server: \(error.message)") }
            if error.stableCode == "unauthenticated" { return AdminFailure(exitCode: 4, message: error.message) }
            return AdminFailure(exitCode: 1, message: error.description)
        }
        return AdminFailure(exitCode: 1, message: "\(error)")
    }
}

extension AsyncParsableCommand {
    /// Runs `body`, turning failures into a message on stderr and the right exit code.
    func reporting(_ body: () async throws -> Void) async throws {
        do {
            try await body()
        } catch let failure as AdminFailure {
            FileHandle.standardError.write(Data("aerie-admin: \(failure.message)\n".utf8))
            throw ExitCode(failure.exitCode)
        }
    }
}

extension JSONValue {
    var prettyJSON: String {
        let compact = Data(serialized())
        guard let object = try? JSONSerialization.jsonObject(with: compact, options: [.fragmentsAllowed]),
            let pretty = try? JSONSerialization.data(withJSONObject: object, options: [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes, .fragmentsAllowed])
        else { return jsonString }
        return String(decoding: pretty, as: UTF8.self)
    }

    var text: String {
        switch self {
        case .string(let s): s
        case .null: "-"
        default: jsonString
        }
    }
}
