import Testing

@testable import AerieCore

/// `\u` escapes are written as UTF-8 directly (no String per escape): every width comes out right.
@Suite(.timeLimit(.minutes(5))) struct JSONEscapeTests {
    @Test func unicodeEscapesOfEveryWidth() throws {
        let text = #""a\u0041\u00e9\u07ff\u0800\uffff\ud83d\ude00\u0000z""#
        #expect(try JSONValue(parsing: text) == .string("aA\u{e9}\u{7ff}\u{800}\u{ffff}\u{1F600}\u{0}z"))
    }

    @Test func longEscapedStringParses() throws {
        let text = "\"" + String(repeating: #"\u00e9"#, count: 100_000) + "\""
        #expect(try JSONValue(parsing: text).stringValue?.count == 100_000)
    }

    /// The writer's escapes (two passes into an array grown once): each character that must be
    /// escaped, in the short form where JSON has one, every other byte as it is, and the text
    /// parses back to the string, around escapes at either end and in runs.
    @Test func writtenStringsEscapeExactlyWhatTheyMust() throws {
        #expect(JSONValue.string("plain é 😀 </script>").jsonString == "\"plain é 😀 </script>\"")
        #expect(JSONValue.string("\"q\" \\ \n\r\t \u{1}\u{1f}\u{7f}").jsonString == #""\"q\" \\ \n\r\t \u0001\u001f\#u{7f}""#)
        #expect(JSONValue.string("").jsonString == "\"\"")
        let every = String(decoding: (0..<0x80).map { UInt8($0) }, as: UTF8.self) + "é\u{2028}😀"
        for sample in [every, "\"" + every + "\\", String(repeating: "\"\"", count: 1000), #"{"@type":"x","n":[1,"two"]}"#] {
            let written = JSONValue.string(sample).jsonString
            #expect(try JSONValue(parsing: written) == .string(sample))
            #expect(!written.utf8.dropFirst().dropLast().contains { $0 < 0x20 })
        }
        // Inside an object, keys and values alike; the bytes before the string are kept.
        #expect(JSONValue.object(["k\"": .string("v\n")]).jsonString == #"{"k\"":"v\n"}"#)
    }
}
