import AerieCore
import AerieCrypto
import AerieStore
import Foundation

/// `admin.backends.*`: the operator's methods for backends, the service credentials a wallet
/// backend uses to act for many tenants over one session (each call names its tenant in
/// `params._meta.tenantId`). Admin token only. A backend token is shown once; only its hash is
/// stored; rotation and suspension take effect at the backend's next call.
struct BackendMethods: AeriePlugin {
    static let name = "admin.backends"

    let database: AerieDatabase
    /// The webhook methods (`setWebhook`, `getWebhook`, `clearWebhook`), when delivery runs.
    var webhooks: WebhookAdministration? = nil

    struct CreateParams: Codable, Sendable, DocumentedParams {
        var label: String
        static let documentation = [ParamDoc("label", "string", "a name for the backend, 1-200 characters")]
    }

    struct BackendParams: Codable, Sendable, DocumentedParams {
        var backendId: String
        static let documentation = [ParamDoc("backendId", "string", "the backend's UUID")]

        func validated() throws -> BackendID {
            guard let id = BackendID(backendId) else {
                throw AerieError.invalidParams("backendId must be a UUID", field: "backendId")
            }
            return id
        }
    }

    struct BackendView: Codable, Sendable {
        var backendId: BackendID
        var label: String
        var status: String
        /// ISO 8601, as every other time the server answers.
        var createdAt: String
        var updatedAt: String

        init(_ record: BackendRecord) {
            backendId = record.id
            label = record.label
            status = record.status.rawValue
            createdAt = record.createdAt.iso8601Text
            updatedAt = record.updatedAt.iso8601Text
        }
    }

    struct CreatedBackend: Codable, Sendable {
        var backendId: BackendID
        var label: String
        var status: String
        /// Shown once; only its hash is stored.
        var token: String
    }

    struct BackendPage: Codable, Sendable {
        var items: [BackendView]
        var nextCursor: String?
    }

    struct RotatedToken: Codable, Sendable {
        var backendId: BackendID
        var token: String
    }

    struct Deleted: Codable, Sendable {
        var backendId: BackendID
        var deleted: Bool
    }

    func register(with router: inout MethodRouter) throws {
        let backends = database.backends

        try router.register(
            "admin.backends.create", summary: "Creates a backend; returns its id and token (shown once).", access: .admin
        ) { (params: CreateParams, _) in
            let label = try AdminMethods.validLabel(params.label)
            let token = TokenHasher.generate(prefix: AdminMethods.backendTokenPrefix)
            let record = try await backends.create(id: .random(), label: label, tokenHash: TokenHasher.hash(token))
            return CreatedBackend(backendId: record.id, label: record.label, status: record.status.rawValue, token: token)
        }

        try router.register("admin.backends.list", summary: "Lists backends by id, paged.", access: .admin) {
            (params: AdminMethods.ListParams, _) in
            let limit = try params.validatedLimit()
            var after: BackendID? = nil
            if let cursor = params.cursor {
                guard let id = BackendID(cursor) else { throw AerieError.invalidParams("cursor is invalid", field: "cursor") }
                after = id
            }
            let page = try await backends.list(after: after, limit: limit + 1)
            let items = page.prefix(limit).map(BackendView.init)
            return BackendPage(items: items, nextCursor: page.count > limit ? items.last?.backendId.rawValue : nil)
        }

        try router.register("admin.backends.get", summary: "Shows one backend.", access: .admin) {
            (params: BackendParams, _) in
            guard let record = try await backends.get(try params.validated()) else {
                throw AerieError.notFound("no backend \(params.backendId)")
            }
            return BackendView(record)
        }

        try router.register(
            "admin.backends.rotateToken", summary: "Issues a new backend token; the old one stops working at once.",
            access: .admin
        ) { (params: BackendParams, _) in
            let id = try params.validated()
            let token = TokenHasher.generate(prefix: AdminMethods.backendTokenPrefix)
            guard try await backends.replaceTokenHash(id, with: TokenHasher.hash(token)) else {
                throw AerieError.notFound("no backend \(params.backendId)")
            }
            return RotatedToken(backendId: id, token: token)
        }

        for (method, status, summary) in [
            ("admin.backends.suspend", TenantStatus.suspended, "Suspends a backend: its sessions stop at their next call."),
            ("admin.backends.resume", TenantStatus.active, "Resumes a suspended backend."),
        ] {
            try router.register(method, summary: summary, access: .admin) { (params: BackendParams, _) in
                let id = try params.validated()
                guard try await backends.setStatus(id, status), let record = try await backends.get(id) else {
                    throw AerieError.notFound("no backend \(params.backendId)")
                }
                return BackendView(record)
            }
        }

        try router.register(
            "admin.backends.delete", summary: "Deletes a backend that owns no tenants (delete its tenants first).",
            access: .admin
        ) { (params: BackendParams, _) in
            let id = try params.validated()
            guard try await backends.delete(id) else { throw AerieError.notFound("no backend \(params.backendId)") }
            return Deleted(backendId: id, deleted: true)
        }

        if let webhooks { try registerWebhooks(with: &router, webhooks) }
    }
}
