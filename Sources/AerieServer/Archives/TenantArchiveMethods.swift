import AerieCore
import AerieCrypto
import AerieStore
import Foundation

/// `admin.tenants.export / exportChunk / import / retire`: a tenant as a sealed, versioned,
/// streamed archive (docs/OPERATIONS.md, "Tenant archives"), and the move between servers built
/// on it (`aerie-admin tenant move`). Pieces travel base64 in ordinary calls, one piece per call,
/// so a session pulls (export) or pushes (import) at its own pace and the server holds at most a
/// few pieces.
struct TenantArchiveMethods: AeriePlugin {
    static let name = "archives"
    /// Bytes of archive per `import` call at most (base64 makes them a third larger on the line).
    static let maxPieceByteCount = 512 << 10

    let database: AerieDatabase
    let transfers: TenantArchiveTransfers
    /// Seconds a moved tenant's keys are answered "retry later" after the move
    /// (`AERIE_MOVED_TENANT_GRACE_SECONDS`).
    let movedKeysGrace: Int
    /// Whether a tenant's own session may export itself (`tenant.export`,
    /// `AERIE_TENANT_SELF_EXPORT`).
    var tenantSelfExport = false
    /// Called once a tenant is frozen for a move or retired, so its sessions stop at once.
    var credentialChanged: @Sendable (TenantID, String?) -> Void = { _, _ in }

    struct ExportParams: Codable, Sendable, DocumentedParams {
        var tenantId: String
        var passphrase: String?
        var recipientPublicKey: String?
        var move: Bool?
        static let documentation = [
            ParamDoc("tenantId", "string", "the tenant's UUID"),
            ParamDoc("passphrase", "string", required: false, "seal the archive to this passphrase (8-1024 bytes; Argon2id)"),
            ParamDoc(
                "recipientPublicKey", "string", required: false,
                "or seal it to this X25519 public key (base64, 32 bytes): only its secret key opens it"),
            ParamDoc(
                "move", "boolean", required: false,
                "freeze the tenant as `moving` first (no calls; its inbound answered 503) until admin.tenants.retire or resume"),
        ]

        func sealing() throws -> TenantArchive.Sealing {
            switch (passphrase, recipientPublicKey) {
            case (let passphrase?, nil):
                guard (PasswordKey.minPassphraseByteCount...PasswordKey.maxPassphraseByteCount).contains(passphrase.utf8.count) else {
                    throw AerieError.invalidParams("passphrase must be 8 to 1024 bytes", field: "passphrase")
                }
                return .passphrase(passphrase)
            case (nil, let key?):
                guard let bytes = try? Base64.decode(key), bytes.count == X25519KeyPair.byteCount else {
                    throw AerieError.invalidParams("recipientPublicKey must be 32 bytes in base64", field: "recipientPublicKey")
                }
                return .recipient(publicKey: bytes)
            default:
                throw AerieError.invalidParams("give exactly one of passphrase and recipientPublicKey", field: "passphrase")
            }
        }
    }

    struct SelfExportParams: Codable, Sendable, DocumentedParams {
        var passphrase: String?
        var recipientPublicKey: String?
        static let documentation = [
            ParamDoc("passphrase", "string", required: false, "seal the archive to this passphrase (8-1024 bytes; Argon2id)"),
            ParamDoc("recipientPublicKey", "string", required: false, "or to this X25519 public key (base64, 32 bytes)"),
        ]
    }

    static func chunk(_ params: ChunkParams, transfers: TenantArchiveTransfers, session: any SessionHandle) async throws -> Chunk {
        guard let piece = try await transfers.nextPiece(params.exportId, session: session) else { return Chunk(data: "", done: true) }
        return Chunk(data: Base64.encode(piece), done: false)
    }

    struct StartedExport: Codable, Sendable {
        var exportId: String
        var tenantId: TenantID
        var status: String
    }

    struct ChunkParams: Codable, Sendable, DocumentedParams {
        var exportId: String
        static let documentation = [ParamDoc("exportId", "string", "what admin.tenants.export answered")]
    }

    struct Chunk: Codable, Sendable {
        /// The next bytes of the archive file, base64; empty when `done`.
        var data: String
        var done: Bool
    }

    struct ImportParams: Codable, Sendable, DocumentedParams {
        var importId: String?
        var data: String
        var final: Bool?
        var passphrase: String?
        var recipientSecretKey: String?
        var backendId: String?
        var newId: Bool?
        static let documentation = [
            ParamDoc("importId", "string", required: false, "absent on the first call; then what the first call answered"),
            ParamDoc("data", "string", "the next bytes of the archive file, base64, at most 512 KiB"),
            ParamDoc("final", "boolean", required: false, "true on the last call: it answers once the tenant is committed"),
            ParamDoc("passphrase", "string", required: false, "first call: the archive's passphrase"),
            ParamDoc("recipientSecretKey", "string", required: false, "first call: or the X25519 secret key it is sealed to (base64)"),
            ParamDoc("backendId", "string", required: false, "first call, admin only: the backend that will own the tenant"),
            ParamDoc(
                "newId", "boolean", required: false,
                "first call: if the tenant's id is taken here, import it under a fresh id with a new token (answered once); else refused"),
        ]

