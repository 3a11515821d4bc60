import AerieCore
import Foundation

/// Whether a tenant may authenticate.
public enum TenantStatus: String, Sendable, Codable, Hashable {
    case active
    case suspended
    /// Being moved to another server: frozen until the move ends (`TenantArchiveStore`).
    case moving
}

/// A tenant as the admin API shows it. The token hash is left out on purpose: it is read
/// separately, only by the code that needs it; the wrapped data key comes only with a sealed
/// label, to open it.
public struct TenantRecord: Sendable, Codable, Hashable {
    public var id: TenantID
    public var label: StoredTenantLabel
    public var status: TenantStatus
    public var createdAt: Date
    public var updatedAt: Date
    /// Identifies the master key that wraps this tenant's data key (for key rotation).
    public var masterKeyFingerprint: String
    /// The backend that owns the tenant and may act for it, if any.
    public var backendId: BackendID?

    public init(
        id: TenantID, label: StoredTenantLabel, status: TenantStatus, createdAt: Date, updatedAt: Date,
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
        (extract(epoch FROM updated_at) * 1000000)::int8, master_key_fingerprint, backend_id::text, label_sealed,
        CASE WHEN label_sealed IS NOT NULL THEN data_key_wrapped END
        """

    init(row: Int, of result: PostgresResult) throws {
        guard let idText = result.string(row, 0), let id = TenantID(idText),
            let status = result.string(row, 2).flatMap(TenantStatus.init(rawValue:)),
            let createdAt = result.date(microseconds: row, 3),
            let updatedAt = result.date(microseconds: row, 4)
        else { throw AerieError.internalError(details: "malformed row in aerie.tenants") }
        let label: StoredTenantLabel
        if let sealed = result.bytes(row, 7), let wrapped = result.bytes(row, 8) {
            label = .sealed(sealed, wrappedDataKey: wrapped)
        } else {
            label = .clear(result.string(row, 1) ?? "")
        }
        self.init(
            id: id, label: label, status: status, createdAt: createdAt,
            updatedAt: updatedAt, masterKeyFingerprint: result.string(row, 5) ?? "",
            backendId: result.string(row, 6).flatMap(BackendID.init))
    }

    static func all(in result: PostgresResult) throws -> [TenantRecord] {
        try (0..<result.rowCount).map { try TenantRecord(row: $0, of: result) }
    }
}

/// A tenant's label as stored: sealed under the tenant's data key (schema/0044), with the
/// wrapped key that opens it, or a previous release's clear one.
public enum StoredTenantLabel: Sendable, Codable, Hashable {
    case clear(String)
    case sealed([UInt8], wrappedDataKey: [UInt8])

    package static let table = "tenants"
    package static let column = "label"

    /// `label` sealed for tenant `id` by `sealer` (the tenant's own).
    static func seal(_ label: String, tenant id: TenantID, sealer: any ValueSealer) -> [UInt8] {
        sealer.seal(Array(label.utf8), table: table, column: column, row: id.rawValue)
    }

    /// The label, opened by the sealer `sealer` gives for the tenant and its wrapped data key.
    public func open(tenant id: TenantID, sealer: (TenantID, [UInt8]) throws -> any ValueSealer) throws -> String {
        switch self {
        case .clear(let label): return label
        case .sealed(let sealed, let wrapped):
            return String(decoding: try sealer(id, wrapped).open(sealed, table: Self.table, column: Self.column, row: id.rawValue), as: UTF8.self)
        }
    }
}
