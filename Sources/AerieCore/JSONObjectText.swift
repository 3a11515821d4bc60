/// The top-level members of a JSON object's text, each with its value's raw text, found by a
/// scan that builds no values. A reader takes the few members it needs as values and passes a
/// large one on as text: `messages.download` answers each message's payload as the JSON text its
/// sealed row holds (`decryptedPayload`), instead of parsing it into a tree and writing it back.
///
/// The scan checks the structure (strings, nesting, literals, numbers' characters) as far as it
/// needs to find where each value ends; `value(_:)` parses a member with the strict parser.
package struct JSONObjectText {
    package let bytes: [UInt8]
    private var members: [String: Range<Int>] = [:]

    package init(_ bytes: [UInt8]) throws {
        self.bytes = bytes
        members = try bytes.withUnsafeBufferPointer { buffer in
            var parser = JSONParser(buffer)
            var found: [String: Range<Int>] = [:]
            parser.skipWhitespace()
            guard parser.index < buffer.count, buffer[parser.index] == UInt8(ascii: "{") else { throw parser.fail("expected an object") }
            try parser.readMembers { parser, key in
                let start = parser.index
                try parser.skipValue()
                found[key ?? ""] = start..<parser.index
            }
            parser.skipWhitespace()
            guard parser.index == buffer.count else { throw parser.fail("unexpected data after the object") }
            return found
        }
    }

    /// The raw text of member `key`'s value, nil when absent.
    package func rawBytes(_ key: String) -> ArraySlice<UInt8>? {
        members[key].map { bytes[$0] }
    }

    /// Member `key` parsed, nil when absent.
    package func value(_ key: String) throws -> JSONValue? {
        guard let range = members[key] else { return nil }
        return try JSONValue(parsing: bytes[range])
    }

    /// Member `key` when it is a string.
    package func string(_ key: String) -> String? {
        guard let range = members[key], bytes[range.lowerBound] == UInt8(ascii: "\"") else { return nil }
        return (try? JSONValue(parsing: bytes[range]))?.stringValue
    }
}

extension JSONParser {
    /// Moves past one value, checking its structure, building nothing (keys of nested objects
    /// and strings are skipped, not decoded).
    mutating func skipValue() throws {
        guard index < bytes.count else { throw fail("unexpected end of input") }
        switch bytes[index] {
        case UInt8(ascii: "{"): try readMembers(parsingKeys: false) { parser, _ in try parser.skipValue() }
        case UInt8(ascii: "["): try readItems { try $0.skipValue() }
        case UInt8(ascii: "\""): try skipString()
        case UInt8(ascii: "t"): try expectLiteral("true")
        case UInt8(ascii: "f"): try expectLiteral("false")
        case UInt8(ascii: "n"): try expectLiteral("null")
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): _ = try parseNumber()
        default: throw fail("unexpected character")
        }
    }

    /// Moves past a string from its opening quote: escapes are stepped over, not decoded.
    mutating func skipString() throws {
        index += 1
        while index < bytes.count {
            switch bytes[index] {
            case UInt8(ascii: "\""):
                index += 1
                return
            case UInt8(ascii: "\\"):
                index += 2
            case 0..<0x20:
                throw fail("control character in string")
            default:
                index += 1
            }
        }
        throw fail("unterminated string")
    }
}
