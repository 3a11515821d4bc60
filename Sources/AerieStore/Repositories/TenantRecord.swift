import AerieCore
import Foundation

/// Whether a tenant may authenticate.
public enum TenantStatus: String, Sendable, Codable, Hashable {
    case active
    case suspended
}

/// A tenant as the admin API shows it. The token hash and wrapped data key are left out on
/// purpose: they are read separately, only by the code that needs them.
public struct TenantRecord: Sendable, Codable, Hashable {
    public var id: TenantID
    public var label: String
    public var status: TenantStatus
    public var createdAt: Date
    public var updatedAt: Date
    /// Identifies the master key that wraps this tenant's data key (for key rotation).
    public var masterKeyFingerprint: String
    /// The backend that owns the tenant and may act for it, if any.
    public var backendId: BackendID?

    public init(
        id: TenantID, label: String, status: TenantStatus, createdAt: Date, updatedAt: Date,
        masterKeyFingerprint: String, backendId: BackendID? = nil
    ) {
        self.id = id
        self.label = label
        self.status = status
        self.createdAt = createdAt
        self.updatedAt = updatedAt
        self.masterKeyFingerprint = masterKeyFingerprint
        self.backendId = backendId
    }
}

extension TenantRecord {
    /// The select list `init(row:of:)` reads, in order.
    static let columns = """
        id, label, status, (extract(epoch FROM created_at) * 1000000)::int8,
        (extract(epoch FROM updated_at) * 1000000)::int8, master_key_fingerprint, backend_id::text
        """

    init(row: Int, of result: PostgresResult) throws {
        guard let idText = result.string(row, 0), let id = TenantID(idText),
            let status = result.string(row, 2).flatMap(TenantStatus.init(rawValue:)),
            let createdAt = result.date(microseconds: row, 3),
            let updatedAt = result.date(microseconds: row, 4)
        else { throw AerieError.internalError(details: "malformed row in aerie.tenants") }
        self.init(
            id: id, label: result.string(row, 1) ?? "", status: status, createdAt: createdAt,
            updatedAt: updatedAt, masterKeyFingerprint: result.string(row, 5) ?? "",
            backendId: result.string(row, 6).flatMap(BackendID.init))
    }

    static func all(in result: PostgresResult) throws -> [TenantRecord] {
        try (0..<result.rowCount).map { try TenantRecord(row: $0, of: result) }
    }
}
