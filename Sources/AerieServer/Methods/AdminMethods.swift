import AerieCore
import AerieCrypto
import AerieStore
import Foundation

/// `admin.tenants.*`: the operator's methods, callable with the admin token; `create`, `list` and
/// `get` also with a backend's token, scoped to the tenants that backend owns.
struct AdminMethods: AeriePlugin {
    static let name = "admin"
    static let tenantTokenPrefix = "aerie_t_"
    static let backendTokenPrefix = "aerie_b_"

    let database: AerieDatabase
    let masterKeys: MasterKeyring
    /// Called once a rotate, suspend or delete committed, with the fingerprint of the tenant's
    /// valid token (nil: none), so this process acts before its NOTIFY comes back.
    var credentialChanged: @Sendable (TenantID, String?) -> Void = { _, _ in }

    struct CreateParams: Codable, Sendable, DocumentedParams {
        var label: String
        var backendId: String?
        static let documentation = [
            ParamDoc("label", "string", "a name for the tenant, 1-200 characters"),
            ParamDoc(
                "backendId", "string", required: false,
                "admin only: the backend that owns the tenant and may act for it (a backend's own calls always own what they create)"),
        ]
    }

    struct TenantParams: Codable, Sendable, DocumentedParams {
        var tenantId: String
        static let documentation = [ParamDoc("tenantId", "string", "the tenant's UUID")]

        func validated() throws -> TenantID {
            guard let id = TenantID(tenantId) else {
                throw AerieError.invalidParams("tenantId must be a UUID", field: "tenantId")
            }
            return id
        }
    }

    struct ListParams: Codable, Sendable, DocumentedParams {
        var cursor: String?
        var limit: Int?
        var backendId: String?
        static let documentation = [
            ParamDoc("cursor", "string", required: false, "nextCursor of the previous page"),
            ParamDoc("limit", "integer", required: false, "1-500, default 100"),
            ParamDoc("backendId", "string", required: false, "admin only: list only the tenants of this backend"),
        ]

        func validatedLimit() throws -> Int {
            let limit = self.limit ?? 100
            guard (1...500).contains(limit) else {
                throw AerieError.invalidParams("limit must be between 1 and 500", field: "limit")
            }
            return limit
        }
    }

    /// The backend a call is scoped to: a backend's own session, or the `backendId` an admin
    /// names (validated); nil for an admin naming none.
    static func scope(_ principal: Principal, requested: String?) throws -> BackendID? {
        if case .backend(let own) = principal {
            if let requested, BackendID(requested) != own {
                throw AerieError(.forbidden, "a backend acts for its own tenants only")
            }
            return own
        }
        guard let requested else { return nil }
        guard let id = BackendID(requested) else { throw AerieError.invalidParams("backendId must be a UUID", field: "backendId") }
        return id
    }

    struct TenantView: Codable, Sendable {
        var tenantId: TenantID
        /// Absent when this server's master keys do not open the tenant's data key (the tenant's
        /// own calls fail too then): one such tenant does not fail a whole listing.
        var label: String?
        var status: String
        var backendId: BackendID?
        /// ISO 8601, as every other time the server answers.
        var createdAt: String
        var updatedAt: String

        /// `masterKeys` unwrap the tenant's data key, which opens its label.
        init(_ record: TenantRecord, masterKeys: MasterKeyring) {
            tenantId = record.id
            label = try? record.label.open(tenant: record.id) { id, wrapped in
                try masterKeys.unwrap(wrapped, tenantID: id).sealer(for: id)
            }
            status = record.status.rawValue
            backendId = record.backendId
            createdAt = record.createdAt.iso8601Text
            updatedAt = record.updatedAt.iso8601Text
        }
    }

    struct CreatedTenant: Codable, Sendable {
        var tenantId: TenantID
        var label: String
        var status: String
        var backendId: BackendID?
        /// Shown once; only its hash is stored.
        var token: String
    }

    struct TenantPage: Codable, Sendable {
        var items: [TenantView]
        var nextCursor: String?
    }

    struct RotatedToken: Codable, Sendable {
        var tenantId: TenantID
        var token: String
    }

    struct RotatedAdminToken: Codable, Sendable {
        var token: String
    }

    struct DeletedTenant: Codable, Sendable {
        var tenantId: TenantID
        var deleted: Bool
        /// Rows removed per tenant table.
        var rowsRemoved: [String: Int]
    }

    static func validLabel(_ label: String) throws -> String {
        let trimmed = label.trimmingCharacters(in: .whitespacesAndNewlines)
        guard (1...200).contains(trimmed.count) else {
            throw AerieError.invalidParams("label must be 1 to 200 characters", field: "label")
        }
        guard !trimmed.unicodeScalars.contains(where: { CharacterSet.controlCharacters.contains($0) }) else {
            throw AerieError.invalidParams("label must not contain control characters", field: "label")
        }
        return trimmed
    }