        func opening() throws -> TenantArchive.Opening {
            switch (passphrase, recipientSecretKey) {
            case (let passphrase?, nil):
                return .passphrase(passphrase)
            case (nil, let key?):
                guard let bytes = try? Base64.decode(key), let pair = try? X25519KeyPair(secretKey: bytes) else {
                    throw AerieError.invalidParams("recipientSecretKey must be 32 bytes in base64", field: "recipientSecretKey")
                }
                return .recipient(pair)
            default:
                throw AerieError.invalidParams("give exactly one of passphrase and recipientSecretKey", field: "passphrase")
            }
        }
    }

    struct ImportAnswer: Codable, Sendable {
        var importId: String
        /// Set on the final call: what was committed.
        var imported: TenantArchiveTransfers.ImportResult?
    }

    struct RetireParams: Codable, Sendable, DocumentedParams {
        var tenantId: String
        static let documentation = [ParamDoc("tenantId", "string", "the UUID of a tenant in `moving` whose destination holds it")]
    }

    struct Retired: Codable, Sendable {
        var tenantId: TenantID
        var retired: Bool
        var rowsRemoved: [String: Int]
    }

    func register(with router: inout MethodRouter) throws {
        let transfers = self.transfers
        let archives = database.archives
        let tenants = database.tenants
        let grace = movedKeysGrace
        let credentialChanged = self.credentialChanged

        try router.register(
            "admin.tenants.export",
            summary: "Starts a sealed archive of a whole tenant, as of one snapshot; read it with admin.tenants.exportChunk (a backend: one of its own).",
            access: .adminOrBackend
        ) { (params: ExportParams, context: CallContext) in
            guard let id = TenantID(params.tenantId) else { throw AerieError.invalidParams("tenantId must be a UUID", field: "tenantId") }
            let sealing = try params.sealing()
            if let backend = try AdminMethods.scope(context.principal, requested: nil) {
                guard params.move != true else { throw AerieError(.forbidden, "only the operator moves tenants") }
                guard try await tenants.get(id)?.backendId == backend else { throw AerieError.notFound("no tenant \(params.tenantId)") }
            }
            if params.move == true {
                guard try await archives.beginMove(id) else { throw AerieError.notFound("no tenant \(params.tenantId)") }
                credentialChanged(id, nil)
            }
            guard let record = try await tenants.get(id) else { throw AerieError.notFound("no tenant \(params.tenantId)") }
            let exportID = try transfers.startExport(id, sealing: sealing, session: context.session)
            return StartedExport(exportId: exportID, tenantId: id, status: record.status.rawValue)
        }

        try router.register(
            "admin.tenants.exportChunk", summary: "The next bytes of an export started on this session.", access: .adminOrBackend
        ) { (params: ChunkParams, context: CallContext) in
            try await Self.chunk(params, transfers: transfers, session: context.session)
        }

        let selfExport = tenantSelfExport
        try router.register(
            "tenant.export",
            summary: "Starts a sealed archive of this tenant (when the operator allows it: AERIE_TENANT_SELF_EXPORT); read it with tenant.exportChunk.",
            access: .tenant
        ) { (params: SelfExportParams, context: CallContext) in
            guard selfExport else {
                throw AerieError(.forbidden, "this server does not let tenants export themselves (AERIE_TENANT_SELF_EXPORT)")
            }
            guard case .tenant(let tenant) = context.principal else { throw AerieError(.forbidden, "this method needs a tenant session") }
            let sealing = try ExportParams(tenantId: tenant.tenantID.rawValue, passphrase: params.passphrase,
                                           recipientPublicKey: params.recipientPublicKey).sealing()
            let exportID = try transfers.startExport(tenant.tenantID, sealing: sealing, session: context.session)
            return StartedExport(exportId: exportID, tenantId: tenant.tenantID, status: TenantStatus.active.rawValue)
        }

        try router.register(
            "tenant.exportChunk", summary: "The next bytes of this tenant's export started on this session.", access: .tenant
        ) { (params: ChunkParams, context: CallContext) in
            try await Self.chunk(params, transfers: transfers, session: context.session)
        }

        try router.register(
            "admin.tenants.import",
            summary: "Imports a tenant archive, piece by piece, in one transaction: all of it or nothing (a backend: it owns the tenant).",
            access: .adminOrBackend
        ) { (params: ImportParams, context: CallContext) in
            guard let data = try? Base64.decode(params.data), data.count <= Self.maxPieceByteCount else {
                throw AerieError.invalidParams("data must be base64 of at most \(Self.maxPieceByteCount) bytes", field: "data")
            }
            let importID: String
            if let existing = params.importId {
                importID = existing
            } else {
                let backend = try AdminMethods.scope(context.principal, requested: params.backendId)
                importID = try transfers.startImport(
                    opening: try params.opening(), backend: backend, newID: params.newId == true, session: context.session)
            }
            let result = try await transfers.importPiece(importID, data: data, final: params.final == true, session: context.session)
            return ImportAnswer(importId: importID, imported: result)
        }

        try router.register(
            "admin.tenants.retire",
            summary: "Ends a move: shreds a `moving` tenant (its data key and rows) once its destination holds it.",
            access: .admin
        ) { (params: RetireParams, _) in
            guard let id = TenantID(params.tenantId) else { throw AerieError.invalidParams("tenantId must be a UUID", field: "tenantId") }
            FaultPoint.reach("move.beforeRetire")
            guard let counts = try await archives.retire(id, keysMovedUntilSeconds: grace) else {
                throw AerieError.notFound("no tenant \(params.tenantId)")
            }
            credentialChanged(id, nil)
            return Retired(tenantId: id, retired: true, rowsRemoved: counts)
        }
    }
}
