import AerieCore

/// Bounded, typed reads of one JSON object of an invitation. Every failure is an
/// `invalid_invitation` error naming the field by its dotted path (`services[0].recipientKeys[1]`).
struct InvitationFields {
    let fields: [String: JSONValue]
    /// The path of this object inside the invitation; empty at the top.
    let path: String

    init(_ fields: [String: JSONValue], path: String = "") {
        self.fields = fields
        self.path = path
    }

    init(_ value: JSONValue, path: String) throws {
        guard case .object(let fields) = value else {
            throw invalid("\(path.isEmpty ? "the invitation" : path) must be a JSON object", field: path)
        }
        self.init(fields, path: path)
    }

    func path(_ key: String) -> String { path.isEmpty ? key : "\(path).\(key)" }

    /// The value of `key`; JSON `null` reads as absent.
    func value(_ key: String) -> JSONValue? {
        guard let value = fields[key], !value.isNull else { return nil }
        return value
    }

    func has(_ key: String) -> Bool { value(key) != nil }

    func string(_ key: String, limit: StringLimit) throws -> String? {
        guard let value = value(key) else { return nil }
        guard case .string(let string) = value else { throw invalid("\(path(key)) must be a string", field: path(key)) }
        try limit.check(string, field: path(key))
        return string
    }

    func requiredString(_ key: String, limit: StringLimit, missing: String) throws -> String {
        guard let string = try string(key, limit: limit), !string.isEmpty else {
            throw invalid(missing, field: path(key))
        }
        return string
    }

    func object(_ key: String) throws -> InvitationFields? {
        guard let value = value(key) else { return nil }
        return try InvitationFields(value, path: path(key))
    }

    func array(_ key: String, maxCount: Int = InvitationLimits.maxListCount) throws -> [JSONValue]? {
        guard let value = value(key) else { return nil }
        guard case .array(let items) = value else { throw invalid("\(path(key)) must be an array", field: path(key)) }
        guard items.count <= maxCount else {
            throw invalid("\(path(key)) has more than \(maxCount) entries", field: path(key))
        }
        return items
    }

    func strings(_ key: String, limit: StringLimit) throws -> [String] {
        guard let items = try array(key) else { return [] }
        return try items.enumerated().map { index, item in
            let field = "\(path(key))[\(index)]"
            guard case .string(let string) = item else { throw invalid("\(field) must be a string", field: field) }
            try limit.check(string, field: field)
            return string
        }
    }
}

/// How long and what a string field may be.
struct StringLimit {
    var maxBytes: Int
    /// Identifiers, keys, DIDs and URLs: no spaces or control characters.
    var token: Bool

    static let id = StringLimit(maxBytes: 256, token: false)
    static let text = StringLimit(maxBytes: 1024, token: false)
    static let key = StringLimit(maxBytes: 256, token: true)
    static let url = StringLimit(maxBytes: 2048, token: true)
    static let did = StringLimit(maxBytes: 8192, token: true)
    static let name = StringLimit(maxBytes: 256, token: true)

    func check(_ string: String, field: String) throws {
        guard string.utf8.count <= maxBytes else {
            throw invalid("\(field) is longer than \(maxBytes) bytes", field: field)
        }
        if token {
            guard string.utf8.allSatisfy({ $0 > 0x20 && $0 != 0x7F }) else {
                throw invalid("\(field) contains spaces or control characters", field: field)
            }
        } else {
            guard !string.utf8.contains(where: { $0 < 0x20 && $0 != 0x09 && $0 != 0x0A && $0 != 0x0D }) else {
                throw invalid("\(field) contains control characters", field: field)
            }
        }
    }
}

/// The bounds on invitation input.
public enum InvitationLimits {
    /// Largest invitation JSON accepted (as text, or serialized when given as an object).
    public static let maxInvitationBytes = 64 * 1024
    /// Most entries in any list of an invitation (keys, services, protocols, attachments).
    public static let maxListCount = 16
    /// Longest invitation URL decoded locally (a `?c_i=` URL carries the whole invitation).
    public static let maxURLBytes = 128 * 1024
}

func invalid(_ message: String, field: String? = nil) -> AerieError {
    AerieError(.invalidInvitation, message, field: field.flatMap { $0.isEmpty ? nil : $0 })
}

func unsupported(_ message: String, field: String? = nil) -> AerieError {
    AerieError(.unsupportedInvitation, message, field: field)
}
