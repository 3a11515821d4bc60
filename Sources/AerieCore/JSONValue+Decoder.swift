import Foundation

/// Decodes a `Decodable` straight from a `JSONValue` tree: what `JSONDecoder` gives for the
/// value's serialized text (every method's params went through both), with the same
/// `DecodingError`s, so `fieldPath` and `reason` name the same field and fault.
///
/// It follows `JSONDecoder`'s default strategies: `Data` from base64, `URL` from a string,
/// `Date` through its own `Decodable`; an integer type takes an integral number within its range,
/// a floating-point type any number.
enum JSONValueDecoder {
    static func decode<T: Decodable>(_ type: T.Type, from value: JSONValue) throws -> T {
        try TreeDecoder(value: value, codingPath: []).decodeValue(T.self)
    }

    fileprivate struct TreeDecoder: Decoder {
        let value: JSONValue
        let codingPath: [any CodingKey]
        var userInfo: [CodingUserInfoKey: Any] { [:] }

        func container<Key: CodingKey>(keyedBy type: Key.Type) throws -> KeyedDecodingContainer<Key> {
            guard case .object(let fields) = value else {
                if case .null = value { throw nullContainer([String: Any].self, keyed: true) }
                throw mismatch([String: Any].self, value, codingPath)
            }
            return KeyedDecodingContainer(KeyedContainer<Key>(fields: fields, codingPath: codingPath))
        }

        func unkeyedContainer() throws -> any UnkeyedDecodingContainer {
            guard case .array(let items) = value else {
                if case .null = value { throw nullContainer([Any].self, keyed: false) }
                throw mismatch([Any].self, value, codingPath)
            }
            return UnkeyedContainer(items: items, codingPath: codingPath)
        }

        func singleValueContainer() throws -> any SingleValueDecodingContainer { SingleContainer(decoder: self) }

        func decodeValue<T: Decodable>(_ type: T.Type) throws -> T {
            switch type {
            case is JSONValue.Type: return value as! T
            case is String.Type: return try string() as! T
            case is Data.Type:
                guard let data = Data(base64Encoded: try string()) else {
                    throw DecodingError.dataCorrupted(
                        DecodingError.Context(codingPath: codingPath, debugDescription: "Encountered Data is not valid Base64."))
                }
                return data as! T
            case is URL.Type:
                guard let url = URL(string: try string()) else {
                    throw DecodingError.dataCorrupted(DecodingError.Context(codingPath: codingPath, debugDescription: "Invalid URL string."))
                }
                return url as! T
            default:
                return try T(from: self)
            }
        }

        func string() throws -> String {
            guard case .string(let string) = value else { throw fault(String.self) }
            return string
        }

        func bool() throws -> Bool {
            guard case .bool(let bool) = value else { throw fault(Bool.self) }
            return bool
        }

        func double<F: BinaryFloatingPoint>(_ type: F.Type) throws -> F {
            let number: F
            switch value {
            case .int(let int): number = F(int)
            case .double(let double): number = F(double)
            default: throw fault(F.self)
            }
            guard number.isFinite else {
                throw DecodingError.dataCorrupted(
                    DecodingError.Context(codingPath: codingPath, debugDescription: "Parsed JSON number <\(value.jsonString)> does not fit in \(F.self)."))
            }
            return number
        }

        func nullContainer(_ type: Any.Type, keyed: Bool) -> DecodingError {
            DecodingError.valueNotFound(
                type,
                DecodingError.Context(
                    codingPath: codingPath,
                    debugDescription: "Cannot get \(keyed ? "keyed" : "unkeyed") decoding container -- found null value instead"))
        }

        func integer<I: FixedWidthInteger>(_ type: I.Type) throws -> I {
            let number: I?
            switch value {
            case .int(let int): number = I(exactly: int)
            case .double(let double): number = double.isFinite ? I(exactly: double) : nil
            default: throw fault(I.self)
            }
            guard let number else {
                throw DecodingError.dataCorrupted(
                    DecodingError.Context(codingPath: codingPath, debugDescription: "Parsed JSON number <\(value.jsonString)> does not fit in \(I.self)."))
            }
            return number
        }

        /// `valueNotFound` for null, `typeMismatch` for anything else, as JSONDecoder reports them.
        func fault(_ type: Any.Type) -> DecodingError {
            if case .null = value {
                return DecodingError.valueNotFound(
                    type, DecodingError.Context(codingPath: codingPath, debugDescription: "Cannot get value of type \(type) -- found null value instead"))
            }
            return mismatch(type, value, codingPath)
        }
    }

