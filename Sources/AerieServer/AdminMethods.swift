import AerieCore
import AerieCrypto
import AerieStore
import Foundation

/// `admin.tenants.*`: the operator's methods, callable with the admin token only.
struct AdminMethods: AeriePlugin {
    static let name = "admin"
    static let tenantTokenPrefix = "aerie_t_"

    let database: AerieDatabase
    let masterKeys: MasterKeyring
    /// Called once a rotate, suspend or delete committed, with the fingerprint of the tenant's
    /// valid token (nil: none), so this process acts before its NOTIFY comes back.
    var credentialChanged: @Sendable (TenantID, String?) -> Void = { _, _ in }

    struct CreateParams: Codable, Sendable, DocumentedParams {
        var label: String
        static let documentation = [ParamDoc("label", "string", "a name for the tenant, 1-200 characters")]
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
        static let documentation = [
            ParamDoc("cursor", "string", required: false, "nextCursor of the previous page"),
            ParamDoc("limit", "integer", required: false, "1-500, default 100"),
        ]
    }

    struct TenantView: Codable, Sendable {
        var tenantId: TenantID
        var label: String
        var status: String
        var createdAt: Date
        var updatedAt: Date

        init(_ record: TenantRecord) {
            tenantId = record.id
            label = record.label
            status = record.status.rawValue
            createdAt = record.createdAt
            updatedAt = record.updatedAt
        }
    }

    struct CreatedTenant: Codable, Sendable {
        var tenantId: TenantID
        var label: String
        var status: String
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
            "admin.tenants.create", summary: "Creates a tenant; returns its id and token (shown once).", access: .admin
        ) { (params: CreateParams, _) in
            let label = try Self.validLabel(params.label)
            let id = TenantID.random()
            let token = TokenHasher.generate(prefix: Self.tenantTokenPrefix)
            let dataKey = DataKey.generate()
            func create(wrappedBy masterKey: MasterKey) async throws -> TenantRecord {
                try await tenants.create(
                    id: id, label: label, tokenHash: TokenHasher.hash(token),
                    wrappedDataKey: masterKey.wrap(dataKey, tenantID: id.rawValue),
                    masterKeyFingerprint: masterKey.fingerprint)
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
            return CreatedTenant(tenantId: record.id, label: record.label, status: record.status.rawValue, token: token)
        }

        try router.register("admin.tenants.list", summary: "Lists tenants by id, paged.", access: .admin) {
            (params: ListParams, _) in
            let limit = params.limit ?? 100
            guard (1...500).contains(limit) else {
                throw AerieError.invalidParams("limit must be between 1 and 500", field: "limit")
            }
            var after: TenantID? = nil
            if let cursor = params.cursor {
                guard let id = TenantID(cursor) else { throw AerieError.invalidParams("cursor is invalid", field: "cursor") }
                after = id
            }
            let page = try await tenants.list(after: after, limit: limit + 1)
            let items = page.prefix(limit).map(TenantView.init)
            return TenantPage(items: items, nextCursor: page.count > limit ? items.last?.tenantId.rawValue : nil)
        }

        try router.register("admin.tenants.get", summary: "Shows one tenant.", access: .admin) {
            (params: TenantParams, _) in
            guard let record = try await tenants.get(try params.validated()) else {
                throw AerieError.notFound("no tenant \(params.tenantId)")
            }
            return TenantView(record)
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
                return TenantView(record)
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
