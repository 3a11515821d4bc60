import Foundation
import Logging
import Testing

@testable import AerieCore

/// `JSONText` written by `JSONWriter` is what `JSONValue.serialized()` gives for the same value
/// (members written in sorted order), and a method may answer it instead of a `JSONValue`.
@Suite(.timeLimit(.minutes(5))) struct JSONTextTests {
    static let awkward = "quote \" backslash \\ newline \n tab \t cr \r control \u{1} \u{1F} del \u{7F} é 😀 / \u{2028} nul \u{0}"

    @Test func writesWhatTheSerializerWrites() throws {
        let expected: JSONValue = [
            "a": [], "b": [[:], ["x": nil]], "c": .string(Self.awkward), "d": 5, "e": .double(1.5), "f": true,
            Self.awkward: ["nested": [1, "two", nil]],
        ]
        let text = JSONText(reservingCapacity: 10) { writer in
            writer.object { members in
                members.member("a") { $0.array { _ in } }
                members.member("b") { writer in
                    writer.array { items in
                        items.item { $0.object { _ in } }
                        items.item { $0.object { $0.member("x") { $0.null() } } }
                    }
                }
                members.member("c", string: Self.awkward)
                members.member("d", .int(5))
                members.member("e", .double(1.5))
                members.member("f", true)
                members.member(Self.awkward) { $0.value(["nested": [1, "two", nil]]) }
            }
        }
        #expect(text.bytes == expected.serialized())
        #expect(try text.value == expected)
        #expect(JSONText { $0.string("") }.bytes == Array(#""""#.utf8))
        #expect(JSONText { $0.null() }.bytes == Array("null".utf8))
    }

    /// Members with static keys (`JSONKey`, nothing to escape) write what members with string
    /// keys write: nil as null, a UUID as its text, a nested value through its writer.
    @Test func staticKeysWriteWhatStringKeysWrite() throws {
        let uid = UUID()
        let once = JSONText { writer in
            writer.object { members in
                members.member(JSONKey("text"), string: Self.awkward)
                members.member(JSONKey("plain key/with:punctuation"), string: "x")
                members.member(JSONKey("nested")) { $0.array { $0.item { $0.null() } } }
                members.member(JSONKey("nil"), string: nil)
                members.member(JSONKey("uid"), string: uid)
            }
        }
        let anew = JSONText { writer in
            writer.object { members in
                members.member("text", string: Self.awkward)
                members.member("plain key/with:punctuation", string: "x")
                members.member("nested") { $0.array { $0.item { $0.null() } } }
                members.member("nil") { $0.null() }
                members.member("uid", string: uid.lowercasedString)
            }
        }
        #expect(once.bytes == anew.bytes)
        #expect(
            try once.value
                == ["text": .string(Self.awkward), "plain key/with:punctuation": "x", "nested": [nil], "nil": nil, "uid": .string(uid.lowercasedString)])
    }

    /// A UUID written straight into the text is its canonical lowercase form, as Foundation
    /// spells it lowercased, for every hex digit in every position.
    @Test func uuidsAreWrittenInTheirCanonicalLowercaseText() throws {
        var uuids = (0..<200).map { _ in UUID() }
        uuids.append(UUID(uuid: (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)))
        uuids.append(UUID(uuid: (255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255)))
        uuids.append(try #require(UUID(uuidString: "01234567-89AB-CDEF-0A1B-2C3D4E5F6789")))
        for uuid in uuids {
            let expected = uuid.uuidString.lowercased()
            #expect(uuid.lowercasedString == expected)
            #expect(JSONText { $0.object { $0.member(JSONKey("uid"), string: uuid) } }.bytes == Array(#"{"uid":"\#(expected)"}"#.utf8))
        }
    }

    @Test func aThrowingBodyRethrows() {
        struct Stop: Error {}
        #expect(throws: Stop.self) {
            _ = try JSONText { writer in
                try writer.array { items in
                    items.item { $0.null() }
                    try items.item { _ in throw Stop() }
                }
            }
        }
    }

    /// Encoded (say, inside another result) it is the value it holds.
    @Test func encodesAsTheValueItHolds() throws {
        let text = JSONText { $0.object { $0.member("k", string: "v\"") } }
        #expect(try JSONValue(encoding: ["inner": text]) == ["inner": ["k": "v\""]])
        let foundation = try JSONDecoder().decode(JSONValue.self, from: JSONEncoder().encode(text))
        #expect(foundation == ["k": "v\""])
    }

    /// A registered method that answers `JSONText` is answered `.text`, the others `.value`.
    @Test func methodsAnswerTextOrValue() async throws {
        var router = MethodRouter()
        try router.register("t.text", summary: "text", access: .anonymous) { (_: NoParams, _: CallContext) in
            JSONText { $0.value([1, 2]) }
        }
        try router.register("t.value", summary: "value", access: .anonymous) { (_: NoParams, _: CallContext) in
            JSONValue.array([1, 2])
        }
        let context = CallContext(principal: .anonymous, logger: Logger(label: "test"), session: NullSession())
        let text = try await #require(router.method(named: "t.text")).handler(nil, context)
        guard case .text(let written) = text else {
            Issue.record("expected text, got \(text)")
            return
        }
        #expect(written.bytes == Array("[1,2]".utf8))
        #expect(try text.value == [1, 2])
        let value = try await #require(router.method(named: "t.value")).handler(nil, context)
        guard case .value(let answered) = value else {
            Issue.record("expected a value, got \(value)")
            return
        }
        #expect(answered == [1, 2])
    }
}
