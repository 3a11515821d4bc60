import Foundation

extension JSONValue {
    /// Encodes any Encodable into a JSONValue: the value `JSONEncoder.aerie`'s text would parse
    /// to, built directly (`JSONValueEncoder`).
    public init<T: Encodable>(encoding value: T) throws {
        self = try JSONValueEncoder.encode(value)
    }

    /// Decodes this value as `T`. A failure names the params field at fault as a dotted path.
    public func decode<T: Decodable>(as type: T.Type) throws -> T {
        try JSONValueDecoder.decode(T.self, from: self)
    }
}

extension JSONEncoder {
    /// Sorted keys and unescaped slashes: stable output, URLs that read as URLs.
    package static var aerie: JSONEncoder {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return encoder
    }
}

extension DecodingError {
    /// The dotted path of the field that failed to decode, e.g. `messages[0].uids`.
    public var fieldPath: String {
        var path: [CodingKey]
        switch self {
        case .keyNotFound(let key, let context): path = context.codingPath + [key]
        case .typeMismatch(_, let context): path = context.codingPath
        case .valueNotFound(_, let context): path = context.codingPath
        case .dataCorrupted(let context): path = context.codingPath
        @unknown default: path = []
        }
        var result = ""
        for key in path {
            if let index = key.intValue {
                result += "[\(index)]"
            } else {
                result += result.isEmpty ? key.stringValue : ".\(key.stringValue)"
            }
        }
        return result.isEmpty ? "params" : result
    }

    /// A short reason, safe to show.
    public var reason: String {
        switch self {
        case .keyNotFound: "is required"
        case .typeMismatch(let type, _): "must be \(Self.describe(type))"
        case .valueNotFound(let type, _): "must be \(Self.describe(type)), not null"
        case .dataCorrupted(let context): context.debugDescription
        @unknown default: "is invalid"
        }
    }

    private static func describe(_ type: Any.Type) -> String {
        switch type {
        case is String.Type: "a string"
        case is Int.Type, is Int64.Type, is Int32.Type, is UInt.Type: "an integer"
        case is Double.Type, is Float.Type: "a number"
        case is Bool.Type: "a boolean"
        default:
            String(describing: type).hasPrefix("Array") ? "an array" : "an object"
        }
    }
}
