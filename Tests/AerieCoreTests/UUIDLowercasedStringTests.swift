import AerieCore
import Foundation
import Testing

/// `UUID.lowercasedString` writes the same text as Foundation's `uuidString.lowercased()`.
@Suite(.timeLimit(.minutes(5))) struct UUIDLowercasedStringTests {
    @Test func matchesFoundationForRandomAndEdgeValues() {
        var values = (0..<10_000).map { _ in UUID() }
        values.append(UUID(uuid: (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)))
        values.append(UUID(uuid: (255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255)))
        values.append(UUID(uuidString: "8AA5E6C9-FF6D-4445-9E56-B455241E5EDB")!)
        for value in values {
            #expect(value.lowercasedString == value.uuidString.lowercased())
        }
        #expect(values.last?.lowercasedString == "8aa5e6c9-ff6d-4445-9e56-b455241e5edb")
    }
}