    fileprivate static func mismatch(_ type: Any.Type, _ value: JSONValue, _ path: [any CodingKey]) -> DecodingError {
        DecodingError.typeMismatch(
            type, DecodingError.Context(codingPath: path, debugDescription: "Expected to decode \(type) but found \(describe(value)) instead."))
    }

    private static func describe(_ value: JSONValue) -> String {
        switch value {
        case .null: "null"
        case .bool: "bool"
        case .int, .double: "number"
        case .string: "a string"
        case .array: "an array"
        case .object: "a dictionary"
        }
    }

    fileprivate struct KeyedContainer<Key: CodingKey>: KeyedDecodingContainerProtocol {
        let fields: [String: JSONValue]
        let codingPath: [any CodingKey]

        var allKeys: [Key] { fields.keys.compactMap { Key(stringValue: $0) } }

        func contains(_ key: Key) -> Bool { fields[key.stringValue] != nil }

        private func decoder(for key: Key) throws -> TreeDecoder {
            guard let value = fields[key.stringValue] else {
                throw DecodingError.keyNotFound(
                    key, DecodingError.Context(codingPath: codingPath, debugDescription: "No value associated with key \(key)."))
            }
            return TreeDecoder(value: value, codingPath: codingPath + [key])
        }

        func decodeNil(forKey key: Key) throws -> Bool {
            if case .null = try decoder(for: key).value { return true }
            return false
        }

        func decode(_ type: Bool.Type, forKey key: Key) throws -> Bool { try decoder(for: key).bool() }
        func decode(_ type: String.Type, forKey key: Key) throws -> String { try decoder(for: key).string() }
        func decode(_ type: Double.Type, forKey key: Key) throws -> Double { try decoder(for: key).double(Double.self) }
        func decode(_ type: Float.Type, forKey key: Key) throws -> Float { try decoder(for: key).double(Float.self) }
        func decode(_ type: Int.Type, forKey key: Key) throws -> Int { try decoder(for: key).integer(Int.self) }
        func decode(_ type: Int8.Type, forKey key: Key) throws -> Int8 { try decoder(for: key).integer(Int8.self) }
        func decode(_ type: Int16.Type, forKey key: Key) throws -> Int16 { try decoder(for: key).integer(Int16.self) }
        func decode(_ type: Int32.Type, forKey key: Key) throws -> Int32 { try decoder(for: key).integer(Int32.self) }
        func decode(_ type: Int64.Type, forKey key: Key) throws -> Int64 { try decoder(for: key).integer(Int64.self) }
        func decode(_ type: UInt.Type, forKey key: Key) throws -> UInt { try decoder(for: key).integer(UInt.self) }
        func decode(_ type: UInt8.Type, forKey key: Key) throws -> UInt8 { try decoder(for: key).integer(UInt8.self) }
        func decode(_ type: UInt16.Type, forKey key: Key) throws -> UInt16 { try decoder(for: key).integer(UInt16.self) }
        func decode(_ type: UInt32.Type, forKey key: Key) throws -> UInt32 { try decoder(for: key).integer(UInt32.self) }
        func decode(_ type: UInt64.Type, forKey key: Key) throws -> UInt64 { try decoder(for: key).integer(UInt64.self) }
        func decode<T: Decodable>(_ type: T.Type, forKey key: Key) throws -> T { try decoder(for: key).decodeValue(T.self) }

        func nestedContainer<NestedKey: CodingKey>(keyedBy type: NestedKey.Type, forKey key: Key) throws -> KeyedDecodingContainer<NestedKey> {
            try decoder(for: key).container(keyedBy: type)
        }

        func nestedUnkeyedContainer(forKey key: Key) throws -> any UnkeyedDecodingContainer {
            try decoder(for: key).unkeyedContainer()
        }

        func superDecoder() throws -> any Decoder {
            TreeDecoder(value: fields["super"] ?? .null, codingPath: codingPath + [CodingPathKey(stringValue: "super")])
        }

        func superDecoder(forKey key: Key) throws -> any Decoder {
            TreeDecoder(value: fields[key.stringValue] ?? .null, codingPath: codingPath + [key])
        }
    }

