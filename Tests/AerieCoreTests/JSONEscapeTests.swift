import Testing

@testable import AerieCore

/// `\u` escapes are written as UTF-8 directly (no String per escape): every width comes out right.
struct JSONEscapeTests {
    @Test func unicodeEscapesOfEveryWidth() throws {
        let text = #""a\u0041\u00e9\u07ff\u0800\uffff\ud83d\ude00\u0000z""#
        #expect(try JSONValue(parsing: text) == .string("aA\u{e9}\u{7ff}\u{800}\u{ffff}\u{1F600}\u{0}z"))
    }

    @Test func longEscapedStringParses() throws {
        let text = "\"" + String(repeating: #"\u00e9"#, count: 100_000) + "\""
        #expect(try JSONValue(parsing: text).stringValue?.count == 100_000)
    }
}
