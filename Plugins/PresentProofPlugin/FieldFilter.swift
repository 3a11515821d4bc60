import AerieCore
import Foundation

/// The JSON Schema subset a DIF `constraints.fields[].filter` uses: `type`, `format` (`date`,
/// `date-time`), `const`, `enum`, `pattern`, `minimum` / `maximum` / `exclusiveMinimum` /
/// `exclusiveMaximum` (numbers, or dates with a date format), `minLength` / `maxLength`, and
/// `not` (`{"not": {…}}`). Every keyword given must hold, as in JSON Schema.
struct FieldFilter: Sendable {
    enum Bound: Sendable {
        case number(Double)
        case date(Date)
    }

    var type: String?
    var format: String?
    var const: JSONValue?
    var enumeration: [JSONValue]?
    var pattern: SafePattern?
    var minimum: Bound?
    var maximum: Bound?
    var exclusiveMinimum: Bound?
    var exclusiveMaximum: Bound?
    var minLength: Int?
    var maxLength: Int?
    /// `{"not": filter}`: holds where the inner filter does not.
    var negated: [FieldFilter] = []

    static let maxEnumValues = 64
    static let maxDepth = 3

    static let knownKeys: Set<String> = [
        "type", "format", "const", "enum", "pattern", "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum",
        "minLength", "maxLength", "not",
    ]

    init(parsing value: JSONValue, at field: String, depth: Int = 0) throws {
        guard case .object(let members) = value else { throw PresentationDefinition.malformed("a filter must be an object", at: field) }
        guard depth < Self.maxDepth else { throw PresentationDefinition.malformed("filters nest too deep", at: field) }
        if let unknown = members.keys.sorted().first(where: { !Self.knownKeys.contains($0) }) {
            throw PresentationDefinition.malformed("the filter keyword '\(unknown)' is not supported", at: "\(field).\(unknown)")
        }
        type = try members["type"].map { try Self.string($0, at: "\(field).type") }
        if let type, !["string", "number", "integer", "boolean", "array", "object", "null"].contains(type) {
            throw PresentationDefinition.malformed("the filter type '\(type)' is not a JSON Schema type", at: "\(field).type")
        }
        format = try members["format"].map { try Self.string($0, at: "\(field).format") }
        const = members["const"]
        if let values = members["enum"] {
            guard case .array(let items) = values, items.count <= Self.maxEnumValues else {
                throw PresentationDefinition.malformed("enum must be a list of at most \(Self.maxEnumValues) values", at: "\(field).enum")
            }
            enumeration = items
        }
        if let source = members["pattern"] {
            do {
                pattern = try SafePattern(try Self.string(source, at: "\(field).pattern"))
            } catch let refused as SafePattern.Refused {
                throw PresentationDefinition.malformed(refused.reason, at: "\(field).pattern")
            }
        }
        let dated = format == "date" || format == "date-time"
        minimum = try members["minimum"].map { try Self.bound($0, dated: dated, at: "\(field).minimum") }
        maximum = try members["maximum"].map { try Self.bound($0, dated: dated, at: "\(field).maximum") }
        exclusiveMinimum = try members["exclusiveMinimum"].map { try Self.bound($0, dated: dated, at: "\(field).exclusiveMinimum") }
        exclusiveMaximum = try members["exclusiveMaximum"].map { try Self.bound($0, dated: dated, at: "\(field).exclusiveMaximum") }
        minLength = try members["minLength"].map { try Self.count($0, at: "\(field).minLength") }
        maxLength = try members["maxLength"].map { try Self.count($0, at: "\(field).maxLength") }
        if let inner = members["not"] {
            negated = [try FieldFilter(parsing: inner, at: "\(field).not", depth: depth + 1)]
        }
    }

