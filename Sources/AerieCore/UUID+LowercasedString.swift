import Foundation

extension UUID {
    /// The canonical lowercase text (`8-4-4-4-12` hex digits), as every id Aerie shows is written.
    /// Written directly: Foundation's `uuidString` formats each byte through `snprintf`, and
    /// `lowercased()` walks the result again; profiles of `messages.download` (a uid per message)
    /// showed it.
    public var lowercasedString: String {
        String(unsafeUninitializedCapacity: Self.textByteCount) { out in
            writeLowercased(into: out.baseAddress!)
            return Self.textByteCount
        }
    }

    /// The length of the canonical text.
    public static let textByteCount = 36

    /// Writes the canonical lowercase text's `textByteCount` bytes at `out`: for a writer that
    /// puts it straight into a larger text (a JSON answer) without a string of its own. Straight
    /// line code over the sixteen bytes, digits by arithmetic (no table, no branch).
    public func writeLowercased(into out: UnsafeMutablePointer<UInt8>) {
        @inline(__always) func digit(_ nibble: UInt8) -> UInt8 {
            // 0-9 -> '0'-'9'; 10-15 -> 'a'-'f' (39 more): (9 - n) >> 7 is all ones past 9.
            let n = Int(nibble)
            return UInt8(truncatingIfNeeded: n &+ 0x30 &+ (((9 &- n) >> 7) & 39))
        }
        @inline(__always) func put(_ byte: UInt8, _ at: Int) {
            out[at] = digit(byte >> 4)
            out[at &+ 1] = digit(byte & 0x0f)
        }
        let u = uuid
        put(u.0, 0)
        put(u.1, 2)
        put(u.2, 4)
        put(u.3, 6)
        out[8] = UInt8(ascii: "-")
        put(u.4, 9)
        put(u.5, 11)
        out[13] = UInt8(ascii: "-")
        put(u.6, 14)
        put(u.7, 16)
        out[18] = UInt8(ascii: "-")
        put(u.8, 19)
        put(u.9, 21)
        out[23] = UInt8(ascii: "-")
        put(u.10, 24)
        put(u.11, 26)
        put(u.12, 28)
        put(u.13, 30)
        put(u.14, 32)
        put(u.15, 34)
    }
}
