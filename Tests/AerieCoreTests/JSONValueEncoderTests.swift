import Foundation
import Testing

@testable import AerieCore

/// `JSONValue(encoding:)` builds the tree directly; it must be the value that `JSONEncoder.aerie`'s
/// text parses to, for every shape a result takes.
@Suite(.timeLimit(.minutes(5))) struct JSONValueEncoderTests {
    private func viaText<T: Encodable>(_ value: T) throws -> JSONValue {
        try JSONValue(parsing: JSONEncoder.aerie.encode(value))
    }

    private func expectSame<T: Encodable>(_ value: T, sourceLocation: SourceLocation = #_sourceLocation) throws {
        let direct = try JSONValue(encoding: value)
        let text = try viaText(value)
        #expect(direct == text, sourceLocation: sourceLocation)
        #expect(direct.serialized() == text.serialized(), sourceLocation: sourceLocation)
    }

    @Test func connectionViewsWithAndWithoutOptionalFields() throws {
        let full = ConnectionRecord(
            state: .accepted, invitation: ["@id": "inv-1", "label": "Peer"], invitationKind: "aries", invitationId: "inv-1",
            myDid: "did:peer:me", myVerkey: "MyKey", theirDid: "did:peer:them", theirVerkey: "TheirKey",
            theirEndpoint: "https://peer.example/didcomm", label: "Peer \"quoted\" / slash", logoUrl: "https://x/logo.png",
            goal: "g", goalCode: "gc", failureReason: "none", handshakeProtocol: "https://didcomm.org/connections/1.0",
            role: .inviter, multiUse: true, alias: "alias")
        var view = ConnectionView(full)
        view.existing = true
        try expectSame(view)
        try expectSame(ConnectionView(ConnectionRecord(invitation: .null, invitationKind: "aries")))
        // The record itself: UUID, dates (seconds since 2001 with a fraction), enums, nested JSON.
        try expectSame(full)
        try expectSame([full, ConnectionRecord(invitation: [1, .double(2.5), "x", nil], invitationKind: "oob")])
    }

    private struct Numbers: Encodable {
        var int = 7
        var negative: Int64 = -9_007_199_254_740_993
        var small: Int8 = -3
        var unsigned: UInt64 = 18_446_744_073_709_551_615
        var integralDouble = 42.0
        var fraction = 0.1
        var large = 1e300
        var tiny = Double.leastNonzeroMagnitude
        var float: Float = 0.1
        var decimal = Decimal(string: "12.50")!
    }

    @Test func numbers() throws {
        try expectSame(Numbers())
        try expectSame([1.5, 2.0, -0.0])
    }

    @Test func nonFiniteNumbersAreRefusedLikeJSONEncoder() {
        #expect(throws: EncodingError.self) { try JSONValue(encoding: [Double.nan]) }
        #expect(throws: EncodingError.self) { try JSONValue(encoding: ["x": Double.infinity]) }
    }

    private struct Specials: Encodable {
        var data = Data([0, 1, 2, 250, 255])
        var url = URL(string: "https://example.com/a?b=c")!
        var date = Date(timeIntervalSince1970: 1_700_000_000.25)
        var id = UUID()
        var nothing: String? = nil
        var explicitNull: String? = nil

        enum CodingKeys: String, CodingKey { case data, url, date, id, nothing, explicitNull }

        func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: CodingKeys.self)
            try container.encode(data, forKey: .data)
            try container.encode(url, forKey: .url)
            try container.encode(date, forKey: .date)
            try container.encode(id, forKey: .id)
            try container.encodeIfPresent(nothing, forKey: .nothing)
            try container.encodeNil(forKey: .explicitNull)
        }
    }

    @Test func foundationTypesUseJSONEncodersDefaultStrategies() throws {
        try expectSame(Specials())
    }

    private enum Shape: Encodable {
        case circle(radius: Double)
        case labelled(String, [Int])
        case empty
    }

    private class Base: Encodable {
        var name = "base"
    }

    private final class Derived: Base {
        var extra = [1, 2]
        enum CodingKeys: String, CodingKey { case extra }
        override func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: CodingKeys.self)
            try container.encode(extra, forKey: .extra)
            try super.encode(to: container.superEncoder())
        }
    }

    private struct Nested: Encodable {
        enum Keys: String, CodingKey { case outer, list }
        enum Inner: String, CodingKey { case value }
        func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: Keys.self)
            var inner = container.nestedContainer(keyedBy: Inner.self, forKey: .outer)
            try inner.encode("x", forKey: .value)
            var list = container.nestedUnkeyedContainer(forKey: .list)
            try list.encode(1)
            var listed = list.nestedContainer(keyedBy: Inner.self)
            try listed.encode(true, forKey: .value)
            var deeper = list.nestedUnkeyedContainer()
            try deeper.encodeNil()
        }
    }

    private struct EncodesNothing: Encodable {
        func encode(to encoder: any Encoder) throws {}
    }

    @Test func enumsSubclassesNestedContainersAndEmptyValues() throws {
        try expectSame([Shape.circle(radius: 2), .labelled("a", [1, 2]), .empty])
        try expectSame(Derived())
        try expectSame(Nested())
        try expectSame(["empty": EncodesNothing()])
        try expectSame([EncodesNothing()])
        #expect(throws: EncodingError.self) { try JSONValue(encoding: EncodesNothing()) }
        #expect(throws: EncodingError.self) { try JSONEncoder.aerie.encode(EncodesNothing()) }
        try expectSame(["b": [1], "a": [], "c": [3, 4]])
        try expectSame([3: "three", 1: "one"])
        try expectSame(["nested": JSONValue.object(["k": .array([.null, .bool(false)])])])
    }
}
