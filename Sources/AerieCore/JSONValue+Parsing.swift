/// A strict RFC 8259 parser and a compact serializer for `JSONValue`.
///
/// The RPC layer parses every request line with it, so it works on raw UTF-8 bytes, bounds nesting
/// depth (no stack overflow from hostile input) and rejects trailing garbage.
extension JSONValue {
    public struct ParseError: Error, Sendable, CustomStringConvertible {
        public let offset: Int
        public let reason: String
        public var description: String { "invalid JSON at byte \(offset): \(reason)" }
    }

    public static let maxParseDepth = 64

    public init<Bytes: Collection>(parsing bytes: Bytes) throws where Bytes.Element == UInt8 {
        try self.init(parsing: bytes, maxValues: .max)
    }

    /// Parses like `init(parsing:)` but fails as soon as the document holds more than
    /// `maxValues` values (object members and array items each count), so input whose expected
    /// shape is small costs little whatever its size.
    public init<Bytes: Collection>(parsing bytes: Bytes, maxValues: Int) throws where Bytes.Element == UInt8 {
        let result = try bytes.withContiguousStorageIfAvailable { buffer in
            var parser = JSONParser(buffer, maxValues: maxValues)
            return try parser.parseDocument()
        }
        if let result {
            self = result
        } else {
            let array = Array(bytes)
            self = try array.withUnsafeBufferPointer { buffer in
                var parser = JSONParser(buffer, maxValues: maxValues)
                return try parser.parseDocument()
            }
        }
    }

    public init(parsing string: String) throws {
        var string = string
        self = try string.withUTF8 { buffer in
            var parser = JSONParser(buffer)
            return try parser.parseDocument()
        }
    }

    /// Compact JSON text, keys in sorted order, `/` unescaped.
    public func serialized() -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(64)
        write(into: &out)
        return out
    }

    public var jsonString: String { String(decoding: serialized(), as: UTF8.self) }

    public func write(into out: inout [UInt8]) {
        switch self {
        case .null: out.append(contentsOf: "null".utf8)
        case .bool(let b): out.append(contentsOf: (b ? "true" : "false").utf8)
        case .int(let i): out.append(contentsOf: String(i).utf8)
        case .double(let d):
            if d.isFinite {
                if d == d.rounded(), abs(d) < 1e15 {
                    out.append(contentsOf: String(Int64(d)).utf8)
                } else {
                    out.append(contentsOf: "\(d)".utf8)
                }
            } else {
                out.append(contentsOf: "null".utf8)
            }
        case .string(let s): Self.writeString(s, into: &out)
        case .array(let items):
            out.append(UInt8(ascii: "["))
            for (index, item) in items.enumerated() {
                if index > 0 { out.append(UInt8(ascii: ",")) }
                item.write(into: &out)
            }
            out.append(UInt8(ascii: "]"))
        case .object(let fields):
            out.append(UInt8(ascii: "{"))
            // The members sorted once as pairs: sorting the keys and then looking each one up
            // hashed every key again.
            var first = true
            for (key, value) in fields.sorted(by: { $0.key < $1.key }) {
                if !first { out.append(UInt8(ascii: ",")) }
                first = false
                Self.writeString(key, into: &out)
                out.append(UInt8(ascii: ":"))
                value.write(into: &out)
            }
            out.append(UInt8(ascii: "}"))
        }
    }

    /// Written in two passes over the string's UTF-8: one sums what its escapes add (a table
    /// lookup per byte), the other writes straight into the array grown once to the exact size.
    /// A string with nothing to escape is appended whole. A JSON text inside a string (a mailbox
    /// payload) has an escape every few bytes, where appending the runs between them one by one
    /// cost an append, its capacity check and a copy each.
    static func writeString(_ string: String, into out: inout [UInt8]) {
        // A native string's UTF-8 is read in place; another (bridged, lazy) is made native first.
        if string.utf8.withContiguousStorageIfAvailable({ writeEscaped($0, into: &out) }) == nil {
            var copy = string
            copy.withUTF8 { writeEscaped($0, into: &out) }
        }
    }

    private static func writeEscaped(_ utf8: UnsafeBufferPointer<UInt8>, into out: inout [UInt8]) {
        escapeGrowth.withUnsafeBufferPointer { growth in
            var added = 0
            for byte in utf8 { added &+= Int(growth[Int(byte)]) }
            out.append(UInt8(ascii: "\""))
            guard added > 0 else {
                out.append(contentsOf: utf8)
                out.append(UInt8(ascii: "\""))
                return
            }
            var at = out.count
            out.append(contentsOf: repeatElement(0, count: utf8.count + added + 1))
            out.withUnsafeMutableBufferPointer { dst in
                for byte in utf8 {
                    guard growth[Int(byte)] != 0 else {
                        dst[at] = byte
                        at &+= 1
                        continue
                    }
                    dst[at] = UInt8(ascii: "\\")
                    switch byte {
                    case UInt8(ascii: "\""), UInt8(ascii: "\\"):
                        dst[at &+ 1] = byte
                        at &+= 2
                    case 0x0A:
                        dst[at &+ 1] = UInt8(ascii: "n")
                        at &+= 2
                    case 0x0D:
                        dst[at &+ 1] = UInt8(ascii: "r")
                        at &+= 2
                    case 0x09:
                        dst[at &+ 1] = UInt8(ascii: "t")
                        at &+= 2
                    default:
                        dst[at &+ 1] = UInt8(ascii: "u")
                        dst[at &+ 2] = 0x30
                        dst[at &+ 3] = 0x30
                        dst[at &+ 4] = hexDigit(byte >> 4)
                        dst[at &+ 5] = hexDigit(byte & 0xF)
                        at &+= 6
                    }
                }
                dst[at] = UInt8(ascii: "\"")
            }
        }
    }

    /// The bytes each byte's escape adds: 1 for a quote, a backslash, newline, return and tab
    /// (a backslash and a letter), 5 for the other control characters (`u00XX` after the
    /// backslash), 0 for the rest.
    private static let escapeGrowth: [UInt8] = {
        var table = [UInt8](repeating: 0, count: 256)
        for byte in 0..<0x20 { table[byte] = 5 }
        for byte in [UInt8(ascii: "\""), UInt8(ascii: "\\"), 0x0A, 0x0D, 0x09] { table[Int(byte)] = 1 }
        return table
    }()

    private static func hexDigit(_ nibble: UInt8) -> UInt8 {
        nibble < 10 ? UInt8(ascii: "0") + nibble : UInt8(ascii: "a") + nibble - 10
    }
}

