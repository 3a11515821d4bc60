import Testing

@testable import AerieCore

@Suite(.timeLimit(.minutes(5))) struct NulCharacterTests {
    @Test func pathsNameTheFieldLikeDecodingErrors() throws {
        let cases: [(String, String?)] = [
            (#"{"a":"x"}"#, nil),
            (#"{"a":"x\u0000"}"#, "a"),
            (#"{"a":{"b":[1,"ok","\u0000"]}}"#, "a.b[2]"),
            (#"{"list":[{"k\u0000":1}]}"#, "list[0].k\u{0}"),
            (#"["\u0000"]"#, "[0]"),
            (#""\u0000""#, "params"),
        ]
        for (text, expected) in cases {
            #expect(try JSONValue(parsing: text).pathOfNulCharacter() == expected, "\(text)")
        }
    }

    @Test func paramsDecodingRefusesNulBeforeTheHandler() throws {
        struct Params: Codable { var name: String }
        #expect(throws: AerieError.self) {
            _ = try MethodRouter.decodeParams(Params.self, from: try JSONValue(parsing: #"{"name":"a\u0000"}"#))
        }
        #expect(try MethodRouter.decodeParams(Params.self, from: try JSONValue(parsing: #"{"name":"a"}"#)).name == "a")
    }
}
