/// The top-level members of a JSON object's text, each with its value's raw text, found by a
/// scan that builds no values. A reader takes the few members it needs as values and passes a
/// large one on as text: `messages.download` answers each message's payload as the JSON text its
/// sealed row holds (`decryptedPayload`), instead of parsing it into a tree and writing it back.
///
/// The scan checks the structure (strings, nesting, literals, numbers' characters) as far as it
/// needs to find where each value ends; `value(_:)` parses a member with the strict parser.
package struct JSONObjectText {
    package let bytes: [UInt8]
    /// In the text's order; looked up by a linear search, last one first (a repeated key: the
    /// last wins, as the parser does). A sealed row's object has a handful of members: hashing
    /// their keys into a dictionary cost more than comparing them.
    private var members: [(key: String, range: Range<Int>)] = []
    /// Just past the object's opening brace.
    private var contentStart = 0

    package init(_ bytes: [UInt8]) throws {
        try self.init(bytes, range: 0..<bytes.count)
    }

    /// The object that `range` of `bytes` holds (whitespace around it allowed): `bytes` is
    /// shared, not copied, and ranges stay indices into it.
    private init(_ bytes: [UInt8], range: Range<Int>) throws {
        self.bytes = bytes
        var contentStart = range.lowerBound
        members = try bytes.withUnsafeBufferPointer { whole in
            let buffer = UnsafeBufferPointer(rebasing: whole[range])
            var parser = JSONParser(buffer)
            var found: [(key: String, range: Range<Int>)] = []
            parser.skipWhitespace()
            guard parser.index < buffer.count, buffer[parser.index] == UInt8(ascii: "{") else { throw parser.fail("expected an object") }
            contentStart = range.lowerBound + parser.index + 1
            try parser.readMembers { parser, key in
                let start = parser.index
                try parser.skipValue()
                found.append((key ?? "", range.lowerBound + start..<range.lowerBound + parser.index))
            }
            parser.skipWhitespace()
            guard parser.index == buffer.count else { throw parser.fail("unexpected data after the object") }
            return found
        }
        self.contentStart = contentStart
    }

    private func range(_ key: String) -> Range<Int>? {
        for member in members.reversed() where member.key == key { return member.range }
        return nil
    }

    /// The raw text of member `key`'s value, nil when absent.
    package func rawBytes(_ key: String) -> ArraySlice<UInt8>? {
        range(key).map { bytes[$0] }
    }

    /// The object's text without member `key` (the last of that name), nil when absent: the
    /// member goes with the comma and whitespace after it (before it, when it is the last), so a
    /// compact or `", "`-separated text comes out as its writer would have written it without
    /// the member (a did:peer:1's stored variant, `PeerDID1`).
    package func removing(_ key: String) -> [UInt8]? {
        guard let at = members.lastIndex(where: { $0.key == key }) else { return nil }
        // Where the member after `end` (a value's end, or `contentStart`) starts.
        func nextMember(after end: Int) -> Int {
            var index = end
            let isSpace: (UInt8) -> Bool = { $0 == 0x20 || $0 == 0x09 || $0 == 0x0A || $0 == 0x0D }
            while index < bytes.count, isSpace(bytes[index]) { index += 1 }
            if end != contentStart, index < bytes.count, bytes[index] == UInt8(ascii: ",") { index += 1 }
            while index < bytes.count, isSpace(bytes[index]) { index += 1 }
            return index
        }
        let valueEnd = members[at].range.upperBound
        let cut: Range<Int>
        if at + 1 < members.count {
            cut = nextMember(after: at > 0 ? members[at - 1].range.upperBound : contentStart)..<nextMember(after: valueEnd)
        } else if at > 0 {
            cut = members[at - 1].range.upperBound..<valueEnd
        } else {
            cut = nextMember(after: contentStart)..<valueEnd
        }
        return Array(bytes[..<cut.lowerBound] + bytes[cut.upperBound...])
    }

    /// Member `key` parsed, nil when absent.
    package func value(_ key: String) throws -> JSONValue? {
        guard let range = range(key) else { return nil }
        return try JSONValue(parsing: bytes[range])
    }

    /// Member `key` when it is an object, scanned in turn (over the same bytes); nil when absent
    /// or not an object.
    package func object(_ key: String) throws -> JSONObjectText? {
        guard let range = range(key), bytes[range.lowerBound] == UInt8(ascii: "{") else { return nil }
        return try JSONObjectText(bytes, range: range)
    }

    /// Member `key` when it is a string. One without escapes is taken as it stands (the scan
    /// checked it has no control characters; its UTF-8 is validated here).
    package func string(_ key: String) -> String? {
        guard let range = range(key), bytes[range.lowerBound] == UInt8(ascii: "\"") else { return nil }
        let inner = range.lowerBound + 1..<range.upperBound - 1
        if !bytes[inner].contains(UInt8(ascii: "\\")) {
            return bytes.withUnsafeBufferPointer { JSONParser.string(validating: UnsafeBufferPointer(rebasing: $0[inner])) }
        }
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
