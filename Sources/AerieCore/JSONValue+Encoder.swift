import Foundation

/// Encodes an `Encodable` straight into a `JSONValue` tree: what `JSONEncoder.aerie` followed by
/// `JSONValue(parsing:)` gives, without the JSON text in between (every method's result went
/// through both, the largest cost of a small read like `connections.get`).
///
/// It follows `JSONEncoder`'s default strategies: `Data` as base64, `URL` as its absolute
/// string, `Date` through its own `Encodable` (seconds since 2001 as a number), non-finite
/// floating-point values refused, nil optionals left out by synthesized conformances.
/// Integral numbers come out as `.int`, as the parser reads the encoder's text.
enum JSONValueEncoder {
    static func encode<T: Encodable>(_ value: T) throws -> JSONValue {
        guard let node = try encodedNode(value, path: []) else {
            // JSONEncoder refuses a top-level value that encoded nothing (a nested one is `{}`).
            throw EncodingError.invalidValue(
                value, EncodingError.Context(codingPath: [], debugDescription: "Top-level \(T.self) did not encode any values."))
        }
        return node.resolved()
    }

    /// A value being built; containers are references so nested containers fill them in place.
    fileprivate enum Node {
        case value(JSONValue)
        case object(ObjectBox)
        case array(ArrayBox)
        /// A sub-encoder (`superEncoder`), read when the tree is resolved.
        case encoder(TreeEncoder)

        func resolved() -> JSONValue {
            switch self {
            case .value(let value): value
            case .object(let box): .object(box.fields.mapValues { $0.resolved() })
            case .array(let box): .array(box.items.map { $0.resolved() })
            case .encoder(let encoder): (encoder.node ?? .object(ObjectBox())).resolved()
            }
        }
    }

    fileprivate final class ObjectBox {
        var fields: [String: Node] = [:]
    }

    fileprivate final class ArrayBox {
        var items: [Node] = []
    }

    /// A nested value: one that encodes nothing is an empty object, as JSONEncoder writes it.
    fileprivate static func node<T: Encodable>(_ value: T, path: [any CodingKey]) throws -> Node {
        try encodedNode(value, path: path) ?? .object(ObjectBox())
    }

    /// What `value` encodes, nil when it encodes nothing.
    fileprivate static func encodedNode<T: Encodable>(_ value: T, path: [any CodingKey]) throws -> Node? {
        switch value {
        case let json as JSONValue: return .value(json)
        case let string as String: return .value(.string(string))
        case let bool as Bool: return .value(.bool(bool))
        case let int as Int: return .value(.int(Int64(int)))
        case let int as Int64: return .value(.int(int))
        case let double as Double: return .value(try number(double, path: path))
        case let data as Data: return .value(.string(data.base64EncodedString()))
        case let url as URL: return .value(.string(url.absoluteString))
        case let decimal as Decimal: return .value(try JSONValue(parsing: decimal.description))
        default:
            let encoder = TreeEncoder(codingPath: path)
            try value.encode(to: encoder)
            return encoder.node
        }
    }

    fileprivate static func number(_ double: Double, path: [any CodingKey]) throws -> JSONValue {
        guard double.isFinite else {
            throw EncodingError.invalidValue(
                double, EncodingError.Context(codingPath: path, debugDescription: "Unable to encode \(double) directly in JSON."))
        }
        if double == double.rounded(), abs(double) < 1e15 { return .int(Int64(double)) }
        return .double(double)
    }

    fileprivate static func integer<I: BinaryInteger>(_ value: I) -> JSONValue {
        if let exact = Int64(exactly: value) { return .int(exact) }
        return .double(Double(value))
    }

    fileprivate final class TreeEncoder: Encoder {
        let codingPath: [any CodingKey]
        var userInfo: [CodingUserInfoKey: Any] { [:] }
        var node: Node?

        init(codingPath: [any CodingKey]) { self.codingPath = codingPath }

        func container<Key: CodingKey>(keyedBy type: Key.Type) -> KeyedEncodingContainer<Key> {
            let box: ObjectBox
            if case .object(let existing)? = node {
                box = existing
            } else {
                box = ObjectBox()
                node = .object(box)
            }
            return KeyedEncodingContainer(KeyedContainer<Key>(box: box, codingPath: codingPath))
        }

        func unkeyedContainer() -> any UnkeyedEncodingContainer {
            let box: ArrayBox
            if case .array(let existing)? = node {
                box = existing
            } else {
                box = ArrayBox()
                node = .array(box)
            }
            return UnkeyedContainer(box: box, codingPath: codingPath)
        }

        func singleValueContainer() -> any SingleValueEncodingContainer { SingleContainer(encoder: self) }
    }

