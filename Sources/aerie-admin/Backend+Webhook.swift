import AerieClient
import AerieCore
import ArgumentParser
import Foundation

extension Backend {
    struct Webhook: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Set, show or clear a backend's webhook (its events POSTed to an HTTPS URL, signed).",
            discussion: """
                Events of the backend's tenants are POSTed in position order, in batches, as JSON \
                {backendId, events, fromPosition, toPosition}, with the header \
                Aerie-Signature: t=<unix seconds>,v1=<hex HMAC-SHA256 of "<t>." + body, keyed with the secret>. \
                A 2xx answer delivers the batch; anything else is retried with backoff. At least once: \
                deduplicate by position.
                """,
            subcommands: [Set.self, Show.self, Clear.self])

        static func describe(_ webhook: JSONValue) -> String {
            let fields = ["backendId", "url", "position", "attempts", "nextAttemptAt", "lastError", "deliveredAt"]
            return fields.compactMap { key in webhook[key].flatMap { $0.isNull ? nil : "\(key): \($0.text)" } }.joined(separator: "\n")
        }

        struct Set: AsyncParsableCommand {
            static let configuration = CommandConfiguration(
                abstract: "Send the backend's events to URL; prints the signing secret (shown only once).")
            @Argument(help: "The backend id.") var id: String
            @Argument(help: "The receiver's https:// URL (checked against the outbound address policy).") var url: String
            @Option(help: "Start after this event position (default: the newest, so only events from now on).") var after: Int64?
            @OptionGroup var options: ServerOptions

            func run() async throws {
                var params: [String: JSONValue] = ["backendId": .string(id), "url": .string(url)]
                if let after { params["after"] = .int(after) }
                try await reporting {
                    try await options.run("admin.backends.setWebhook", params: .object(params)) { result in
                        """
                        \(Webhook.describe(result))
                        secret: \(result["secret"]?.text ?? "-")

                        Store the secret now: it signs every POST (Aerie-Signature) and cannot be shown again.
                        """
                    }
                }
            }
        }

        struct Show: AsyncParsableCommand {
            static let configuration = CommandConfiguration(abstract: "Show the backend's webhook and how its delivery goes.")
            @Argument(help: "The backend id.") var id: String
            @OptionGroup var options: ServerOptions
            func run() async throws {
                try await reporting {
                    try await options.run("admin.backends.getWebhook", params: ["backendId": .string(id)], text: Webhook.describe)
                }
            }
        }

        struct Clear: AsyncParsableCommand {
            static let configuration = CommandConfiguration(abstract: "Stop sending the backend's events to its webhook.")
            @Argument(help: "The backend id.") var id: String
            @OptionGroup var options: ServerOptions
            func run() async throws {
                try await reporting {
                    try await options.run("admin.backends.clearWebhook", params: ["backendId": .string(id)]) { result in
                        result["cleared"] == .bool(true) ? "webhook cleared" : "the backend had no webhook"
                    }
                }
            }
        }
    }
}
