import AerieCore
import Foundation

/// `system.*` and the tenant settings methods. Always on; goes through the same router interface
/// as every protocol plugin.
public struct SystemPlugin: AeriePlugin {
    public static let name = "system"
    public let version: String

    public init(version: String) {
        self.version = version
    }

    public func register(with router: inout MethodRouter) throws {
        try router.register("system.ping", summary: "Liveness check; answers \"pong\".", access: .anonymous) {
            (_: NoParams, _) in "pong"
        }
        let version = self.version
        try router.register("system.version", summary: "Server name and version.", access: .anonymous) {
            (_: NoParams, _) in VersionResult(name: "aerie", version: version)
        }
        try router.register("settings.get", summary: "Reads one of the tenant's settings.") {
            (params: SettingKey, tenant: TenantContext) in
            try params.validate()
            let key = params.key
            let value = try await tenant.database.transaction { tx in try tx.settings.get(key) }
            guard let value else { throw AerieError.notFound("no setting named '\(key)'") }
            return TenantSetting(key: key, value: value)
        }
        try router.register("settings.set", summary: "Creates or replaces one of the tenant's settings.") {
            (params: SettingWrite, tenant: TenantContext) in
            try params.validate()
            let setting = TenantSetting(key: params.key, value: params.value)
            try await tenant.database.transaction { tx in try tx.settings.set(setting.key, to: setting.value) }
            return setting
        }
        try router.register("settings.remove", summary: "Removes one of the tenant's settings.") {
            (params: SettingKey, tenant: TenantContext) in
            try params.validate()
            let key = params.key
            let removed = try await tenant.database.transaction { tx in try tx.settings.remove(key) }
            guard removed else { throw AerieError.notFound("no setting named '\(key)'") }
            return ["removed": true] as JSONValue
        }
        try router.register("settings.list", summary: "Lists the tenant's settings by key, paged.") {
            (params: SettingsPage, tenant: TenantContext) in
            let limit = try params.validatedLimit()
            let after = params.cursor
            let page = try await tenant.database.transaction { tx in try tx.settings.list(after: after, limit: limit + 1) }
            let items = Array(page.prefix(limit))
            return SettingsPageResult(items: items, nextCursor: page.count > limit ? items.last?.key : nil)
        }
    }
}

struct VersionResult: Codable, Sendable {
    var name: String
    var version: String
}

struct SettingKey: Codable, Sendable, DocumentedParams {
    var key: String
    static let documentation = [ParamDoc("key", "string", "setting name, 1-128 characters")]

    func validate() throws { try Self.validate(key: key) }

    static func validate(key: String) throws {
        guard (1...128).contains(key.utf8.count) else {
            throw AerieError.invalidParams("key must be 1 to 128 bytes", field: "key")
        }
    }
}

struct SettingWrite: Codable, Sendable, DocumentedParams {
    static let maxValueBytes = 16 * 1024
    var key: String
    var value: JSONValue
    static let documentation = [
        ParamDoc("key", "string", "setting name, 1-128 characters"),
        ParamDoc("value", "any", "any JSON value up to 16 KiB"),
    ]

    func validate() throws {
        try SettingKey.validate(key: key)
        let size = try JSONEncoder.aerie.encode(value).count
        guard size <= Self.maxValueBytes else {
            throw AerieError.invalidParams("value must be at most 16 KiB of JSON", field: "value")
        }
    }
}

struct SettingsPage: Codable, Sendable, DocumentedParams {
    static let maxLimit = 500
    var cursor: String?
    var limit: Int?
    static let documentation = [
        ParamDoc("cursor", "string", required: false, "nextCursor of the previous page"),
        ParamDoc("limit", "integer", required: false, "1-500, default 100"),
    ]

    func validatedLimit() throws -> Int {
        let limit = self.limit ?? 100
        guard (1...Self.maxLimit).contains(limit) else {
            throw AerieError.invalidParams("limit must be between 1 and \(Self.maxLimit)", field: "limit")
        }
        return limit
    }
}

struct SettingsPageResult: Codable, Sendable {
    var items: [TenantSetting]
    var nextCursor: String?
}
