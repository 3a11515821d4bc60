import AerieCore
import Foundation
import Testing

/// `UUID.random()` makes version 4 UUIDs as `UUID()` does: version and variant bits set, the
/// other 122 bits random.
@Suite(.timeLimit(.minutes(5))) struct UUIDRandomTests {
    @Test func versionFourVariantTenAndNoRepeats() {
        let count = 20_000
        var seen = Set<UUID>()
        // How often each of the 122 random bits is set, to catch a constant or stuck byte.
        var ones = [Int](repeating: 0, count: 128)
        for _ in 0..<count {
            let value = UUID.random()
            #expect(seen.insert(value).inserted)
            let text = value.lowercasedString
            #expect(UUID(uuidString: text) == value)
            let characters = Array(text)
            #expect(characters[14] == "4", "\(text)")
            #expect("89ab".contains(characters[19]), "\(text)")
            withUnsafeBytes(of: value.uuid) { bytes in
                for bit in 0..<128 where bytes[bit / 8] & (0x80 >> UInt8(bit % 8)) != 0 { ones[bit] += 1 }
            }
        }
        let fixed: Set<Int> = [48, 49, 50, 51, 64, 65]  // version 0100, variant 10
        for bit in 0..<128 where !fixed.contains(bit) {
            // Binomial(20,000, 0.5): a bit set below 45% or above 55% of the time is not random.
            #expect(ones[bit] > count * 45 / 100 && ones[bit] < count * 55 / 100, "bit \(bit) set \(ones[bit]) times")
        }
        #expect(ones[48] == 0 && ones[49] == count && ones[50] == 0 && ones[51] == 0)
        #expect(ones[64] == count && ones[65] == 0)
    }
}