    fileprivate struct KeyedContainer<Key: CodingKey>: KeyedEncodingContainerProtocol {
        let box: ObjectBox
        let codingPath: [any CodingKey]

        mutating func encodeNil(forKey key: Key) throws { box.fields[key.stringValue] = .value(.null) }
        mutating func encode(_ value: Bool, forKey key: Key) throws { box.fields[key.stringValue] = .value(.bool(value)) }
        mutating func encode(_ value: String, forKey key: Key) throws { box.fields[key.stringValue] = .value(.string(value)) }
        mutating func encode(_ value: Double, forKey key: Key) throws {
            box.fields[key.stringValue] = .value(try number(value, path: codingPath + [key]))
        }
        mutating func encode(_ value: Float, forKey key: Key) throws {
            box.fields[key.stringValue] = try node(value, path: codingPath + [key])
        }
        mutating func encode(_ value: Int, forKey key: Key) throws { box.fields[key.stringValue] = .value(.int(Int64(value))) }
        mutating func encode(_ value: Int8, forKey key: Key) throws { box.fields[key.stringValue] = .value(integer(value)) }
        mutating func encode(_ value: Int16, forKey key: Key) throws { box.fields[key.stringValue] = .value(integer(value)) }
        mutating func encode(_ value: Int32, forKey key: Key) throws { box.fields[key.stringValue] = .value(integer(value)) }
        mutating func encode(_ value: Int64, forKey key: Key) throws { box.fields[key.stringValue] = .value(.int(value)) }
        mutating func encode(_ value: UInt, forKey key: Key) throws { box.fields[key.stringValue] = .value(integer(value)) }
        mutating func encode(_ value: UInt8, forKey key: Key) throws { box.fields[key.stringValue] = .value(integer(value)) }
        mutating func encode(_ value: UInt16, forKey key: Key) throws { box.fields[key.stringValue] = .value(integer(value)) }
        mutating func encode(_ value: UInt32, forKey key: Key) throws { box.fields[key.stringValue] = .value(integer(value)) }
        mutating func encode(_ value: UInt64, forKey key: Key) throws { box.fields[key.stringValue] = .value(integer(value)) }
        mutating func encode<T: Encodable>(_ value: T, forKey key: Key) throws {
            box.fields[key.stringValue] = try node(value, path: codingPath + [key])
        }

        mutating func nestedContainer<NestedKey: CodingKey>(
            keyedBy keyType: NestedKey.Type, forKey key: Key
        ) -> KeyedEncodingContainer<NestedKey> {
            let nested = ObjectBox()
            box.fields[key.stringValue] = .object(nested)
            return KeyedEncodingContainer(KeyedContainer<NestedKey>(box: nested, codingPath: codingPath + [key]))
        }

        mutating func nestedUnkeyedContainer(forKey key: Key) -> any UnkeyedEncodingContainer {
            let nested = ArrayBox()
            box.fields[key.stringValue] = .array(nested)
            return UnkeyedContainer(box: nested, codingPath: codingPath + [key])
        }

        mutating func superEncoder() -> any Encoder { superEncoder(named: "super") }
        mutating func superEncoder(forKey key: Key) -> any Encoder { superEncoder(named: key.stringValue, key: key) }

        private func superEncoder(named name: String, key: (any CodingKey)? = nil) -> any Encoder {
            let encoder = TreeEncoder(codingPath: codingPath + [key ?? CodingPathKey(stringValue: name)])
            box.fields[name] = .encoder(encoder)
            return encoder
        }
    }

