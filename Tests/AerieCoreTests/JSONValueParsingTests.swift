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
