/// Base64 (RFC 4648 §4) and base64url (§5) with or without padding.
///
/// Decoding is tolerant, as DIDComm peers differ: padding is optional and both alphabets'
/// characters 62/63 (`+ /` and `- _`) are accepted. Anything else is an error, so callers see
/// `invalid_encoding` rather than silently dropped characters.
public enum Base64 {
    private static let standardAlphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/".utf8)
    private static let urlAlphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_".utf8)

    private static let decodeTable: [UInt8] = {
        var table = [UInt8](repeating: 0xFF, count: 256)
        for (i, c) in standardAlphabet.enumerated() { table[Int(c)] = UInt8(i) }
        table[Int(UInt8(ascii: "-"))] = 62
        table[Int(UInt8(ascii: "_"))] = 63
        return table
    }()

    /// Standard alphabet; padded unless `padding` is false.
    public static func encode<Bytes: Collection<UInt8>>(_ bytes: Bytes, padding: Bool = true) -> String {
        encode(bytes, alphabet: standardAlphabet, padding: padding)
    }

    /// URL-safe alphabet; unpadded unless `padding` is true.
    public static func encodeURL<Bytes: Collection<UInt8>>(_ bytes: Bytes, padding: Bool = false) -> String {
        encode(bytes, alphabet: urlAlphabet, padding: padding)
    }

    /// Decodes either alphabet, padded or not.
    public static func decode(_ string: String) throws -> [UInt8] {
        var string = string
        return try string.withUTF8 { try decode(utf8: UnsafeRawBufferPointer($0)) }
    }

    /// Decodes ASCII bytes holding base64 text (either alphabet, padding optional).
    public static func decode(utf8 text: UnsafeRawBufferPointer) throws -> [UInt8] {
        var end = text.count
        var pads = 0
        while end > 0, text[end - 1] == UInt8(ascii: "="), pads < 2 {
            end -= 1
            pads += 1
        }
        let remainder = end % 4
        if remainder == 1 || (pads > 0 && (end + pads) % 4 != 0) {
            throw CryptoError(.invalidEncoding, "invalid base64 length")
        }
        let outCount = end / 4 * 3 + (remainder == 0 ? 0 : remainder - 1)
        var failed = false
        let out = [UInt8](unsafeUninitializedCapacity: outCount) { buffer, initialized in
            decodeTable.withUnsafeBufferPointer { table in
                var o = 0
                var i = 0
                var bad: UInt8 = 0
                while i + 4 <= end {
                    let a = table[Int(text[i])]
                    let b = table[Int(text[i + 1])]
                    let c = table[Int(text[i + 2])]
                    let d = table[Int(text[i + 3])]
                    bad |= a | b | c | d
                    buffer[o] = a << 2 | b >> 4
                    buffer[o + 1] = b << 4 | c >> 2
                    buffer[o + 2] = c << 6 | d
                    o += 3
                    i += 4
                }
                if remainder >= 2 {
                    let a = table[Int(text[i])]
                    let b = table[Int(text[i + 1])]
                    bad |= a | b
                    buffer[o] = a << 2 | b >> 4
                    o += 1
                    if remainder == 3 {
                        let c = table[Int(text[i + 2])]
                        bad |= c
                        buffer[o] = b << 4 | c >> 2
                        o += 1
                    }
                }
                // Invalid characters map to 0xFF, the only table value with the top bit set.
                failed = bad & 0x80 != 0
                initialized = o
            }
        }
        if failed { throw CryptoError(.invalidEncoding, "invalid base64 character") }
        return out
    }

    private static func encode<Bytes: Collection<UInt8>>(_ bytes: Bytes, alphabet: [UInt8], padding: Bool) -> String {
        let n = bytes.count
        let full = n / 3
        let rest = n % 3
        let outCount = full * 4 + (rest == 0 ? 0 : (padding ? 4 : rest + 1))
        if outCount == 0 { return "" }
        let encodeInto: (UnsafeBufferPointer<UInt8>) -> String = { input in
            String(unsafeUninitializedCapacity: outCount) { out in
                alphabet.withUnsafeBufferPointer { abc in
                    var o = 0
                    var i = 0
                    while i + 3 <= n {
                        let v = UInt32(input[i]) << 16 | UInt32(input[i + 1]) << 8 | UInt32(input[i + 2])
                        out[o] = abc[Int(v >> 18 & 63)]
                        out[o + 1] = abc[Int(v >> 12 & 63)]
                        out[o + 2] = abc[Int(v >> 6 & 63)]
                        out[o + 3] = abc[Int(v & 63)]
                        o += 4
                        i += 3
                    }
                    if rest > 0 {
                        let v = UInt32(input[i]) << 16 | (rest == 2 ? UInt32(input[i + 1]) << 8 : 0)
                        out[o] = abc[Int(v >> 18 & 63)]
                        out[o + 1] = abc[Int(v >> 12 & 63)]
                        o += 2
                        if rest == 2 {
                            out[o] = abc[Int(v >> 6 & 63)]
                            o += 1
                        }
                        if padding {
                            while o < outCount {
                                out[o] = UInt8(ascii: "=")
                                o += 1
                            }
                        }
                    }
                    return o
                }
            }
        }
        if let result = bytes.withContiguousStorageIfAvailable(encodeInto) { return result }
        return Array(bytes).withUnsafeBufferPointer(encodeInto)
    }
}