    fileprivate struct UnkeyedContainer: UnkeyedDecodingContainer {
        let items: [JSONValue]
        let codingPath: [any CodingKey]
        var currentIndex = 0
        var count: Int? { items.count }
        var isAtEnd: Bool { currentIndex >= items.count }

        private mutating func next(_ type: Any.Type) throws -> TreeDecoder {
            let path = codingPath + [CodingPathKey(intValue: currentIndex)]
            guard !isAtEnd else {
                throw DecodingError.valueNotFound(
                    type, DecodingError.Context(codingPath: path, debugDescription: "Unkeyed container is at end."))
            }
            defer { currentIndex += 1 }
            return TreeDecoder(value: items[currentIndex], codingPath: path)
        }

        mutating func decodeNil() throws -> Bool {
            guard !isAtEnd else { _ = try next(Any?.self); return false }
            if case .null = items[currentIndex] {
                currentIndex += 1
                return true
            }
            return false
        }

        mutating func decode(_ type: Bool.Type) throws -> Bool { try next(type).bool() }
        mutating func decode(_ type: String.Type) throws -> String { try next(type).string() }
        mutating func decode(_ type: Double.Type) throws -> Double { try next(type).double(Double.self) }
        mutating func decode(_ type: Float.Type) throws -> Float { try next(type).double(Float.self) }
        mutating func decode(_ type: Int.Type) throws -> Int { try next(type).integer(Int.self) }
        mutating func decode(_ type: Int8.Type) throws -> Int8 { try next(type).integer(Int8.self) }
        mutating func decode(_ type: Int16.Type) throws -> Int16 { try next(type).integer(Int16.self) }
        mutating func decode(_ type: Int32.Type) throws -> Int32 { try next(type).integer(Int32.self) }
        mutating func decode(_ type: Int64.Type) throws -> Int64 { try next(type).integer(Int64.self) }
        mutating func decode(_ type: UInt.Type) throws -> UInt { try next(type).integer(UInt.self) }
        mutating func decode(_ type: UInt8.Type) throws -> UInt8 { try next(type).integer(UInt8.self) }
        mutating func decode(_ type: UInt16.Type) throws -> UInt16 { try next(type).integer(UInt16.self) }
        mutating func decode(_ type: UInt32.Type) throws -> UInt32 { try next(type).integer(UInt32.self) }
        mutating func decode(_ type: UInt64.Type) throws -> UInt64 { try next(type).integer(UInt64.self) }
        mutating func decode<T: Decodable>(_ type: T.Type) throws -> T { try next(type).decodeValue(T.self) }

        mutating func nestedContainer<NestedKey: CodingKey>(keyedBy type: NestedKey.Type) throws -> KeyedDecodingContainer<NestedKey> {
            try next([String: Any].self).container(keyedBy: type)
        }

        mutating func nestedUnkeyedContainer() throws -> any UnkeyedDecodingContainer {
            try next([Any].self).unkeyedContainer()
        }

        mutating func superDecoder() throws -> any Decoder { try next(Any.self) }
    }

    fileprivate struct SingleContainer: SingleValueDecodingContainer {
        let decoder: TreeDecoder
        var codingPath: [any CodingKey] { decoder.codingPath }

        func decodeNil() -> Bool {
            if case .null = decoder.value { return true }
            return false
        }

        func decode(_ type: Bool.Type) throws -> Bool { try decoder.bool() }
        func decode(_ type: String.Type) throws -> String { try decoder.string() }
        func decode(_ type: Double.Type) throws -> Double { try decoder.double(Double.self) }
        func decode(_ type: Float.Type) throws -> Float { try decoder.double(Float.self) }
        func decode(_ type: Int.Type) throws -> Int { try decoder.integer(Int.self) }
        func decode(_ type: Int8.Type) throws -> Int8 { try decoder.integer(Int8.self) }
        func decode(_ type: Int16.Type) throws -> Int16 { try decoder.integer(Int16.self) }
        func decode(_ type: Int32.Type) throws -> Int32 { try decoder.integer(Int32.self) }
        func decode(_ type: Int64.Type) throws -> Int64 { try decoder.integer(Int64.self) }
        func decode(_ type: UInt.Type) throws -> UInt { try decoder.integer(UInt.self) }
        func decode(_ type: UInt8.Type) throws -> UInt8 { try decoder.integer(UInt8.self) }
        func decode(_ type: UInt16.Type) throws -> UInt16 { try decoder.integer(UInt16.self) }
        func decode(_ type: UInt32.Type) throws -> UInt32 { try decoder.integer(UInt32.self) }
        func decode(_ type: UInt64.Type) throws -> UInt64 { try decoder.integer(UInt64.self) }
        func decode<T: Decodable>(_ type: T.Type) throws -> T { try decoder.decodeValue(T.self) }
    }
}
