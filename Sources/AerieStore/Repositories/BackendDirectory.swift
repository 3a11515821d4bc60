import AerieCore
import Foundation

/// A backend as the admin API shows it (its token hash is never read back).
public struct BackendRecord: Sendable, Codable, Hashable {
    public var id: BackendID
    public var label: String
    public var status: TenantStatus
    public var createdAt: Date
    public var updatedAt: Date
}

/// The global table of backends (`aerie.backends`): service credentials that act for the
/// tenants they own. Runs as the runtime role; no row-level security, like `aerie.tenants`.
public struct BackendDirectory: Sendable {
    let pool: ConnectionPool

    init(pool: ConnectionPool) { self.pool = pool }

    static let columns = """
        id::text, label, status, (extract(epoch FROM created_at) * 1000000)::int8,
        (extract(epoch FROM updated_at) * 1000000)::int8
        """

    static func records(in result: PostgresResult) throws -> [BackendRecord] {
        try (0..<result.rowCount).map { row in
            guard let id = result.string(row, 0).flatMap(BackendID.init),
                let status = result.string(row, 2).flatMap(TenantStatus.init(rawValue:)),
                let createdAt = result.date(microseconds: row, 3), let updatedAt = result.date(microseconds: row, 4)
            else { throw AerieError.internalError(details: "malformed row in aerie.backends") }
            return BackendRecord(id: id, label: result.string(row, 1) ?? "", status: status, createdAt: createdAt, updatedAt: updatedAt)
        }
    }

    public func create(id: BackendID, label: String, tokenHash: [UInt8]) async throws -> BackendRecord {
        try await pool.transaction(tenant: nil) { session in
            let result = try session.query(
                "INSERT INTO aerie.backends (id, label, token_hash) VALUES ($1::uuid, $2, $3) RETURNING \(Self.columns)",
                [.text(id.rawValue), .text(label), .bytes(tokenHash)])
            guard let record = try Self.records(in: result).first else {
                throw AerieError.internalError(details: "backend insert returned nothing")
            }
            return record
        }
    }

    public func get(_ id: BackendID) async throws -> BackendRecord? {
        try await pool.read { session in
            try Self.records(in: session.query("SELECT \(Self.columns) FROM aerie.backends WHERE id = $1::uuid", [.text(id.rawValue)])).first
        }
    }

    /// Backends in id order, strictly after `after` (keyset paging).
    public func list(after: BackendID?, limit: Int) async throws -> [BackendRecord] {
        var conditions = SQLConditions()
        conditions.add(after.map { .text($0.rawValue) }) { "id > \($0)::uuid" }
        let limit = conditions.parameter(.int(max(0, limit)))
        let sql = "SELECT \(Self.columns) FROM aerie.backends \(conditions.whereClause) ORDER BY backends.id LIMIT \(limit)"
        let parameters = conditions.parameters
        return try await pool.read { session in
            try Self.records(in: session.query(sql, parameters))
        }
    }

    /// The active backend whose token hashes to `tokenHash` (`session.authenticate`).
    public func authenticate(tokenHash: [UInt8]) async throws -> BackendID? {
        try await pool.read { session in
            try session.query(
                "SELECT id::text FROM aerie.backends WHERE token_hash = $1 AND status = 'active'", [.bytes(tokenHash)]
            ).string(0, 0).flatMap(BackendID.init)
        }
    }

    /// The per-call check of a backend session that names `tenant`, in one round trip: whether
    /// the backend is still active with this token (else `.credentialInvalid`), and the wrapped
    /// data key of `tenant` if it is this backend's and active (else `.notActingFor`, which does
    /// not say whether the tenant exists).
    public enum ActingCheck: Sendable, Equatable {
        case allowed(wrappedDataKey: [UInt8])
        case credentialInvalid
        case notActingFor
    }

    public func check(_ id: BackendID, tokenHash: [UInt8], actingFor tenant: TenantID?) async throws -> ActingCheck {
        try await pool.read { session in
            let result = try session.query(
                """
                SELECT (SELECT t.data_key_wrapped FROM aerie.tenants t
                        WHERE t.id = $3::uuid AND t.backend_id = b.id AND t.status = 'active')
                FROM aerie.backends b WHERE b.id = $1::uuid AND b.token_hash = $2 AND b.status = 'active'
                """,
                [.text(id.rawValue), .bytes(tokenHash), .optionalText(tenant?.rawValue)])
            guard result.rowCount == 1 else { return .credentialInvalid }
            guard let wrapped = result.bytes(0, 0) else { return .notActingFor }
            return .allowed(wrappedDataKey: wrapped)
        }
    }

    public func replaceTokenHash(_ id: BackendID, with tokenHash: [UInt8]) async throws -> Bool {
        try await update("token_hash = $2", id, [.bytes(tokenHash)])
    }

    public func setStatus(_ id: BackendID, _ status: TenantStatus) async throws -> Bool {
        try await update("status = $2", id, [.text(status.rawValue)])
    }

    /// Deletes a backend that owns no tenants; throws `conflict` when it still owns some.
    public func delete(_ id: BackendID) async throws -> Bool {
        try await pool.transaction(tenant: nil) { session in
            let owned = try session.query(
                "SELECT count(*) FROM aerie.tenants WHERE backend_id = $1::uuid", [.text(id.rawValue)]
            ).int(0, 0) ?? 0
            guard owned == 0 else {
                throw AerieError(.conflict, "the backend still owns \(owned) tenant(s); delete them first")
            }
            return try session.execute("DELETE FROM aerie.backends WHERE id = $1::uuid", [.text(id.rawValue)]) == 1
        }
    }

    private func update(_ assignments: String, _ id: BackendID, _ values: [SQLValue]) async throws -> Bool {
        try await pool.transaction(tenant: nil) { session in
            try session.execute(
                "UPDATE aerie.backends SET \(assignments), updated_at = now() WHERE id = $1::uuid", [.text(id.rawValue)] + values) == 1
        }
    }
}
