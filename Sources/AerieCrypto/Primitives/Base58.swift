/// Base58 with the Bitcoin alphabet: DIDComm v1 verkeys, unqualified DIDs, did:key (`z…`).
///
/// The conversion is quadratic in the input length, so `decode` refuses text longer than
/// `maxDecodeLength` before any work: everything Aerie decodes is a key or a DID of at most
/// 50 characters, and a 300,000-character hostile `kid` must cost nothing.
public enum Base58 {
    /// Longest text `decode` accepts (a 34-byte did:key multikey is 48 characters).
    public static let maxDecodeLength = 128
    /// Longest base58 of a 32-byte Ed25519 verkey.
    public static let maxVerkeyLength = 44

    private static let alphabet = Array("123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz".utf8)
    private static let decodeTable: [Int8] = {
        var table = [Int8](repeating: -1, count: 256)
        for (i, c) in alphabet.enumerated() { table[Int(c)] = Int8(i) }
        return table
    }()

    public static func encode<Bytes: Collection<UInt8>>(_ bytes: Bytes) -> String {
        let input = Array(bytes)
        let zeros = input.prefix { $0 == 0 }.count
        // log(256)/log(58) ≈ 1.366
        let size = (input.count - zeros) * 138 / 100 + 1
        var digits = [UInt8](repeating: 0, count: size)
        var length = 0
        for byte in input[zeros...] {
            var carry = Int(byte)
            var i = 0
            var k = size - 1
            while carry != 0 || i < length {
                carry += 256 * Int(digits[k])
                digits[k] = UInt8(carry % 58)
                carry /= 58
                i += 1
                k -= 1
            }
            length = i
        }
        let start = size - length
        var out = [UInt8](repeating: alphabet[0], count: zeros)
        out.reserveCapacity(zeros + length)
        for d in digits[start...] { out.append(alphabet[Int(d)]) }
        return String(decoding: out, as: UTF8.self)
    }

    public static func decode(_ string: String) throws -> [UInt8] {
        try decode(string, maxLength: maxDecodeLength)
    }

    /// `decode` with another bound, for the few longer values that are base58 (a did:peer:4
    /// document); the cost grows with the square of `maxLength`.
    public static func decode(_ string: String, maxLength: Int) throws -> [UInt8] {
        guard string.utf8.count <= maxLength else {
            throw CryptoError(
                .invalidEncoding, "base58 text longer than \(maxLength) characters",
                details: "\(string.utf8.count) characters")
        }
        let input = Array(string.utf8)
        let ones = input.prefix { $0 == alphabet[0] }.count
        let size = (input.count - ones) * 733 / 1000 + 1  // log(58)/log(256) ≈ 0.733
        var bytes = [UInt8](repeating: 0, count: size)
        var length = 0
        for c in input[ones...] {
            let value = decodeTable[Int(c)]
            guard value >= 0 else { throw CryptoError(.invalidEncoding, "invalid base58 character") }
            var carry = Int(value)
            var i = 0
            var k = size - 1
            while carry != 0 || i < length {
                carry += 58 * Int(bytes[k])
                bytes[k] = UInt8(carry & 0xFF)
                carry >>= 8
                i += 1
                k -= 1
            }
            length = i
        }
        return [UInt8](repeating: 0, count: ones) + bytes[(size - length)...]
    }
}
