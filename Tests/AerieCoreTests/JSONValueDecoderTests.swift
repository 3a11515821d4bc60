import Foundation
import Testing

@testable import AerieCore

/// `JSONValue.decode(as:)` reads the tree directly; it must decode what `JSONDecoder` decodes
/// from the value's text, and refuse what it refuses with the same field and reason (the
/// `invalid_params` answer a client sees).
@Suite(.timeLimit(.minutes(5))) struct JSONValueDecoderTests {
    private enum Kind: String, Decodable, Equatable { case basic, ping }

    private struct Inner: Decodable, Equatable {
        var name: String
        var items: [Int]
    }

    private struct Params: Decodable, Equatable {
        var id: String
        var limit: Int?
        var ratio: Double?
        var flags: [Bool]?
        var nested: Inner?
        var kind: Kind?
        var any: JSONValue?
        var data: Data?
        var url: URL?
        var uuid: UUID?
        var small: Int8?
        var single: Float?
        var map: [String: [Int]]?
    }

    private func expectSame<T: Decodable & Equatable>(
        _ type: T.Type, _ value: JSONValue, sourceLocation: SourceLocation = #_sourceLocation
    ) {
        let direct = Result { try value.decode(as: T.self) }
        let viaText = Result { try JSONDecoder().decode(T.self, from: Data(value.serialized())) }
        switch (direct, viaText) {
        case (.success(let a), .success(let b)):
            #expect(a == b, sourceLocation: sourceLocation)
        case (.failure(let a as DecodingError), .failure(let b as DecodingError)):
            #expect(a.fieldPath == b.fieldPath, "\(value.jsonString)", sourceLocation: sourceLocation)
            #expect(a.reason == b.reason, "\(value.jsonString)", sourceLocation: sourceLocation)
        default:
            Issue.record("\(value.jsonString): direct \(direct), JSONDecoder \(viaText)", sourceLocation: sourceLocation)
        }
    }

    @Test func acceptsWhatJSONDecoderAccepts() {
        expectSame(
            Params.self,
            [
                "id": "x", "limit": 10, "ratio": .double(0.25), "flags": [true, false], "nested": ["name": "n", "items": [1, 2]],
                "kind": "ping", "any": ["deep": [1, "two", nil]], "data": "AAEC+v8=", "url": "https://example.com/a?b=c",
                "uuid": "E621E1F8-C36C-495A-93FC-0C247A3E6E5F", "small": -128, "single": .double(1.5), "map": ["a": [1], "b": []],
                "unknownMember": "ignored",
            ])
        expectSame(Params.self, ["id": "x"])
        expectSame(Params.self, ["id": "x", "limit": nil, "nested": nil, "any": nil])
        expectSame(Params.self, ["id": "x", "limit": .double(3), "ratio": 7])
        expectSame([Int].self, [1, 2, 3])
        expectSame([String: JSONValue].self, ["a": nil, "b": [1]])
    }

    @Test(arguments: [
        [:], ["id": nil], ["id": 5], ["id": ["x"]], ["id": "x", "limit": "10"],
        ["id": "x", "flags": [true, 1]], ["id": "x", "flags": "true"], ["id": "x", "nested": [:]],
        ["id": "x", "nested": ["name": "n", "items": [1, "2"]]], ["id": "x", "nested": ["name": "n", "items": nil]],
        ["id": "x", "nested": [1]], ["id": "x", "kind": "unknown"], ["id": "x", "data": "!!not base64"],
        ["id": "x", "uuid": "not-a-uuid"], ["id": "x", "ratio": "1"], ["id": "x", "map": ["a": ["b"]]], ["id": "x", "map": [1]],
    ] as [JSONValue])
    func refusesWithJSONDecodersFieldAndReason(_ value: JSONValue) {
        expectSame(Params.self, value)
    }

    /// Where JSONDecoder is vaguer ("The given data was not valid JSON." for the whole params, or
    /// no word of the null), the direct decoder names the field and the fault.
    @Test(arguments: [
        (["id": "x", "limit": .double(1.5)], "limit", "Parsed JSON number <1.5> does not fit in Int."),
        (["id": "x", "small": 300], "small", "Parsed JSON number <300> does not fit in Int8."),
        (["id": "x", "single": .double(1e300)], "single", "Parsed JSON number <1e+300> does not fit in Float."),
        (["id": "x", "flags": [true, nil]], "flags[1]", "must be a boolean, not null"),
    ] as [(JSONValue, String, String)])
    func namesTheFieldWhereJSONDecoderDoesNot(_ value: JSONValue, field: String, reason: String) {
        #expect(throws: DecodingError.self) { try JSONDecoder().decode(Params.self, from: Data(value.serialized())) }
        do {
            _ = try value.decode(as: Params.self)
            Issue.record("decoded \(value.jsonString)")
        } catch let error as DecodingError {
            #expect(error.fieldPath == field)
            #expect(error.reason == reason)
        } catch {
            Issue.record("\(error)")
        }
    }
}
