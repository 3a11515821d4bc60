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
    /// puts it straight into a larger text (a JSON answer) without a string of its own. Digits by
    /// arithmetic, no table.
    public func writeLowercased(into out: UnsafeMutablePointer<UInt8>) {
        @inline(__always) func digit(_ nibble: UInt8) -> UInt8 {
            // 0-9 -> '0'-'9'; 10-15 -> 'a'-'f' (39 more): (9 - n) >> 7 is all ones past 9.
            let n = Int(nibble)
            return UInt8(truncatingIfNeeded: n &+ 0x30 &+ (((9 &- n) >> 7) & 39))
        }
        withUnsafeBytes(of: uuid) { bytes in
            var at = 0
            for index in 0..<16 {
                if index == 4 || index == 6 || index == 8 || index == 10 {
                    out[at] = UInt8(ascii: "-")
                    at &+= 1
                }
                out[at] = digit(bytes[index] >> 4)
                out[at &+ 1] = digit(bytes[index] & 0x0f)
                at &+= 2
            }
        }
    }
}
