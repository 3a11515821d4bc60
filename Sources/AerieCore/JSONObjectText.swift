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
            var scanner = Scanner(bytes: buffer)
            return try scanner.objectMembers()
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

    private struct Scanner {
        let bytes: UnsafeBufferPointer<UInt8>
        var index = 0
        var depth = 0

        func fail(_ reason: String) -> JSONValue.ParseError { JSONValue.ParseError(offset: index, reason: reason) }

        mutating func objectMembers() throws -> [String: Range<Int>] {
            skipWhitespace()
            guard index < bytes.count, bytes[index] == UInt8(ascii: "{") else { throw fail("expected an object") }
            index += 1
            var members: [String: Range<Int>] = [:]
            skipWhitespace()
            if index < bytes.count, bytes[index] == UInt8(ascii: "}") {
                index += 1
            } else {
                while true {
                    skipWhitespace()
                    let keyStart = index
                    try skipString()
                    let key = try Self.key(bytes[keyStart..<index])
                    skipWhitespace()
                    guard index < bytes.count, bytes[index] == UInt8(ascii: ":") else { throw fail("expected ':'") }
                    index += 1
                    skipWhitespace()
                    let valueStart = index
                    try skipValue()
                    members[key] = valueStart..<index
                    skipWhitespace()
                    guard index < bytes.count else { throw fail("unexpected end of input") }
                    if bytes[index] == UInt8(ascii: ",") {
                        index += 1
                        continue
                    }
                    guard bytes[index] == UInt8(ascii: "}") else { throw fail("expected ',' or '}'") }
                    index += 1
                    break
                }
            }
            skipWhitespace()
            guard index == bytes.count else { throw fail("unexpected data after the object") }
            return members
        }

        /// A key's text without its quotes; one with escapes goes through the parser.
        static func key(_ quoted: Slice<UnsafeBufferPointer<UInt8>>) throws -> String {
            let inner = quoted.dropFirst().dropLast()
            if !inner.contains(UInt8(ascii: "\\")) { return String(decoding: inner, as: UTF8.self) }
            guard let key = try JSONValue(parsing: quoted).stringValue else { throw JSONValue.ParseError(offset: 0, reason: "expected a key") }
            return key
        }

        mutating func skipWhitespace() {
            while index < bytes.count {
                switch bytes[index] {
                case 0x20, 0x09, 0x0A, 0x0D: index += 1
                default: return
                }
            }
        }

        mutating func skipValue() throws {
            guard index < bytes.count else { throw fail("unexpected end of input") }
            switch bytes[index] {
            case UInt8(ascii: "\""): try skipString()
            case UInt8(ascii: "{"): try skipContainer(close: UInt8(ascii: "}"), keyed: true)
            case UInt8(ascii: "["): try skipContainer(close: UInt8(ascii: "]"), keyed: false)
            case UInt8(ascii: "t"): try skipLiteral("true")
            case UInt8(ascii: "f"): try skipLiteral("false")
            case UInt8(ascii: "n"): try skipLiteral("null")
            case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"):
                let start = index
                while index < bytes.count {
                    switch bytes[index] {
                    case UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"), UInt8(ascii: "+"), UInt8(ascii: "."),
                        UInt8(ascii: "e"), UInt8(ascii: "E"):
                        index += 1
                    default:
                        guard index > start else { throw fail("invalid number") }
                        return
                    }
                }
            default: throw fail("unexpected character")
            }
        }

        mutating func skipContainer(close: UInt8, keyed: Bool) throws {
            depth += 1
            defer { depth -= 1 }
            guard depth < JSONValue.maxParseDepth else { throw fail("nesting deeper than \(JSONValue.maxParseDepth)") }
            index += 1
            skipWhitespace()
            if index < bytes.count, bytes[index] == close {
                index += 1
                return
            }
            while true {
                skipWhitespace()
                if keyed {
                    guard index < bytes.count, bytes[index] == UInt8(ascii: "\"") else { throw fail("expected a key") }
                    try skipString()
                    skipWhitespace()
                    guard index < bytes.count, bytes[index] == UInt8(ascii: ":") else { throw fail("expected ':'") }
                    index += 1
                    skipWhitespace()
                }
                try skipValue()
                skipWhitespace()
                guard index < bytes.count else { throw fail("unexpected end of input") }
                if bytes[index] == UInt8(ascii: ",") {
                    index += 1
                    continue
                }
                guard bytes[index] == close else { throw fail("expected ',' or the container's end") }
                index += 1
                return
            }
        }

        mutating func skipString() throws {
            guard index < bytes.count, bytes[index] == UInt8(ascii: "\"") else { throw fail("expected a string") }
            index += 1
            while index < bytes.count {
                switch bytes[index] {
                case UInt8(ascii: "\""):
                    index += 1
                    return
                case UInt8(ascii: "\\"):
                    index += 2
                case 0..<0x20:
                    throw fail("control character in a string")
                default:
                    index += 1
                }
            }
            throw fail("unterminated string")
        }

        mutating func skipLiteral(_ literal: StaticString) throws {
            let count = literal.utf8CodeUnitCount
            guard index + count <= bytes.count else { throw fail("unexpected end of input") }
            let expected = UnsafeBufferPointer(start: literal.utf8Start, count: count)
            for offset in 0..<count where bytes[index + offset] != expected[offset] { throw fail("invalid literal") }
            index += count
        }
    }
}
