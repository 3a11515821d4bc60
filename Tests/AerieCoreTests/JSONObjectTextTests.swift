import Testing

@testable import AerieCore

/// `JSONObjectText` finds each member's raw text without building values: a serialized member
/// comes back byte for byte, and text the strict parser refuses is refused.
@Suite(.timeLimit(.minutes(5))) struct JSONObjectTextTests {
    @Test func membersComeBackAsTheirSerializedText() throws {
        let payload: JSONValue = [
            "@type": "https://didcomm.org/basicmessage/1.0/message", "@id": "m-1",
            "content": "quote \" backslash \\ newline \n tab \t control \u{1} unicode é 😀 slash /",
            "numbers": [0, -1, .double(1.5), .double(1e300), .double(-0.25)], "nested": ["a": ["b": [true, false, nil]], "": "empty key"],
            "esc\"aped key": "v",
        ]
        let object: JSONValue = ["payload": payload, "threadId": "t-1", "count": 3, "flag": true, "none": nil, "list": []]
        let text = try JSONObjectText(object.serialized())
        #expect(text.rawBytes("payload").map { Array($0) } == payload.serialized())
        #expect(try text.value("payload") == payload)
        #expect(text.string("threadId") == "t-1")
        #expect(text.string("count") == nil)
        #expect(try text.value("count") == 3)
        #expect(try text.value("flag") == true)
        #expect(try text.value("none") == .null)
        #expect(try text.value("list") == [])
        #expect(text.rawBytes("missing") == nil)
        let inner = try JSONObjectText(Array(text.rawBytes("payload")!))
        #expect(inner.string("@type") == "https://didcomm.org/basicmessage/1.0/message")
        #expect(inner.string("esc\"aped key") == "v")
        #expect(inner.string("") == nil)
        #expect(try JSONObjectText(Array(inner.rawBytes("nested")!)).string("") == "empty key")
    }

    /// A nested object is scanned over the same bytes; the last of a repeated key wins, as the
    /// parser has it; strings come back decoded, invalid UTF-8 as nil.
    @Test func nestedObjectsRepeatedKeysAndStrings() throws {
        let bytes = Array(#"{"payload": {"@type":"t\/1","x":{"@type":"inner"}, "@type" : "t/2"},"k":"a","k":"b","n":[1]}"#.utf8)
        let text = try JSONObjectText(bytes)
        let payload = try #require(try text.object("payload"))
        #expect(payload.string("@type") == "t/2")
        #expect(try payload.object("x")?.string("@type") == "inner")
        #expect(try payload.value("@type") == "t/2")
        #expect(text.string("k") == "b")
        #expect(try text.object("k") == nil)
        #expect(try text.object("n") == nil)
        #expect(try text.object("missing") == nil)
        #expect(payload.rawBytes("x").map { String(decoding: $0, as: UTF8.self) } == #"{"@type":"inner"}"#)
        let escaped = try JSONObjectText(Array(#"{"a":"x\"y\u00e9\\","b":"plain é"}"#.utf8))
        #expect(escaped.string("a") == "x\"yé\\")
        #expect(escaped.string("b") == "plain é")
        let invalid = try JSONObjectText([0x7B, 0x22, 0x61, 0x22, 0x3A, 0x22, 0xC3, 0x28, 0x22, 0x7D])  // {"a":"\xC3("}
        #expect(invalid.string("a") == nil)
    }

    @Test func whitespaceAndEmptyObjects() throws {
        let text = try JSONObjectText(Array(#" { "a" : { } , "b" :[ 1 , { "c" : [ ] } ] } "#.utf8))
        #expect(try text.value("a") == .object([:]))
        #expect(try text.value("b") == [1, ["c": []]])
        #expect(try JSONObjectText(Array("{}".utf8)).rawBytes("a") == nil)
    }

    @Test(arguments: [
        "", "[]", "\"text\"", "{", "{\"a\"}", "{\"a\":}", "{\"a\":1,}", "{\"a\":1} x", "{\"a\":\"unterminated}",
        "{\"a\":[1,2}", "{\"a\":tru}", "{\"a\":\"control \u{1} char\"}", "{a:1}", "{\"a\":1 \"b\":2}",
    ])
    func malformedTextIsRefused(_ text: String) {
        #expect(throws: JSONValue.ParseError.self) { try JSONObjectText(Array(text.utf8)) }
    }

    @Test func nestingIsBounded() {
        let deep = "{\"a\":" + String(repeating: "[", count: 10_000) + String(repeating: "]", count: 10_000) + "}"
        #expect(throws: JSONValue.ParseError.self) { try JSONObjectText(Array(deep.utf8)) }
    }
}
