/// Lowercase hexadecimal, for fingerprints and hashes.
public enum Hex {
    private static let digits = Array("0123456789abcdef".utf8)

    public static func encode<Bytes: Collection<UInt8>>(_ bytes: Bytes) -> String {
        String(unsafeUninitializedCapacity: bytes.count * 2) { out in
            var o = 0
            for b in bytes {
                out[o] = digits[Int(b >> 4)]
                out[o + 1] = digits[Int(b & 0x0F)]
                o += 2
            }
            return o
        }
    }

    public static func decode(_ string: String) throws -> [UInt8] {
        let utf8 = Array(string.utf8)
        guard utf8.count % 2 == 0 else { throw CryptoError(.invalidEncoding, "odd-length hex") }
        var out = [UInt8]()
        out.reserveCapacity(utf8.count / 2)
        var i = 0
        while i < utf8.count {
            guard let hi = nibble(utf8[i]), let lo = nibble(utf8[i + 1]) else {
                throw CryptoError(.invalidEncoding, "invalid hex character")
            }
            out.append(hi << 4 | lo)
            i += 2
        }
        return out
    }

    private static func nibble(_ c: UInt8) -> UInt8? {
        switch c {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): c - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): c - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): c - UInt8(ascii: "A") + 10
        default: nil
        }
    }
}