struct JSONParser {
    let bytes: UnsafeBufferPointer<UInt8>
    var index = 0
    var depth = 0
    var valuesLeft: Int
    /// The members of the objects being parsed, innermost last: one array for the document
    /// instead of one per object (a 100-message answer has hundreds of objects).
    private var pendingMembers: [(key: String, value: JSONValue)] = []

    init(_ bytes: UnsafeBufferPointer<UInt8>, maxValues: Int = .max) {
        self.bytes = bytes
        self.valuesLeft = maxValues
    }

    mutating func parseDocument() throws -> JSONValue {
        skipWhitespace()
        let value = try parseValue()
        skipWhitespace()
        guard index == bytes.count else { throw fail("unexpected data after the value") }
        return value
    }

    func fail(_ reason: String) -> JSONValue.ParseError { JSONValue.ParseError(offset: index, reason: reason) }

    mutating func skipWhitespace() {
        while index < bytes.count {
            switch bytes[index] {
            case 0x20, 0x09, 0x0A, 0x0D: index += 1
            default: return
            }
        }
    }

    mutating func parseValue() throws -> JSONValue {
        guard index < bytes.count else { throw fail("unexpected end of input") }
        valuesLeft -= 1
        guard valuesLeft >= 0 else { throw fail("more values than allowed") }
        switch bytes[index] {
        case UInt8(ascii: "{"): return try parseObject()
        case UInt8(ascii: "["): return try parseArray()
        case UInt8(ascii: "\""): return .string(try parseString())
        case UInt8(ascii: "t"): try expectLiteral("true"); return .bool(true)
        case UInt8(ascii: "f"): try expectLiteral("false"); return .bool(false)
        case UInt8(ascii: "n"): try expectLiteral("null"); return .null
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): return try parseNumber()
        default: throw fail("unexpected character")
        }
    }

    mutating func expectLiteral(_ literal: StaticString) throws {
        let count = literal.utf8CodeUnitCount
        guard index + count <= bytes.count else { throw fail("unexpected end of input") }
        let expected = UnsafeBufferPointer(start: literal.utf8Start, count: count)
        for offset in 0..<count where bytes[index + offset] != expected[offset] {
            throw fail("invalid literal")
        }
        index += count
    }

    mutating func enter() throws {
        depth += 1
        guard depth <= JSONValue.maxParseDepth else { throw fail("nesting deeper than \(JSONValue.maxParseDepth)") }
    }

    mutating func parseObject() throws -> JSONValue {
        // Members are collected first and the dictionary sized once: growing it member by member
        // rehashed every key at each doubling. A nested object's members go above this one's
        // and are taken off before it returns.
        let start = pendingMembers.count
        try readMembers { parser, key in
            let value = try parser.parseValue()
            parser.pendingMembers.append((key ?? "", value))
        }
        var fields = [String: JSONValue](minimumCapacity: pendingMembers.count - start)
        for member in pendingMembers[start...] { fields[member.key] = member.value }  // a repeated key: the last wins
        pendingMembers.removeSubrange(start...)
        return .object(fields)
    }

    mutating func parseArray() throws -> JSONValue {
        var items: [JSONValue] = []
        try readItems { items.append(try $0.parseValue()) }
        return .array(items)
    }

    /// Reads an object from its `{` to its `}`: each member's key (parsed when `parsingKeys`,
    /// else skipped and nil), then `value` reads the member's value.
    mutating func readMembers(parsingKeys: Bool = true, _ value: (inout JSONParser, String?) throws -> Void) throws {
        try enter()
        defer { depth -= 1 }
        index += 1
        skipWhitespace()
        if index < bytes.count, bytes[index] == UInt8(ascii: "}") {
            index += 1
            return
        }
        while true {
            skipWhitespace()
            guard index < bytes.count, bytes[index] == UInt8(ascii: "\"") else { throw fail("expected a string key") }
            let key: String?
            if parsingKeys {
                key = try parseString()
            } else {
                try skipString()
                key = nil
            }
            skipWhitespace()
            guard index < bytes.count, bytes[index] == UInt8(ascii: ":") else { throw fail("expected ':'") }
            index += 1
            skipWhitespace()
            try value(&self, key)
            skipWhitespace()
            guard index < bytes.count else { throw fail("unexpected end of input") }
            if bytes[index] == UInt8(ascii: ",") {
                index += 1
                continue
            }
            guard bytes[index] == UInt8(ascii: "}") else { throw fail("expected ',' or '}'") }
            index += 1
            return
        }
    }

    /// Reads an array from its `[` to its `]`; `item` reads each item.
    mutating func readItems(_ item: (inout JSONParser) throws -> Void) throws {
        try enter()
        defer { depth -= 1 }
        index += 1
        skipWhitespace()
        if index < bytes.count, bytes[index] == UInt8(ascii: "]") {
            index += 1
            return
        }
        while true {
            skipWhitespace()
            try item(&self)
            skipWhitespace()
            guard index < bytes.count else { throw fail("unexpected end of input") }
            if bytes[index] == UInt8(ascii: ",") {
                index += 1
                continue
            }
            guard bytes[index] == UInt8(ascii: "]") else { throw fail("expected ',' or ']'") }
            index += 1
            return
        }
    }

    mutating func parseNumber() throws -> JSONValue {
        let start = index
        var isInteger = true
        if bytes[index] == UInt8(ascii: "-") { index += 1 }
        guard index < bytes.count, (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(bytes[index]) else {
            throw fail("invalid number")
        }
        if bytes[index] == UInt8(ascii: "0") {
            index += 1
        } else {
            while index < bytes.count, (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(bytes[index]) { index += 1 }
        }
        if index < bytes.count, bytes[index] == UInt8(ascii: ".") {
            isInteger = false
            index += 1
            let digits = index
            while index < bytes.count, (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(bytes[index]) { index += 1 }
            guard index > digits else { throw fail("invalid number") }
        }
        if index < bytes.count, bytes[index] == UInt8(ascii: "e") || bytes[index] == UInt8(ascii: "E") {
            isInteger = false
            index += 1
            if index < bytes.count, bytes[index] == UInt8(ascii: "+") || bytes[index] == UInt8(ascii: "-") { index += 1 }
            let digits = index
            while index < bytes.count, (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(bytes[index]) { index += 1 }
            guard index > digits else { throw fail("invalid number") }
        }
        let text = String(decoding: UnsafeBufferPointer(rebasing: bytes[start..<index]), as: UTF8.self)
        if isInteger, let value = Int64(text) { return .int(value) }
        guard let value = Double(text) else { throw fail("invalid number") }
        return .double(value)
    }

    mutating func parseString() throws -> String {
        index += 1  // opening quote
        let start = index
        // Fast path: no escapes.
        while index < bytes.count {
            let byte = bytes[index]
            if byte == UInt8(ascii: "\"") {
                let slice = UnsafeBufferPointer(rebasing: bytes[start..<index])
                index += 1
                return try validatedString(slice)
            }
            if byte == UInt8(ascii: "\\") { break }
            guard byte >= 0x20 else { throw fail("control character in string") }
            index += 1
        }
        var scratch = Array(UnsafeBufferPointer(rebasing: bytes[start..<index]))
        // Room for a short string; a long one grows geometrically (reserving what is left of the
        // input, up to 64 KiB, cost an allocation that size per escaped string of a large document).
        scratch.reserveCapacity(min(bytes.count - start, index - start + 256))
        while index < bytes.count {
            let byte = bytes[index]
            switch byte {
            case UInt8(ascii: "\""):
                index += 1
                return try scratch.withUnsafeBufferPointer { try validatedString($0) }
            case UInt8(ascii: "\\"):
                index += 1
                guard index < bytes.count else { throw fail("unexpected end of input") }
                let escape = bytes[index]
                index += 1
                switch escape {
                case UInt8(ascii: "\""): scratch.append(0x22)
                case UInt8(ascii: "\\"): scratch.append(0x5C)
                case UInt8(ascii: "/"): scratch.append(0x2F)
                case UInt8(ascii: "b"): scratch.append(0x08)
                case UInt8(ascii: "f"): scratch.append(0x0C)
                case UInt8(ascii: "n"): scratch.append(0x0A)
                case UInt8(ascii: "r"): scratch.append(0x0D)
                case UInt8(ascii: "t"): scratch.append(0x09)
                case UInt8(ascii: "u"):
                    var scalar = try parseHex4()
                    if (0xD800...0xDBFF).contains(scalar) {
                        guard index + 1 < bytes.count, bytes[index] == UInt8(ascii: "\\"), bytes[index + 1] == UInt8(ascii: "u")
                        else { throw fail("unpaired surrogate") }
                        index += 2
                        let low = try parseHex4()
                        guard (0xDC00...0xDFFF).contains(low) else { throw fail("unpaired surrogate") }
                        scalar = 0x10000 + ((scalar - 0xD800) << 10) + (low - 0xDC00)
                    } else if (0xDC00...0xDFFF).contains(scalar) {
                        throw fail("unpaired surrogate")
                    }
                    guard Unicode.Scalar(scalar) != nil else { throw fail("invalid escape") }
                    Self.appendUTF8(scalar, to: &scratch)
                default: throw fail("invalid escape")
                }
            default:
                guard byte >= 0x20 else { throw fail("control character in string") }
                // The run up to the next quote, escape or control character, copied at once (a
                // JSON text inside a string is mostly such runs between escaped quotes).
                let run = index
                index += 1
                while index < bytes.count {
                    let next = bytes[index]
                    if next == UInt8(ascii: "\"") || next == UInt8(ascii: "\\") || next < 0x20 { break }
                    index += 1
                }
                scratch.append(contentsOf: UnsafeBufferPointer(rebasing: bytes[run..<index]))
            }
        }
        throw fail("unterminated string")
    }

    /// UTF-8 of a valid scalar, without building a String per escape (a string of `\u` escapes
    /// must cost no more than any other string of its length).
    static func appendUTF8(_ scalar: UInt32, to out: inout [UInt8]) {
        switch scalar {
        case ..<0x80:
            out.append(UInt8(scalar))
        case ..<0x800:
            out.append(0xC0 | UInt8(scalar >> 6))
            out.append(0x80 | UInt8(scalar & 0x3F))
        case ..<0x10000:
            out.append(0xE0 | UInt8(scalar >> 12))
            out.append(0x80 | UInt8(scalar >> 6 & 0x3F))
            out.append(0x80 | UInt8(scalar & 0x3F))
        default:
            out.append(0xF0 | UInt8(scalar >> 18))
            out.append(0x80 | UInt8(scalar >> 12 & 0x3F))
            out.append(0x80 | UInt8(scalar >> 6 & 0x3F))
            out.append(0x80 | UInt8(scalar & 0x3F))
        }
    }

    mutating func parseHex4() throws -> UInt32 {
        guard index + 4 <= bytes.count else { throw fail("unexpected end of input") }
        var value: UInt32 = 0
        for _ in 0..<4 {
            let byte = bytes[index]
            let digit: UInt8
            switch byte {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): digit = byte - UInt8(ascii: "0")
            case UInt8(ascii: "a")...UInt8(ascii: "f"): digit = byte - UInt8(ascii: "a") + 10
            case UInt8(ascii: "A")...UInt8(ascii: "F"): digit = byte - UInt8(ascii: "A") + 10
            default: throw fail("invalid \\u escape")
            }
            value = value << 4 | UInt32(digit)
            index += 1
        }
        return value
    }

    func validatedString(_ slice: UnsafeBufferPointer<UInt8>) throws -> String {
        guard let string = Self.string(validating: slice) else { throw fail("invalid UTF-8") }
        return string
    }

    /// `String(validating:as:)` with ASCII (most of JSON's strings: keys, ids, DIDs) taken
    /// without it: that initializer is generic over the encoding and looked up its generic
    /// metadata at every call, a tenth of the download bench's CPU.
    static func string(validating slice: UnsafeBufferPointer<UInt8>) -> String? {
        var any: UInt8 = 0
        for byte in slice { any |= byte }
        if any < 0x80 { return String(decoding: slice, as: UTF8.self) }
        return String(validating: slice, as: UTF8.self)
    }
}
