import AerieCore
import Foundation
import Testing

/// `UUID(text:)` reads every canonical text Foundation's `UUID(uuidString:)` reads, to the same
/// value. It is stricter on garbage: Foundation's `sscanf` takes a space or a sign in place of a
/// hex digit (`"…eecdf d"` reads as `…EECDF0D`); such text is not an id, and is refused here.
@Suite(.timeLimit(.minutes(5))) struct UUIDTextTests {
    @Test func agreesWithFoundation() {
        var texts: [String] = []
        for _ in 0..<5_000 {
            let value = UUID.random()
            texts.append(value.uuidString)
            texts.append(value.lowercasedString)
            // Mixed case, and one character replaced by each kind of wrong one.
            var mixed = Array(value.lowercasedString)
            for index in stride(from: 0, to: mixed.count, by: 3) { mixed[index] = Character(mixed[index].uppercased()) }
            texts.append(String(mixed))
            var broken = Array(value.lowercasedString)
            broken[Int.random(in: 0..<broken.count)] = ["g", "-", " ", "G", "é", "0"].randomElement()!
            texts.append(String(broken))
        }
        texts += [
            "", "00000000-0000-0000-0000-000000000000", "FFFFFFFF-FFFF-FFFF-FFFF-FFFFFFFFFFFF",
            "00000000-0000-0000-0000-00000000000", "00000000-0000-0000-0000-0000000000000",
            "000000000000-0000-0000-0000-00000000", "00000000000000000000000000000000",
            "{00000000-0000-0000-0000-000000000000}", " 00000000-0000-0000-0000-000000000000",
            "00000000-0000-0000-0000-00000000000\u{0}", "0000000-00000-0000-0000-000000000000",
            "+0000000-0000-0000-0000-000000000000", "0x000000-0000-0000-0000-000000000000",
        ]
        let hexDigits = Set("0123456789abcdefABCDEF")
        for text in texts {
            let characters = Array(text)
            let canonical =
                characters.count == 36
                && characters.enumerated().allSatisfy { index, character in
                    [8, 13, 18, 23].contains(index) ? character == "-" : hexDigits.contains(character)
                }
            if canonical {
                #expect(UUID(text: text) != nil && UUID(text: text) == UUID(uuidString: text), "\(text.debugDescription)")
            } else {
                #expect(UUID(text: text) == nil, "\(text.debugDescription)")
            }
            #expect(UUID(text: Substring(text)) == UUID(text: text), "\(text.debugDescription)")
        }
    }
}
