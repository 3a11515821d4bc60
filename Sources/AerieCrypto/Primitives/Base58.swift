/// Base58 with the Bitcoin alphabet: DIDComm v1 verkeys, unqualified DIDs, did:key (`z…`).
///
/// The conversion is quadratic in the input length (in limbs of several digits, not digit by
/// digit), so `decode` refuses text longer than
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
        // The number in limbs of five base-58 digits (least significant first), fed four bytes at
        // a time: a limb times 2^32 plus a carry stays below 2^64. About 20 times fewer divisions
        // than a digit and a byte at a time (each pack and unpack encodes a few keys).
        var limbs: [UInt32] = []
        limbs.reserveCapacity((input.count - zeros) * 138 / 500 + 2)
        var index = zeros
        // The first group takes what is left over after whole groups of four.
        var take = (input.count - zeros) % 4 == 0 ? 4 : (input.count - zeros) % 4
        while index < input.count {
            var value: UInt64 = 0
            for byte in input[index..<(index + take)] { value = value << 8 | UInt64(byte) }
            index += take
            let multiplier = UInt64(1) << UInt64(8 * take)
            take = 4
            var carry = value
            for i in limbs.indices {
                let x = UInt64(limbs[i]) * multiplier + carry
                limbs[i] = UInt32(x % limbBase58)
                carry = x / limbBase58
            }
            while carry > 0 {
                limbs.append(UInt32(carry % limbBase58))
                carry /= limbBase58
            }
        }
        var digits: [UInt8] = []
        digits.reserveCapacity(limbs.count * 5)
        for (i, limb) in limbs.enumerated() {
            var rest = limb
            if i == limbs.count - 1 {
                while rest > 0 {
                    digits.append(UInt8(rest % 58))
                    rest /= 58
                }
            } else {
                for _ in 0..<5 {
                    digits.append(UInt8(rest % 58))
                    rest /= 58
                }
            }
        }
        var out = [UInt8](repeating: alphabet[0], count: zeros)
        out.reserveCapacity(zeros + digits.count)
        for d in digits.reversed() { out.append(alphabet[Int(d)]) }
        return String(decoding: out, as: UTF8.self)
    }

    /// 58^5, the base of `encode`'s limbs.
    private static let limbBase58: UInt64 = 656_356_768

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
        // The number in 32-bit limbs (least significant first), fed up to five digits at a time:
        // a limb times 58^5 plus a carry stays below 2^64.
        var limbs: [UInt32] = []
        limbs.reserveCapacity((input.count - ones) * 733 / 4000 + 2)
        var index = ones
        while index < input.count {
            let take = min(5, input.count - index)
            var value: UInt64 = 0
            var multiplier: UInt64 = 1
            for c in input[index..<(index + take)] {
                let digit = decodeTable[Int(c)]
                guard digit >= 0 else { throw CryptoError(.invalidEncoding, "invalid base58 character") }
                value = value * 58 + UInt64(digit)
                multiplier *= 58
            }
            index += take
            var carry = value
            for i in limbs.indices {
                let x = UInt64(limbs[i]) * multiplier + carry
                limbs[i] = UInt32(truncatingIfNeeded: x)
                carry = x >> 32
            }
            while carry > 0 {
                limbs.append(UInt32(truncatingIfNeeded: carry))
                carry >>= 32
            }
        }
        var bytes = [UInt8](repeating: 0, count: ones)
        bytes.reserveCapacity(ones + limbs.count * 4)
        var started = false
        for limb in limbs.reversed() {
            for shift in stride(from: 24, through: 0, by: -8) {
                let byte = UInt8(truncatingIfNeeded: limb >> UInt32(shift))
                if byte != 0 { started = true }
                if started { bytes.append(byte) }
            }
        }
        return bytes
    }
}
