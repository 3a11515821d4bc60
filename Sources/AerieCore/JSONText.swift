import Foundation

/// A method's result already written as compact JSON text (`JSONText(writing:)`), sent as it is:
/// a large result (a mailbox download of hundreds of messages) skips building a `JSONValue` tree
/// of dictionaries only to sort and serialize it at once. Everything else about the result is as
/// for a `JSONValue`: a method may answer either (`MethodRouter.register`).
///
/// The text is one JSON value, valid by construction: `JSONWriter` writes strings escaped (a
/// Swift `String` is valid UTF-8), objects and arrays through nested closures that balance them, and it
/// checks that each value position is written exactly once.
public struct JSONText: Sendable, Hashable {
    public let bytes: [UInt8]

    /// The text `body` writes; `reservingCapacity` saves the growth of a large text.
    public init(reservingCapacity capacity: Int = 0, writing body: (inout JSONWriter) throws -> Void) rethrows {
        var writer = JSONWriter(bytes: [])
        writer.bytes.reserveCapacity(capacity)
        try body(&writer)
        precondition(writer.written, "JSONText(writing:) wrote no value")
        bytes = writer.bytes
    }

    /// The text parsed: for a reader that wants the tree (tests, rare callers).
    public var value: JSONValue {
        get throws { try JSONValue(parsing: bytes) }
    }
}

extension JSONText: Encodable {
    /// Encodes the value the text holds (the RPC layer sends the text itself, not through this).
    public func encode(to encoder: any Encoder) throws {
        try value.encode(to: encoder)
    }
}

/// Writes one JSON value into compact text. Member order is the caller's: write members in
/// sorted order, and without repeating a key, for the text `JSONValue.serialized()` would give.
public struct JSONWriter {
    fileprivate var bytes: [UInt8]
    fileprivate var written = false

    fileprivate init(bytes: [UInt8]) {
        self.bytes = bytes
    }

    private mutating func claim() {
        precondition(!written, "JSONWriter: a value position written twice")
        written = true
    }

    public mutating func null() {
        claim()
        bytes.append(contentsOf: "null".utf8)
    }

    public mutating func string(_ value: String) {
        claim()
        JSONValue.writeString(value, into: &bytes)
    }

    /// A UUID as its canonical lowercase text (`UUID.lowercasedString`), with no string made.
    fileprivate static func append(_ uuid: UUID, to bytes: inout [UInt8]) {
        withUnsafeTemporaryAllocation(of: UInt8.self, capacity: UUID.textByteCount + 2) { quoted in
            quoted[0] = UInt8(ascii: "\"")
            uuid.writeLowercased(into: quoted.baseAddress! + 1)
            quoted[UUID.textByteCount + 1] = UInt8(ascii: "\"")
            bytes.append(contentsOf: quoted)
        }
    }

    public mutating func value(_ value: JSONValue) {
        claim()
        value.write(into: &bytes)
    }

    /// A value already written, copied as it is.
    public mutating func text(_ text: JSONText) {
        claim()
        bytes.append(contentsOf: text.bytes)
    }

    public mutating func object(_ body: (inout JSONObjectWriter) throws -> Void) rethrows {
        claim()
        bytes.append(UInt8(ascii: "{"))
        var members = JSONObjectWriter(bytes: Self.take(&bytes))
        defer { bytes = Self.take(&members.bytes) }
        try body(&members)
        members.bytes.append(UInt8(ascii: "}"))
    }

    public mutating func array(_ body: (inout JSONArrayWriter) throws -> Void) rethrows {
        claim()
        bytes.append(UInt8(ascii: "["))
        var items = JSONArrayWriter(bytes: Self.take(&bytes))
        defer { bytes = Self.take(&items.bytes) }
        try body(&items)
        items.bytes.append(UInt8(ascii: "]"))
    }

