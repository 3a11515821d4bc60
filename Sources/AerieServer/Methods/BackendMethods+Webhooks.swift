import AerieCore
import AerieCrypto
import AerieStore
import Foundation

/// What the webhook methods of `admin.backends.*` need besides the database.
struct WebhookAdministration: Sendable {
    let masterKeys: MasterKeyring
    /// The webhook receivers' address policy (`URLFetcher.checkDestination`): public addresses
    /// and `AERIE_WEBHOOK_ALLOWED_NETWORKS`, never the peers' `AERIE_ALLOWED_NETWORKS`.
    let destinations: any URLFetcher
    /// `AERIE_WEBHOOK_ALLOW_HTTP`: accept http:// URLs too (development and tests only).
    let allowHTTP: Bool
    let delivery: WebhookDelivery
}

extension BackendMethods {
    static let maxWebhookURLLength = 2048

    struct SetWebhookParams: Codable, Sendable, DocumentedParams {
        var backendId: String
        var url: String
        var after: JSONValue?
        static let documentation = [
            ParamDoc("backendId", "string", "the backend's UUID"),
            ParamDoc("url", "string", "the receiver: an https:// URL the outbound address policy allows"),
            ParamDoc(
                "after", "integer", required: false,
                "deliver the events after this position (default: the newest position, so events from now on)"),
        ]
    }

    struct WebhookView: Codable, Sendable {
        var backendId: BackendID
        var url: String
        /// The receiver has taken the events up to here.
        var position: Int64
        var attempts: Int
        /// ISO 8601, UTC.
        var nextAttemptAt: String
        var lastError: String?
        var deliveredAt: String?
        /// Only in the answer to `setWebhook`: shown once.
        var secret: String?

        init(_ record: WebhookRecord, secret: String? = nil) {
            backendId = record.backend
            url = record.url
            position = record.position
            attempts = record.attempts
            nextAttemptAt = record.nextAttemptAt.iso8601Text
            lastError = record.lastError
            deliveredAt = record.deliveredAt?.iso8601Text
            self.secret = secret
        }
    }

    struct ClearedWebhook: Codable, Sendable {
        var backendId: BackendID
        var cleared: Bool
    }

    /// `url` if the server may POST to it: http(s) only (http when allowed), within length,
    /// and an address the outbound policy accepts (`invalid_params` on `url` otherwise).
    static func validWebhookURL(_ url: String, administration: WebhookAdministration) async throws -> String {
        guard url.utf8.count <= maxWebhookURLLength else {
            throw AerieError.invalidParams("url is longer than \(maxWebhookURLLength) bytes", field: "url")
        }
        let lower = url.lowercased()
        guard lower.hasPrefix("https://") || (administration.allowHTTP && lower.hasPrefix("http://")) else {
            throw AerieError.invalidParams(
                administration.allowHTTP ? "url must be an http:// or https:// URL" : "url must be an https:// URL", field: "url")
        }
        do {
            try await administration.destinations.checkDestination(url)
        } catch let error as URLFetchError {
            throw AerieError.invalidParams("url cannot be used: \(error.message)", field: "url")
        }
        return url
    }

    func registerWebhooks(with router: inout MethodRouter, _ administration: WebhookAdministration) throws {
        let database = self.database
        let webhooks = database.webhooks

        try router.register(
            "admin.backends.setWebhook",
            summary: "Sets the backend's webhook: its events POSTed in order, in signed batches; returns the signing secret (shown once).",
            access: .admin
        ) { (params: SetWebhookParams, _) in
            let id = try BackendParams(backendId: params.backendId).validated()
            let url = try await Self.validWebhookURL(params.url, administration: administration)
            let head = try await database.events.head()
            var start = head
            if let after = params.after, after != .null {
                start = try EventMethods.validPosition(after, field: "after", head: head)
            }
            let secret = WebhookSecret.generate()
            let generation = UUID.random().lowercasedString
            let wrapped = administration.masterKeys.current.wrap(secret, backendID: id.rawValue, generation: generation)
            guard let record = try await webhooks.set(backend: id, url: url, secretWrapped: wrapped, generation: generation, position: start)
            else { throw AerieError.notFound("no backend \(params.backendId)") }
            administration.delivery.webhookSet()
            return WebhookView(record, secret: secret.text)
        }

        try router.register("admin.backends.getWebhook", summary: "Shows the backend's webhook and its delivery state.", access: .admin) {
            (params: BackendParams, _) in
            guard let record = try await webhooks.get(backend: try params.validated()) else {
                throw AerieError.notFound("backend \(params.backendId) has no webhook")
            }
            return WebhookView(record)
        }

        try router.register("admin.backends.clearWebhook", summary: "Removes the backend's webhook.", access: .admin) {
            (params: BackendParams, _) in
            let id = try params.validated()
            return ClearedWebhook(backendId: id, cleared: try await webhooks.clear(backend: id))
        }
    }
}