    /// Whether `value` passes, or the first keyword it fails.
    func check(_ value: JSONValue) -> String? {
        if let type, !Self.hasType(value, type) { return "is not of type \(type)" }
        if let format, format == "date" || format == "date-time" {
            guard let text = value.stringValue, Self.date(text) != nil else { return "is not a \(format)" }
        }
        if let const, !Self.equal(value, const) { return "is not the required value" }
        if let enumeration, !enumeration.contains(where: { Self.equal(value, $0) }) { return "is none of the allowed values" }
        if let pattern {
            guard let text = value.stringValue else { return "is not a string for the pattern" }
            if !pattern.matches(text) { return "does not match the pattern" }
        }
        for (bound, name, holds) in [
            (minimum, "minimum", { (a: Double, b: Double) in a >= b }),
            (maximum, "maximum", { (a: Double, b: Double) in a <= b }),
            (exclusiveMinimum, "exclusiveMinimum", { (a: Double, b: Double) in a > b }),
            (exclusiveMaximum, "exclusiveMaximum", { (a: Double, b: Double) in a < b }),
        ] {
            guard let bound else { continue }
            let compared: (Double, Double)?
            switch bound {
            case .number(let limit): compared = Self.number(value).map { ($0, limit) }
            case .date(let limit): compared = value.stringValue.flatMap(Self.date).map { ($0.timeIntervalSince1970, limit.timeIntervalSince1970) }
            }
            guard let (actual, limit) = compared, holds(actual, limit) else { return "fails \(name)" }
        }
        if minLength != nil || maxLength != nil {
            guard let text = value.stringValue else { return "is not a string for its length" }
            if let minLength, text.count < minLength { return "is shorter than minLength" }
            if let maxLength, text.count > maxLength { return "is longer than maxLength" }
        }
        for inner in negated where inner.check(value) == nil { return "matches the filter under not" }
        return nil
    }

    static func hasType(_ value: JSONValue, _ type: String) -> Bool {
        switch (type, value) {
        case ("string", .string), ("boolean", .bool), ("array", .array), ("object", .object), ("null", .null): true
        case ("number", .int), ("number", .double): true
        case ("integer", _): value.intValue != nil && number(value) != nil
        default: false
        }
    }

    static func number(_ value: JSONValue) -> Double? {
        switch value {
        case .int(let i): Double(i)
        case .double(let d): d
        default: nil
        }
    }

    /// Numbers compare by value (1 == 1.0), everything else structurally.
    static func equal(_ a: JSONValue, _ b: JSONValue) -> Bool {
        if let x = number(a), let y = number(b) { return x == y }
        return a == b
    }

    /// An RFC 3339 date-time (with or without fractional seconds) or a full date (midnight UTC).
    static func date(_ text: String) -> Date? {
        guard text.utf8.count <= 64 else { return nil }
        if let date = try? Date(text, strategy: .iso8601) { return date }
        if let date = try? Date(text, strategy: Date.ISO8601FormatStyle(includingFractionalSeconds: true)) { return date }
        return try? Date(text + "T00:00:00Z", strategy: .iso8601)
    }

    private static func string(_ value: JSONValue, at field: String) throws -> String {
        guard let text = value.stringValue, text.utf8.count <= 1024 else {
            throw PresentationDefinition.malformed("must be a string of at most 1024 bytes", at: field)
        }
        return text
    }

    private static func count(_ value: JSONValue, at field: String) throws -> Int {
        guard let n = value.intValue, n >= 0, n <= 1_000_000 else {
            throw PresentationDefinition.malformed("must be a count", at: field)
        }
        return Int(n)
    }

    private static func bound(_ value: JSONValue, dated: Bool, at field: String) throws -> Bound {
        if dated {
            guard let text = value.stringValue, let date = date(text) else {
                throw PresentationDefinition.malformed("must be a date for a date format", at: field)
            }
            return .date(date)
        }
        guard let n = number(value) else { throw PresentationDefinition.malformed("must be a number", at: field) }
        return .number(n)
    }
}