    func register(with router: inout MethodRouter) throws {
        let database = self.database
        let masterKeys = self.masterKeys
        let tenants = database.tenants
        let credentialChanged = self.credentialChanged

        try router.register(
            "admin.tenants.create",
            summary: "Creates a tenant; returns its id and token (shown once). On a backend session the backend owns it.",
            access: .adminOrBackend
        ) { (params: CreateParams, context: CallContext) in
            let label = try Self.validLabel(params.label)
            let owner = try Self.scope(context.principal, requested: params.backendId)
            let id = TenantID.random()
            let token = TokenHasher.generate(prefix: Self.tenantTokenPrefix)
            let dataKey = DataKey.generate()
            func create(wrappedBy masterKey: MasterKey) async throws -> TenantRecord {
                try await tenants.create(
                    id: id, label: label, sealer: dataKey.sealer(for: id), tokenHash: TokenHasher.hash(token),
                    wrappedDataKey: masterKey.wrap(dataKey, tenantID: id.rawValue),
                    masterKeyFingerprint: masterKey.fingerprint, backend: owner)
            }
            let record: TenantRecord
            do {
                record = try await create(wrappedBy: masterKeys.current)
            } catch let mismatch as MasterKeyMismatch {
                // The master key was rotated under this server: follow it if the key is at hand.
                guard let rotated = masterKeys.adopt(fingerprint: mismatch.inUse) else {
                    throw AerieError(
                        .unavailable, "this server's master key is out of date; restart it with the current master key",
                        details: mismatch.description)
                }
                do {
                    record = try await create(wrappedBy: rotated)
                } catch let again as MasterKeyMismatch {
                    throw AerieError(
                        .unavailable, "tenants' data keys are wrapped by more than one master key; finish the rotation",
                        details: again.description)
                }
            }
            return CreatedTenant(
                tenantId: record.id, label: label, status: record.status.rawValue, backendId: record.backendId, token: token)
        }

        try router.register(
            "admin.tenants.list", summary: "Lists tenants by id, paged (a backend: its own).", access: .adminOrBackend
        ) { (params: ListParams, context: CallContext) in
            let limit = try params.validatedLimit()
            let backend = try Self.scope(context.principal, requested: params.backendId)
            var after: TenantID? = nil
            if let cursor = params.cursor {
                guard let id = TenantID(cursor) else { throw AerieError.invalidParams("cursor is invalid", field: "cursor") }
                after = id
            }
            let page = try await tenants.list(after: after, limit: limit + 1, backend: backend)
            let items = page.prefix(limit).map { TenantView($0, masterKeys: masterKeys) }
            return TenantPage(items: items, nextCursor: page.count > limit ? items.last?.tenantId.rawValue : nil)
        }

        try router.register("admin.tenants.get", summary: "Shows one tenant (a backend: one of its own).", access: .adminOrBackend) {
            (params: TenantParams, context: CallContext) in
            let scope = try Self.scope(context.principal, requested: nil)
            guard let record = try await tenants.get(try params.validated()), scope == nil || record.backendId == scope else {
                throw AerieError.notFound("no tenant \(params.tenantId)")
            }
            return TenantView(record, masterKeys: masterKeys)
        }

        try router.register(
            "admin.tenants.rotateToken", summary: "Issues a new token; the old one stops working at once.",
            access: .admin
        ) { (params: TenantParams, _) in
            let id = try params.validated()
            let token = TokenHasher.generate(prefix: Self.tenantTokenPrefix)
            let hash = TokenHasher.hash(token)
            guard try await tenants.replaceTokenHash(id, with: hash) else {
                throw AerieError.notFound("no tenant \(params.tenantId)")
            }
            credentialChanged(id, TokenHasher.fingerprint(ofHash: hash))
            return RotatedToken(tenantId: id, token: token)
        }

        try router.register(
            "admin.rotateToken",
            summary: "Issues a new admin token (shown once; only its hash is stored); the old one stops working at once.",
            access: .admin
        ) { (_: NoParams, _) in
            let token = TokenHasher.generate(prefix: AerieApplication.adminTokenPrefix)
            try await tenants.setAdminTokenHash(TokenHasher.hash(token))
            return RotatedAdminToken(token: token)
        }

        for (method, status, summary) in [
            ("admin.tenants.suspend", TenantStatus.suspended, "Suspends a tenant: its sessions stop at their next call."),
            ("admin.tenants.resume", TenantStatus.active, "Resumes a suspended tenant."),
        ] {
            try router.register(method, summary: summary, access: .admin) { (params: TenantParams, _) in
                let id = try params.validated()
                guard try await tenants.setStatus(id, status), let record = try await tenants.get(id) else {
                    throw AerieError.notFound("no tenant \(params.tenantId)")
                }
                if status != .active { credentialChanged(id, nil) }
                return TenantView(record, masterKeys: masterKeys)
            }
        }

        try router.register(
            "admin.tenants.delete", summary: "Deletes a tenant and every row it owns in every tenant table.",
            access: .admin
        ) { (params: TenantParams, _) in
            let id = try params.validated()
            guard let counts = try await tenants.delete(id) else {
                throw AerieError.notFound("no tenant \(params.tenantId)")
            }
            credentialChanged(id, nil)
            return DeletedTenant(tenantId: id, deleted: true, rowsRemoved: counts)
        }
    }
}
