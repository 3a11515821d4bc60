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

    func string(_ key: String, limit: PeerFieldLimits) throws -> String? {
        guard let value = value(key) else { return nil }
        guard case .string(let string) = value else { throw invalid("\(path(key)) must be a string", field: path(key)) }
        try limit.check(string, field: path(key))
        return string
    }

    func requiredString(_ key: String, limit: PeerFieldLimits, missing: String) throws -> String {
        guard let string = try string(key, limit: limit), !string.isEmpty else {
            throw invalid(missing, field: path(key))
        }
        return string
    }

    func object(_ key: String) throws -> InvitationFields? {
        guard let value = value(key) else { return nil }
        return try InvitationFields(value, path: path(key))
    }

    func array(_ key: String, maxCount: Int = PeerFieldLimits.maxListCount) throws -> [JSONValue]? {
        guard let value = value(key) else { return nil }
        guard case .array(let items) = value else { throw invalid("\(path(key)) must be an array", field: path(key)) }
        guard items.count <= maxCount else {
            throw invalid("\(path(key)) has more than \(maxCount) entries", field: path(key))
        }
        return items
    }

    func strings(_ key: String, limit: PeerFieldLimits) throws -> [String] {
        guard let items = try array(key) else { return [] }
        return try items.enumerated().map { index, item in
            let field = "\(path(key))[\(index)]"
            guard case .string(let string) = item else { throw invalid("\(field) must be a string", field: field) }
            try limit.check(string, field: field)
            return string
        }
    }
}

extension PeerFieldLimits {
    /// Throws `invalid_invitation` naming `field` when `string` is over this limit.
    func check(_ string: String, field: String) throws {
        if let violation = violation(string, name: field) { throw invalid(violation, field: field) }
    }
}

/// The bounds on invitation input as a whole (its fields: `PeerFieldLimits`).
public enum InvitationLimits {
    /// Largest invitation JSON accepted (as text, or serialized when given as an object).
    public static let maxInvitationBytes = 64 * 1024
    /// Longest invitation URL decoded locally (a `?c_i=` URL carries the whole invitation).
    public static let maxURLBytes = 128 * 1024
}

func invalid(_ message: String, field: String? = nil) -> AerieError {
    AerieError(.invalidInvitation, message, field: field.flatMap { $0.isEmpty ? nil : $0 })
}

func unsupported(_ message: String, field: String? = nil) -> AerieError {
    AerieError(.unsupportedInvitation, message, field: field)
}
