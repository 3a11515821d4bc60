import AerieCore
import Testing

/// `RequestID.make()`: 16 lowercase hex digits, none repeated within the process, from several
/// threads at once too.
@Suite(.timeLimit(.minutes(5))) struct RequestIDTests {
    @Test func sixteenHexDigitsNeverRepeated() async {
        let perTask = 20_000
        let ids = await withTaskGroup(of: [String].self) { group in
            for _ in 0..<4 { group.addTask { (0..<perTask).map { _ in RequestID.make() } } }
            var all: [String] = []
            for await some in group { all += some }
            return all
        }
        #expect(Set(ids).count == 4 * perTask)
        #expect(ids.allSatisfy { $0.utf8.count == 16 && $0.utf8.allSatisfy { (48...57).contains($0) || (97...102).contains($0) } })
        // Spread over the whole range: the first digit takes every value.
        #expect(Set(ids.map { $0.first! }).count == 16)
    }
}
