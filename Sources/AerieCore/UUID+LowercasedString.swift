import Foundation

extension UUID {
    /// The canonical lowercase text (`8-4-4-4-12` hex digits), as every id Aerie shows is written.
    /// Written directly: Foundation's `uuidString` formats each byte through `snprintf`, and
    /// `lowercased()` walks the result again; profiles of `messages.download` (a uid per message)
    /// showed it.
    private static let hexDigits: [UInt8] = Array("0123456789abcdef".utf8)

    public var lowercasedString: String {
        withUnsafeBytes(of: uuid) { bytes in
            String(unsafeUninitializedCapacity: 36) { out in
                let digits = UUID.hexDigits
                var at = 0
                for (index, byte) in bytes.enumerated() {
                    if index == 4 || index == 6 || index == 8 || index == 10 {
                        out[at] = UInt8(ascii: "-")
                        at += 1
                    }
                    out[at] = digits[Int(byte >> 4)]
                    out[at + 1] = digits[Int(byte & 0x0f)]
                    at += 2
                }
                return at
            }
        }
    }
}
