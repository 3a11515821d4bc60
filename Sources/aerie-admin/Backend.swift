import AerieClient
import AerieCore
import ArgumentParser
import Foundation

struct Backend: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Create, list, show, suspend, resume, delete backends, rotate their tokens and set their webhooks.",
        discussion: """
            A backend is a wallet backend's service credential: one token, one JSON-RPC session, acting \
            for every tenant it owns by naming the tenant of each call in params._meta.tenantId. A \
            backend owns the tenants it creates (admin.tenants.create on its session) and those an \
            admin creates for it (aerie-admin tenant create --backend ID).
            """,
        subcommands: [Create.self, List.self, Show.self, RotateToken.self, Suspend.self, Resume.self, Delete.self, Webhook.self]
    )

    static func describe(_ backend: JSONValue) -> String {
        let fields = ["backendId", "label", "status", "createdAt", "updatedAt"]
        return fields.compactMap { key in backend[key].map { "\(key): \($0.text)" } }.joined(separator: "\n")
    }

    /// Runs `admin.backends.<method>` on the backend `id`, printing it.
    static func run(_ method: String, id: String, options: ServerOptions) async throws {
        try await options.run("admin.backends.\(method)", params: ["backendId": .string(id)], text: Backend.describe)
    }

    struct Create: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Create a backend and print its token (shown only once).")
        @Option(help: "A name for the backend (1-200 characters).") var label: String
        @OptionGroup var options: ServerOptions

        func run() async throws {
            try await reporting {
                try await options.run("admin.backends.create", params: ["label": .string(label)]) { result in
                    """
                    \(Backend.describe(result))
                    token: \(result["token"]?.text ?? "-")

                    Store the token now: Aerie keeps only its hash and cannot show it again.
                    """
                }
            }
        }
    }

    struct List: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "List backends, oldest id first, one page at a time.")
        @Option(help: "Backends per page (1-500).") var limit: Int = 100
        @Option(help: "Continue after this cursor (printed at the end of the previous page).") var cursor: String?
        @OptionGroup var options: ServerOptions

        func run() async throws {
            try await reporting {
                var params: [String: JSONValue] = ["limit": .int(Int64(limit))]
                if let cursor { params["cursor"] = .string(cursor) }
                try await options.run("admin.backends.list", params: .object(params)) { result in
                    guard case .array(let items)? = result["items"], !items.isEmpty else { return "no backends" }
                    var lines = items.map { item in
                        "\(item["backendId"]?.text ?? "-")  \(item["status"]?.text ?? "-")  \(item["label"]?.text ?? "-")"
                    }
                    if let next = result["nextCursor"]?.stringValue { lines.append("more: --cursor \(next)") }
                    return lines.joined(separator: "\n")
                }
            }
        }
    }

    struct Show: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Show one backend.")
        @Argument(help: "The backend id.") var id: String
        @OptionGroup var options: ServerOptions
        func run() async throws { try await reporting { try await Backend.run("get", id: id, options: options) } }
    }

    struct RotateToken: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "rotate-token", abstract: "Issue a new token; the old one stops working at the backend's next call.")
        @Argument(help: "The backend id.") var id: String
        @OptionGroup var options: ServerOptions

        func run() async throws {
            try await reporting {
                try await options.run("admin.backends.rotateToken", params: ["backendId": .string(id)]) { result in
                    "backendId: \(result["backendId"]?.text ?? "-")\ntoken: \(result["token"]?.text ?? "-")"
                }
            }
        }
    }

    struct Suspend: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Suspend a backend: its sessions stop at their next call (its tenants' own tokens keep working).")
        @Argument(help: "The backend id.") var id: String
        @OptionGroup var options: ServerOptions
        func run() async throws { try await reporting { try await Backend.run("suspend", id: id, options: options) } }
    }

    struct Resume: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Resume a suspended backend.")
        @Argument(help: "The backend id.") var id: String
        @OptionGroup var options: ServerOptions
        func run() async throws { try await reporting { try await Backend.run("resume", id: id, options: options) } }
    }

    struct Delete: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Delete a backend that owns no tenants (delete its tenants first).")
        @Argument(help: "The backend id.") var id: String
        @OptionGroup var options: ServerOptions

        func run() async throws {
            try await reporting {
                try await options.run("admin.backends.delete", params: ["backendId": .string(id)]) { result in
                    "deleted backend \(result["backendId"]?.text ?? id)"
                }
            }
        }
    }
}
