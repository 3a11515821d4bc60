import AerieCore
import Foundation

/// A JSON Schema validator for the keywords our own OpenRPC schema (`OpenRPCSchema`) uses, and
/// no more: a schema holding any other keyword is an error, so the schema cannot pass by being
/// half understood. `$ref`s resolve inside the one schema document (`#/definitions/...`).
struct JSONSchemaValidator {
    /// Keywords that only annotate; they never fail an instance.
    static let annotations: Set<String> = ["$schema", "$id", "title", "description", "default", "examples", "format", "definitions"]
    static let assertions: Set<String> = [
        "$ref", "type", "enum", "required", "properties", "patternProperties", "additionalProperties", "items",
        "additionalItems", "oneOf", "anyOf", "allOf", "minLength", "minItems", "uniqueItems", "minimum", "exclusiveMinimum",
        "pattern",
    ]

    struct Failure: Error, CustomStringConvertible {
        let path: String
        let message: String
        var description: String { "\(path.isEmpty ? "/" : path): \(message)" }
    }

    private let root: JSONValue

    init(_ schema: JSONValue) {
        root = schema
    }

    /// The failures of `instance` against the schema (empty: valid).
    func validate(_ instance: JSONValue) throws -> [Failure] {
        try check(instance, root, path: "")
    }

    private func resolve(_ reference: String) throws -> JSONValue {
        guard reference.hasPrefix("#") else { throw Failure(path: "", message: "only local $refs are supported: \(reference)") }
        var target = root
        for token in reference.dropFirst().split(separator: "/") {
            let key = token.replacingOccurrences(of: "~1", with: "/").replacingOccurrences(of: "~0", with: "~")
            guard let next = target[key] else { throw Failure(path: "", message: "unresolved $ref \(reference)") }
            target = next
        }
        return target
    }

    private func check(_ instance: JSONValue, _ schema: JSONValue, path: String) throws -> [Failure] {
        if case .bool(let allowed) = schema {
            return allowed ? [] : [Failure(path: path, message: "no value is allowed here")]
        }
        guard case .object(let keywords) = schema else { throw Failure(path: path, message: "a schema is not an object") }
        for keyword in keywords.keys where !Self.annotations.contains(keyword) && !Self.assertions.contains(keyword) {
            throw Failure(path: path, message: "the validator does not know the keyword \(keyword)")
        }
        var failures: [Failure] = []
        func fail(_ message: String) { failures.append(Failure(path: path, message: message)) }

        if let reference = keywords["$ref"]?.stringValue {
            failures += try check(instance, try resolve(reference), path: path)
        }
        if let type = keywords["type"] {
            let names: [String]
            switch type {
            case .string(let name): names = [name]
            case .array(let list): names = list.compactMap(\.stringValue)
            default: throw Failure(path: path, message: "a type is neither a name nor a list")
            }
            if !names.contains(where: { Self.instance(instance, is: $0) }) { fail("not of type \(names.joined(separator: "|"))") }
        }
        if case .array(let values)? = keywords["enum"], !values.contains(instance) { fail("not one of the enum's values") }
        if case .object(let members) = instance {
            if case .array(let required)? = keywords["required"] {
                for name in required.compactMap(\.stringValue) where members[name] == nil { fail("missing \(name)") }
            }
            let properties = Self.members(keywords["properties"])
            let patterns = try Self.members(keywords["patternProperties"]).map { pattern, schema in
                (try NSRegularExpression(pattern: pattern), schema)
            }
            for (name, value) in members.sorted(by: { $0.key < $1.key }) {
                let memberPath = path + "/" + name
                var matched = false
                if let schema = properties[name] {
                    matched = true
                    failures += try check(value, schema, path: memberPath)
                }
                for (pattern, schema) in patterns
                where pattern.firstMatch(in: name, range: NSRange(name.startIndex..., in: name)) != nil {
                    matched = true
                    failures += try check(value, schema, path: memberPath)
                }
                if !matched, let additional = keywords["additionalProperties"] {
                    failures += try check(value, additional, path: memberPath)
                }
            }
        }
        if case .array(let elements) = instance {
            // `items` as one schema applies to every element; `additionalItems` then has no effect.
            if let items = keywords["items"] {
                if case .array = items { throw Failure(path: path, message: "tuple items are not supported") }
                for (index, element) in elements.enumerated() {
                    failures += try check(element, items, path: "\(path)/\(index)")
                }
            }
            if let minimum = keywords["minItems"]?.intValue, elements.count < Int(minimum) { fail("fewer than \(minimum) items") }
            if keywords["uniqueItems"] == .bool(true), Set(elements).count != elements.count { fail("items are not unique") }
        }
        if case .string(let text) = instance, let minimum = keywords["minLength"]?.intValue, text.count < Int(minimum) {
            fail("shorter than \(minimum)")
        }
        if case .string(let text) = instance, let pattern = keywords["pattern"]?.stringValue,
            try NSRegularExpression(pattern: pattern).firstMatch(in: text, range: NSRange(text.startIndex..., in: text)) == nil
        {
            fail("does not match \(pattern)")
        }
        if let number = Self.number(instance) {
            if let minimum = keywords["minimum"].flatMap(Self.number), number < minimum { fail("below \(minimum)") }
            if let bound = keywords["exclusiveMinimum"].flatMap(Self.number), number <= bound { fail("not above \(bound)") }
        }
        if case .array(let schemas)? = keywords["allOf"] {
            for schema in schemas { failures += try check(instance, schema, path: path) }
        }
        if case .array(let schemas)? = keywords["anyOf"] {
            let passing = try schemas.filter { try check(instance, $0, path: path).isEmpty }
            if passing.isEmpty { fail("matches none of anyOf") }
        }
        if case .array(let schemas)? = keywords["oneOf"] {
            let passing = try schemas.filter { try check(instance, $0, path: path).isEmpty }
            if passing.count != 1 { fail("matches \(passing.count) of oneOf's schemas, not exactly one") }
        }
        return failures
    }

    private static func members(_ value: JSONValue?) -> [String: JSONValue] {
        if case .object(let members)? = value { return members }
        return [:]
    }

    private static func number(_ value: JSONValue) -> Double? {
        switch value {
        case .int(let int): Double(int)
        case .double(let double): double
        default: nil
        }
    }

    private static func instance(_ value: JSONValue, is type: String) -> Bool {
        switch (type, value) {
        case ("null", .null), ("boolean", .bool), ("string", .string), ("array", .array), ("object", .object): true
        case ("integer", .int), ("number", .int), ("number", .double): true
        case ("integer", .double(let double)): double.rounded() == double
        default: false
        }
    }
}
