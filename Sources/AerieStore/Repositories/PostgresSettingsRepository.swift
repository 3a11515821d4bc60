import AerieCore
import Foundation

/// `aerie.tenant_settings`. Queries name the tenant explicitly too, which lets PostgreSQL use
/// the primary key; row-level security is what guarantees the isolation. The value is sealed
/// (`RowSealing`, field `value`); the key stays clear, it is the primary key.
struct PostgresSettingsRepository: TenantSettingsRepository {
    let tenantID: TenantID
    let session: DatabaseSession
    let sealing: RowSealing

    func get(_ key: String) throws -> JSONValue? {
        let result = try session.query(
            "SELECT value::text, sealed FROM aerie.tenant_settings WHERE tenant_id = $1::uuid AND key = $2",
            [.text(tenantID.rawValue), .text(key)])
        guard result.rowCount == 1 else { return nil }
        return try value(result, 0, key: key)
    }

    func set(_ key: String, to value: JSONValue) throws {
        try session.execute(
            """
            INSERT INTO aerie.tenant_settings (tenant_id, key, value, sealed) VALUES ($1::uuid, $2, NULL, $3)
            ON CONFLICT (tenant_id, key) DO UPDATE SET value = NULL, sealed = EXCLUDED.sealed, updated_at = now()
            """,
            [.text(tenantID.rawValue), .text(key), .bytes(try sealing.seal(["value": value], row: key))])
    }

    func remove(_ key: String) throws -> Bool {
        try session.execute(
            "DELETE FROM aerie.tenant_settings WHERE tenant_id = $1::uuid AND key = $2",
            [.text(tenantID.rawValue), .text(key)]) == 1
    }

    /// Only the conditions given are in the statement (`SQLConditions`): a page starts at its
    /// cursor in the tenant's settings instead of reading every setting before it.
    func list(after afterKey: String?, limit: Int) throws -> [TenantSetting] {
        var conditions = SQLConditions(parameters: [.text(tenantID.rawValue)])
        conditions.add("tenant_id = $1::uuid")
        conditions.add(afterKey.map(SQLValue.text)) { "key > \($0)::text" }
        let limit = conditions.parameter(.int(max(0, limit)))
        let result = try session.query(
            """
            SELECT value::text, sealed, key FROM aerie.tenant_settings
            \(conditions.whereClause) ORDER BY tenant_settings.key LIMIT \(limit)
            """,
            conditions.parameters)
        return try (0..<result.rowCount).map { row in
            let key = result.string(row, 2) ?? ""
            return TenantSetting(key: key, value: try value(result, row, key: key))
        }
    }

    /// Rewrites up to `limit` rows of the previous (clear) form sealed; answers how many.
    func sealClearRows(limit: Int) throws -> Int {
        let result = try session.query(
            """
            SELECT value::text, sealed, key FROM aerie.tenant_settings
            WHERE tenant_id = $1::uuid AND sealed IS NULL LIMIT $2 FOR UPDATE SKIP LOCKED
            """,
            [.text(tenantID.rawValue), .int(max(0, limit))])
        for row in 0..<result.rowCount {
            guard let key = result.string(row, 2) else { continue }
            try set(key, to: try value(result, row, key: key))
        }
        return result.rowCount
    }

    /// Columns 0 and 1: the clear value (previous form) and the sealed one.
    private func value(_ result: PostgresResult, _ row: Int, key: String) throws -> JSONValue {
        if let sealed = result.bytes(row, 1) {
            return try sealing.open(sealed, row: key).json("value") ?? .null
        }
        return try JSONColumn.decode(result.string(row, 0) ?? "null")
    }
}
