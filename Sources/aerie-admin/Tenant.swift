import AerieClient
import AerieCore
import ArgumentParser
import Foundation

struct Tenant: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Create, list, show, suspend, resume, delete, export, import and move tenants and rotate their tokens.",
        subcommands: [
            Create.self, List.self, Show.self, RotateToken.self, Suspend.self, Resume.self, Delete.self, Export.self, Import.self,
            Move.self,
        ]
    )

    static func describe(_ tenant: JSONValue) -> String {
        let fields = ["tenantId", "label", "status", "backendId", "createdAt", "updatedAt"]
        return fields.compactMap { key in tenant[key].map { "\(key): \($0.text)" } }.joined(separator: "\n")
    }

    struct Create: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Create a tenant and print its token (shown only once).")
        @Option(help: "A name for the tenant (1-200 characters).") var label: String
        @Option(help: "The backend that owns the tenant and may act for it (see 'aerie-admin backend').") var backend: String?
        @OptionGroup var options: ServerOptions

        func run() async throws {
            try await reporting {
                var params: [String: JSONValue] = ["label": .string(label)]
                if let backend { params["backendId"] = .string(backend) }
                try await options.run("admin.tenants.create", params: .object(params)) { result in
                    """
                    \(Tenant.describe(result))
                    token: \(result["token"]?.text ?? "-")

                    Store the token now: Aerie keeps only its hash and cannot show it again.
                    """
                }
            }
        }
    }

    struct List: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "List tenants, oldest id first, one page at a time.")
        @Option(help: "Tenants per page (1-500).") var limit: Int = 100
        @Option(help: "Continue after this cursor (printed at the end of the previous page).") var cursor: String?
        @Option(help: "Only the tenants of this backend.") var backend: String?
        @OptionGroup var options: ServerOptions

        func run() async throws {
            try await reporting {
                var params: [String: JSONValue] = ["limit": .int(Int64(limit))]
                if let cursor { params["cursor"] = .string(cursor) }
                if let backend { params["backendId"] = .string(backend) }
                try await options.run("admin.tenants.list", params: .object(params)) { result in
                    guard case .array(let items)? = result["items"], !items.isEmpty else { return "no tenants" }
                    var lines = items.map { item in
                        "\(item["tenantId"]?.text ?? "-")  \(item["status"]?.text ?? "-")  \(item["label"]?.text ?? "-")"
                    }
                    if let next = result["nextCursor"]?.stringValue { lines.append("more: --cursor \(next)") }
                    return lines.joined(separator: "\n")
                }
            }
        }
    }

    struct Show: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Show one tenant.")
        @Argument(help: "The tenant id.") var id: String
        @OptionGroup var options: ServerOptions

        func run() async throws {
            try await reporting {
                try await options.run("admin.tenants.get", params: ["tenantId": .string(id)], text: Tenant.describe)
            }
        }
    }

    struct RotateToken: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "rotate-token", abstract: "Issue a new token; the old one stops working at once.")
        @Argument(help: "The tenant id.") var id: String
        @OptionGroup var options: ServerOptions

        func run() async throws {
            try await reporting {
                try await options.run("admin.tenants.rotateToken", params: ["tenantId": .string(id)]) { result in
                    "tenantId: \(result["tenantId"]?.text ?? "-")\ntoken: \(result["token"]?.text ?? "-")"
                }
            }
        }
    }

    struct Suspend: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Suspend a tenant: its sessions stop at their next call.")
        @Argument(help: "The tenant id.") var id: String
        @OptionGroup var options: ServerOptions

        func run() async throws {
            try await reporting {
                try await options.run("admin.tenants.suspend", params: ["tenantId": .string(id)], text: Tenant.describe)
            }
        }
    }

    struct Resume: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Resume a suspended tenant.")
        @Argument(help: "The tenant id.") var id: String
        @OptionGroup var options: ServerOptions

        func run() async throws {
            try await reporting {
                try await options.run("admin.tenants.resume", params: ["tenantId": .string(id)], text: Tenant.describe)
            }
        }
    }

    struct Delete: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Delete a tenant and all its data (keys, connections, messages). Cannot be undone.")
        @Argument(help: "The tenant id.") var id: String
        @Flag(name: .long, help: "Confirm the deletion; without it nothing is deleted.") var yes = false
        @OptionGroup var options: ServerOptions

        func run() async throws {
            try await reporting {
                guard yes else {
                    throw AdminFailure(exitCode: 2, message: "deleting tenant \(id) removes all its data for good; add --yes to confirm")
                }
                try await options.run("admin.tenants.delete", params: ["tenantId": .string(id)]) { result in
                    var lines = ["deleted tenant \(result["tenantId"]?.text ?? id)"]
                    if case .object(let counts)? = result["rowsRemoved"] {
                        for table in counts.keys.sorted() { lines.append("  \(table): \(counts[table]!.text) rows") }
                    }
                    return lines.joined(separator: "\n")
                }
            }
        }
    }
}
