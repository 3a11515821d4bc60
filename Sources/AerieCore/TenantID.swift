import Foundation

/// A tenant's identifier: a lowercase UUID string, validated on the way in.
public struct TenantID: Sendable, Hashable, Codable, CustomStringConvertible {
    public let rawValue: String

    public init?(_ string: String) {
        guard let uuid = UUID(text: string) else { return nil }
        self.rawValue = uuid.lowercasedString
    }

    public init(uuid: UUID) { self.rawValue = uuid.lowercasedString }

    public static func random() -> TenantID { TenantID(uuid: UUID.random()) }

    public var description: String { rawValue }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        let string = try container.decode(String.self)
        guard let id = TenantID(string) else {
            throw DecodingError.dataCorruptedError(in: container, debugDescription: "not a tenant id (UUID)")
        }
        self = id
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(rawValue)
    }
}

/// A backend's identifier (a wallet backend acting for many tenants): a lowercase UUID string.
public struct BackendID: Sendable, Hashable, Codable, CustomStringConvertible {
    public let rawValue: String

    public init?(_ string: String) {
        guard let uuid = UUID(text: string) else { return nil }
        self.rawValue = uuid.lowercasedString
    }

    public static func random() -> BackendID { BackendID(UUID.random().uuidString)! }

    public var description: String { rawValue }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        guard let id = BackendID(try container.decode(String.self)) else {
            throw DecodingError.dataCorruptedError(in: container, debugDescription: "not a backend id (UUID)")
        }
        self = id
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(rawValue)
    }
}
