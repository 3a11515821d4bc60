import Foundation

extension UUID {
    /// Parses the canonical text form (`8-4-4-4-12` hex digits, either case), as Foundation's
    /// `UUID(uuidString:)` does, without its `sscanf` (which showed in profiles: a tenant id, a
    /// connection id or a message uid is parsed at nearly every call). Every id Aerie reads uses it.
    public init?(text: some StringProtocol) {
        let parsed =
            text.utf8.withContiguousStorageIfAvailable { UUID(canonicalText: $0) }
            ?? Array(text.utf8).withUnsafeBufferPointer { UUID(canonicalText: $0) }
        guard let parsed else { return nil }
        self = parsed
    }

    package init?(canonicalText text: UnsafeBufferPointer<UInt8>) {
        guard text.count == 36, text[8] == UInt8(ascii: "-"), text[13] == UInt8(ascii: "-"),
            text[18] == UInt8(ascii: "-"), text[23] == UInt8(ascii: "-")
        else { return nil }
        var value: uuid_t = (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)
        let valid = withUnsafeMutableBytes(of: &value) { bytes in
            var index = 0
            for position in 0..<16 {
                if index == 8 || index == 13 || index == 18 || index == 23 { index += 1 }
                let high = Self.nibble(text[index]), low = Self.nibble(text[index + 1])
                guard high | low < 16 else { return false }
                bytes[position] = high << 4 | low
                index += 2
            }
            return true
        }
        guard valid else { return nil }
        self.init(uuid: value)
    }

    /// The value of a hex digit, or 0xFF.
    @inline(__always)
    private static func nibble(_ c: UInt8) -> UInt8 {
        switch c {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): c &- UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): c &- UInt8(ascii: "a") &+ 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): c &- UInt8(ascii: "A") &+ 10
        default: 0xFF
        }
    }
}
