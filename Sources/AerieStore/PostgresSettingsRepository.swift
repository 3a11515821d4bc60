import AerieCore
import Foundation

/// `aerie.tenant_settings`. Queries name the tenant explicitly too, which lets PostgreSQL use
/// the primary key; row-level security is what guarantees the isolation.
struct PostgresSettingsRepository: TenantSettingsRepository {
    let tenantID: TenantID
    let session: DatabaseSession

    func get(_ key: String) throws -> JSONValue? {
        let result = try session.query(
            "SELECT value FROM aerie.tenant_settings WHERE tenant_id = $1::uuid AND key = $2",
            [.text(tenantID.rawValue), .text(key)])
        guard result.rowCount == 1, let text = result.string(0, 0) else { return nil }
        return try Self.decode(text)
    }

    func set(_ key: String, to value: JSONValue) throws {
        try session.execute(
            """
            INSERT INTO aerie.tenant_settings (tenant_id, key, value) VALUES ($1::uuid, $2, $3::jsonb)
            ON CONFLICT (tenant_id, key) DO UPDATE SET value = EXCLUDED.value, updated_at = now()
            """,
            [.text(tenantID.rawValue), .text(key), .text(try Self.encode(value))])
    }

    func remove(_ key: String) throws -> Bool {
        try session.execute(
            "DELETE FROM aerie.tenant_settings WHERE tenant_id = $1::uuid AND key = $2",
            [.text(tenantID.rawValue), .text(key)]) == 1
    }

    func list(after afterKey: String?, limit: Int) throws -> [TenantSetting] {
        let result = try session.query(
            """
            SELECT key, value FROM aerie.tenant_settings
            WHERE tenant_id = $1::uuid AND ($2::text IS NULL OR key > $2::text)
            ORDER BY key LIMIT $3
            """,
            [.text(tenantID.rawValue), .optionalText(afterKey), .int(max(0, limit))])
        return try (0..<result.rowCount).map { row in
            TenantSetting(key: result.string(row, 0) ?? "", value: try Self.decode(result.string(row, 1) ?? "null"))
        }
    }

    static func encode(_ value: JSONValue) throws -> String {
        String(decoding: try JSONEncoder().encode(value), as: UTF8.self)
    }

    static func decode(_ text: String) throws -> JSONValue {
        do {
            return try JSONDecoder().decode(JSONValue.self, from: Data(text.utf8))
        } catch {
            throw AerieError.internalError(details: "unreadable jsonb in aerie.tenant_settings: \(error)")
        }
    }
}
