import AerieCore
import Foundation
import Testing

@Suite(.timeLimit(.minutes(10))) struct JSONValueParsingTests {
    @Test func parsesEveryKind() throws {
        let value = try JSONValue(parsing: #" {"a":[1,-2.5,true,false,null,"x\"\\\/\n\u00e9\ud83d\ude00"],"b":{}} "#)
        #expect(value["a"] == [1, .double(-2.5), true, false, nil, .string("x\"\\/\né😀")])
        #expect(value["b"] == [:])
    }

    @Test func roundTripsThroughTheSerializer() throws {
        let original: JSONValue = ["z": [1, 2, ["q": "a/b\u{1}\n"]], "a": .double(0.5), "n": nil, "big": .int(Int64.max)]
        let text = original.jsonString
        #expect(try JSONValue(parsing: text) == original)
        #expect(text.hasPrefix(#"{"a":0.5,"big":9223372036854775807"#))  // sorted keys, no escaped slash
        #expect(text.contains(#"a/b\u0001\n"#))
    }

    /// Members come out in `String` order (Unicode-aware, not byte order), at every depth.
    @Test func writesMembersInStringOrder() throws {
        let keys = ["b", "a", "", "B", "é", "e\u{301}x", "ü", "z", "aa", "a b", "\u{1}", "😀", "ａ", "10", "9"]
        var fields: [String: JSONValue] = [:]
        for (index, key) in keys.enumerated() { fields[key] = ["inner": .int(Int64(index)), "a": [.object(["y": 1, "x": 2])]] }
        let text = JSONValue.object(fields).jsonString
        let expected = "{" + keys.sorted().map { key in
            let index = keys.firstIndex(of: key)!
            return JSONValue.string(key).jsonString + #":{"a":[{"x":2,"y":1}],"inner":\#(index)}"#
        }.joined(separator: ",") + "}"
        #expect(text == expected)
        #expect(try JSONValue(parsing: text) == .object(fields))
        #expect(JSONValue.object([:]).jsonString == "{}")
    }

    /// Strings with escapes between runs of plain text (the parser copies the runs whole): what
    /// the serializer wrote reads back, and Foundation reads the same.
    @Test func stringsWithEscapesBetweenRunsReadBack() throws {
        let pieces = ["plain", "\"", "\\", "\n", "\u{1}", "é", "😀", "/", "\u{2028}", "", "a b c", "\t\r"]
        var generator = SystemRandomNumberGenerator()
        for _ in 0..<200 {
            let string = (0..<Int.random(in: 0...30, using: &generator)).map { _ in pieces.randomElement(using: &generator)! }.joined()
            let text = JSONValue.array([.string(string), ["k": .string(string)]]).jsonString
            #expect(try JSONValue(parsing: text) == [.string(string), ["k": .string(string)]])
            #expect(try JSONDecoder().decode([JSONValue].self, from: Data(text.utf8))[0] == .string(string))
        }
        #expect(try JSONValue(parsing: #""a\"bc\\d\u00e9\/end""#) == .string("a\"bc\\dé/end"))
        #expect(throws: JSONValue.ParseError.self) { try JSONValue(parsing: "\"a\\\"b\u{1}c\"") }
        #expect(throws: JSONValue.ParseError.self) { try JSONValue(parsing: #""a\"bc"#) }
    }

    /// ASCII strings skip the UTF-8 validation; everything else is validated as before.
    @Test func stringsAreValidatedUTF8() throws {
        #expect(try JSONValue(parsing: Array("[\"ascii \u{7F}\",\"é😀\"]".utf8)) == ["ascii \u{7F}", "é😀"])
        let refused: [[UInt8]] = [
            [0x22, 0xC3, 0x28, 0x22], [0x22, 0xED, 0xA0, 0x80, 0x22], [0x22, 0xC0, 0xAF, 0x22], [0x22, 0xFF, 0x22],
            [0x22, 0x61, 0xE2, 0x82, 0x22], [0x7B, 0x22, 0x80, 0x22, 0x3A, 0x31, 0x7D],
        ]
        for bytes in refused {
            #expect(throws: JSONValue.ParseError.self, "\(bytes)") { try JSONValue(parsing: bytes) }
        }
    }

    @Test func agreesWithFoundationOnValidDocuments() throws {
        let text = #"{"list":[1,2,3],"nested":{"k":"v","e":1.5},"s":"\u0041"}"#
        let ours = try JSONValue(parsing: text)
        let foundation = try JSONDecoder().decode(JSONValue.self, from: Data(text.utf8))
        #expect(ours == foundation)
    }

    @Test func rejectsMalformedInput() {
        let bad = [
            "", " ", "{", "}", "[1,]", "{\"a\"}", "{\"a\":}", "01", "1.", "-", "+1", ".5", "1e", "tru", "nul",
            "\"abc", "\"\\x\"", "\"\\ud800\"", "\"\u{01}\"", "{\"a\":1,}", "[1 2]", "1 2", "NaN",
        ]
        for text in bad {
            #expect(throws: JSONValue.ParseError.self, "\(text.debugDescription)") { try JSONValue(parsing: text) }
        }
        #expect(throws: JSONValue.ParseError.self) { try JSONValue(parsing: [0x22, 0xC3, 0x28, 0x22]) }  // invalid UTF-8
    }

    @Test func boundsNestingDepth() throws {
        let ok = String(repeating: "[", count: 64) + String(repeating: "]", count: 64)
        _ = try JSONValue(parsing: ok)
        let deep = String(repeating: "[", count: 100_000) + String(repeating: "]", count: 100_000)
        #expect(throws: JSONValue.ParseError.self) { try JSONValue(parsing: deep) }
    }
}