    /// Moves the buffer out (no copy: the nested writer owns it alone, then hands it back).
    fileprivate static func take(_ bytes: inout [UInt8]) -> [UInt8] {
        var moved: [UInt8] = []
        swap(&moved, &bytes)
        return moved
    }

    /// Runs one value position of a container.
    fileprivate static func element(_ bytes: inout [UInt8], _ body: (inout JSONWriter) throws -> Void) rethrows {
        var writer = JSONWriter(bytes: take(&bytes))
        defer { bytes = take(&writer.bytes) }
        try body(&writer)
        precondition(writer.written, "JSONWriter: a member or item with no value")
    }
}

/// The members of an object being written (`JSONWriter.object`).
public struct JSONObjectWriter {
    fileprivate var bytes: [UInt8]
    private var count = 0

    fileprivate init(bytes: [UInt8]) {
        self.bytes = bytes
    }

    /// Member `key`, its value written by `body`.
    public mutating func member(_ key: String, _ body: (inout JSONWriter) throws -> Void) rethrows {
        if count > 0 { bytes.append(UInt8(ascii: ",")) }
        count += 1
        JSONValue.writeString(key, into: &bytes)
        bytes.append(UInt8(ascii: ":"))
        try JSONWriter.element(&bytes, body)
    }

    /// Member `key` (a key with nothing to escape), its value written by `body`.
    public mutating func member(_ key: JSONKey, _ body: (inout JSONWriter) throws -> Void) rethrows {
        begin(key)
        try JSONWriter.element(&bytes, body)
    }

    /// Member `key` with a string value, or null for nil, written in place (no nested writer).
    public mutating func member(_ key: JSONKey, string value: String?) {
        begin(key)
        if let value { JSONValue.writeString(value, into: &bytes) } else { bytes.append(contentsOf: "null".utf8) }
    }

    /// Member `key` with a UUID's canonical lowercase text, written in place.
    public mutating func member(_ key: JSONKey, string value: UUID) {
        begin(key)
        JSONWriter.append(value, to: &bytes)
    }

    private mutating func begin(_ key: JSONKey) {
        if count > 0 { bytes.append(UInt8(ascii: ",")) }
        count += 1
        key.write(into: &bytes)
    }

    public mutating func member(_ key: String, string value: String) {
        member(key) { $0.string(value) }
    }

    public mutating func member(_ key: String, _ value: JSONValue) {
        member(key) { $0.value(value) }
    }
}

/// A member key that needs no escaping, written from its static bytes: a download page writes
/// nine members per message, and escaping each key anew was a measurable part of the page. A
/// static string, not an array: an array shared by every thread writing pages would have its
/// reference count bounced between cores at each use.
public struct JSONKey: Sendable {
    fileprivate let key: StaticString

    /// `key` must be printable ASCII other than a quote or a backslash (a programming error).
    public init(_ key: StaticString) {
        precondition(key.hasPointerRepresentation, "JSONKey: a key must be a string literal")
        key.withUTF8Buffer { bytes in
            precondition(
                bytes.allSatisfy { $0 >= 0x20 && $0 < 0x7F && $0 != UInt8(ascii: "\"") && $0 != UInt8(ascii: "\\") },
                "JSONKey: \(key) needs escaping")
        }
        self.key = key
    }

    fileprivate func write(into bytes: inout [UInt8]) {
        bytes.append(UInt8(ascii: "\""))
        key.withUTF8Buffer { bytes.append(contentsOf: $0) }
        bytes.append(UInt8(ascii: "\""))
        bytes.append(UInt8(ascii: ":"))
    }
}

/// The items of an array being written (`JSONWriter.array`).
public struct JSONArrayWriter {
    fileprivate var bytes: [UInt8]
    private var count = 0

    fileprivate init(bytes: [UInt8]) {
        self.bytes = bytes
    }

    public mutating func item(_ body: (inout JSONWriter) throws -> Void) rethrows {
        if count > 0 { bytes.append(UInt8(ascii: ",")) }
        count += 1
        try JSONWriter.element(&bytes, body)
    }
}