    fileprivate struct UnkeyedContainer: UnkeyedEncodingContainer {
        let box: ArrayBox
        let codingPath: [any CodingKey]
        var count: Int { box.items.count }

        private var nextKey: any CodingKey { CodingPathKey(intValue: box.items.count) }

        mutating func encodeNil() throws { box.items.append(.value(.null)) }
        mutating func encode(_ value: Bool) throws { box.items.append(.value(.bool(value))) }
        mutating func encode(_ value: String) throws { box.items.append(.value(.string(value))) }
        mutating func encode(_ value: Int) throws { box.items.append(.value(.int(Int64(value)))) }
        mutating func encode(_ value: Int64) throws { box.items.append(.value(.int(value))) }
        mutating func encode(_ value: Int8) throws { box.items.append(.value(integer(value))) }
        mutating func encode(_ value: Int16) throws { box.items.append(.value(integer(value))) }
        mutating func encode(_ value: Int32) throws { box.items.append(.value(integer(value))) }
        mutating func encode(_ value: UInt) throws { box.items.append(.value(integer(value))) }
        mutating func encode(_ value: UInt8) throws { box.items.append(.value(integer(value))) }
        mutating func encode(_ value: UInt16) throws { box.items.append(.value(integer(value))) }
        mutating func encode(_ value: UInt32) throws { box.items.append(.value(integer(value))) }
        mutating func encode(_ value: UInt64) throws { box.items.append(.value(integer(value))) }
        mutating func encode(_ value: Float) throws { box.items.append(try node(value, path: codingPath + [nextKey])) }
        mutating func encode(_ value: Double) throws { box.items.append(.value(try number(value, path: codingPath + [nextKey]))) }
        mutating func encode<T: Encodable>(_ value: T) throws {
            box.items.append(try node(value, path: codingPath + [nextKey]))
        }

        mutating func nestedContainer<NestedKey: CodingKey>(keyedBy keyType: NestedKey.Type) -> KeyedEncodingContainer<NestedKey> {
            let path = codingPath + [nextKey]
            let nested = ObjectBox()
            box.items.append(.object(nested))
            return KeyedEncodingContainer(KeyedContainer<NestedKey>(box: nested, codingPath: path))
        }

        mutating func nestedUnkeyedContainer() -> any UnkeyedEncodingContainer {
            let path = codingPath + [nextKey]
            let nested = ArrayBox()
            box.items.append(.array(nested))
            return UnkeyedContainer(box: nested, codingPath: path)
        }

        mutating func superEncoder() -> any Encoder {
            let encoder = TreeEncoder(codingPath: codingPath + [nextKey])
            box.items.append(.encoder(encoder))
            return encoder
        }
    }

    fileprivate struct SingleContainer: SingleValueEncodingContainer {
        let encoder: TreeEncoder
        var codingPath: [any CodingKey] { encoder.codingPath }

        mutating func encodeNil() throws { encoder.node = .value(.null) }
        mutating func encode(_ value: Bool) throws { encoder.node = .value(.bool(value)) }
        mutating func encode(_ value: String) throws { encoder.node = .value(.string(value)) }
        mutating func encode(_ value: Int) throws { encoder.node = .value(.int(Int64(value))) }
        mutating func encode(_ value: Int64) throws { encoder.node = .value(.int(value)) }
        mutating func encode(_ value: Int8) throws { encoder.node = .value(integer(value)) }
        mutating func encode(_ value: Int16) throws { encoder.node = .value(integer(value)) }
        mutating func encode(_ value: Int32) throws { encoder.node = .value(integer(value)) }
        mutating func encode(_ value: UInt) throws { encoder.node = .value(integer(value)) }
        mutating func encode(_ value: UInt8) throws { encoder.node = .value(integer(value)) }
        mutating func encode(_ value: UInt16) throws { encoder.node = .value(integer(value)) }
        mutating func encode(_ value: UInt32) throws { encoder.node = .value(integer(value)) }
        mutating func encode(_ value: UInt64) throws { encoder.node = .value(integer(value)) }
        mutating func encode(_ value: Double) throws { encoder.node = .value(try number(value, path: codingPath)) }
        mutating func encode(_ value: Float) throws {
            // JSONEncoder writes a Float's shortest text, which the parser reads back as a Double.
            encoder.node = .value(try number(Double(String(describing: value)) ?? Double(value), path: codingPath))
        }
        mutating func encode<T: Encodable>(_ value: T) throws { encoder.node = try node(value, path: codingPath) }
    }
}

/// A key made at run time: one the JSONValue coders put in a coding path, an array index
/// (`Index 3`, as Foundation's coders name it) or `super`; or a member's name
/// (`ConnectionView`'s `Encodable` form).
struct CodingPathKey: CodingKey {
    var stringValue: String
    var intValue: Int?
    init(stringValue: String) { self.stringValue = stringValue }
    init(intValue: Int) {
        self.stringValue = "Index \(intValue)"
        self.intValue = intValue
    }
}
