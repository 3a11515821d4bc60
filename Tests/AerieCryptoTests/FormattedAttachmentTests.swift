import AerieCore
import Testing

@testable import AerieCrypto

@Suite(.timeLimit(.minutes(5))) struct FormattedAttachmentTests {
    static let format = "aries/ld-proof-vc@v1.0"

    static func message(data: JSONValue, formats: JSONValue? = nil, list: JSONValue? = nil) -> JSONValue {
        [
            "formats": formats ?? [["attach_id": "a1", "format": .string(format)]],
            "credentials~attach": list ?? [["@id": "a1", "mime-type": "application/json", "data": data]],
        ]
    }

    static func problemCode(_ message: JSONValue) -> String? {
        let error = #expect(throws: AerieError.self) {
            try FormattedAttachment.document(of: message, list: "credentials~attach", format: format)
        }
        return error?.data["problemCode"]?.stringValue
    }

    @Test func readsJSONAndEitherBase64Alphabet() throws {
        let document: JSONValue = ["id": "urn:x", "note": "ü>?"]
        let bytes = document.serialized()
        for data: JSONValue in [
            ["json": document], ["base64": .string(Base64.encode(bytes))], ["base64": .string(Base64.encodeURL(bytes))],
        ] {
            #expect(try FormattedAttachment.document(of: Self.message(data: data), list: "credentials~attach", format: Self.format) == document)
        }
        let second: JSONValue = [
            ["attach_id": "a0", "format": "hlindy/cred@v2.0"], ["attach_id": "a1", "format": .string(Self.format)],
        ]
        let list: JSONValue = [["@id": "a0", "data": ["json": ["other": true]]], ["@id": "a1", "data": ["json": document]]]
        #expect(
            try FormattedAttachment.document(
                of: Self.message(data: .null, formats: second, list: list), list: "credentials~attach", format: Self.format) == document)
    }

    @Test func refusesWhatIsNotOneBoundedObject() {
        let tooMany = JSONValue.array(Array(repeating: ["attach_id": "a1", "format": .string(Self.format)], count: FormattedAttachment.maxCount + 1))
        let huge = JSONValue.object(["x": .string(String(repeating: "y", count: FormattedAttachment.maxBytes))])
        let malformed: [JSONValue] = [
            Self.message(data: ["json": [:]], formats: []),
            Self.message(data: ["json": [:]], formats: tooMany),
            Self.message(data: ["json": [:]], list: []),
            Self.message(data: ["json": [:]], list: [["@id": "other", "data": ["json": [:]]]]),
            Self.message(data: ["json": "not an object"]),
            Self.message(data: ["json": huge]),
            Self.message(data: ["links": ["https://example.com/x"]]),
            Self.message(data: ["base64": .string(String(repeating: "A", count: FormattedAttachment.maxBytes * 2))]),
            Self.message(data: ["base64": "not base64!"]),
            Self.message(data: ["base64": .string(Base64.encode(Array("not json".utf8)))]),
            Self.message(data: ["base64": .string(Base64.encode(Array("[1]".utf8)))]),
            ["formats": [["attach_id": "a1", "format": .string(Self.format)]]],
        ]
        for message in malformed { #expect(Self.problemCode(message) == "malformed-message") }
        let other = Self.message(data: ["json": [:]], formats: [["attach_id": "a1", "format": "hlindy/cred@v2.0"]])
        #expect(Self.problemCode(other) == "unsupported-format")
    }
}
