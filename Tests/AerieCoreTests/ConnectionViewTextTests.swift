import Foundation
import Testing

@testable import AerieCore

/// `ConnectionView.text` (what `connections.get` answers, cached) is byte for byte what the view's
/// `Encodable` form serializes to, and both are what a synthesized `Encodable` gave: every stored
/// property under its own name, nil ones left out. The reference is built from the struct's
/// properties by reflection, not from the member list the view writes itself from, so a property
/// added to the struct but not to that list fails here.
@Suite(.timeLimit(.minutes(5))) struct ConnectionViewTextTests {
    /// The object a synthesized `Encodable` wrote for `view`.
    static func reference(_ view: ConnectionView) throws -> JSONValue {
        var fields: [String: JSONValue] = [:]
        for child in Mirror(reflecting: view).children {
            let name = try #require(child.label)
            let mirror = Mirror(reflecting: child.value)
            let value: Any
            if mirror.displayStyle == .optional {
                guard let wrapped = mirror.children.first?.value else { continue }
                value = wrapped
            } else {
                value = child.value
            }
            switch value {
            case let string as String: fields[name] = .string(string)
            case let int as Int: fields[name] = .int(Int64(int))
            case let bool as Bool: fields[name] = .bool(bool)
            default: Issue.record("ConnectionView.\(name) has a type this reference does not know")
            }
        }
        return .object(fields)
    }

    static func expectWrittenAsEncoded(_ view: ConnectionView, sourceLocation: SourceLocation = #_sourceLocation) throws {
        let text = view.text
        let reference = try Self.reference(view)
        #expect(text.bytes == reference.serialized(), sourceLocation: sourceLocation)
        // The Encodable form: as a result (JSONValueEncoder), through Foundation, and nested in
        // another result (connections.list, outOfBand.accept).
        #expect(text.bytes == (try JSONValue(encoding: view)).serialized(), sourceLocation: sourceLocation)
        #expect(try JSONValue(parsing: JSONEncoder.aerie.encode(view)) == reference, sourceLocation: sourceLocation)
        #expect(try JSONValue(encoding: ["connections": [view]]) == ["connections": [reference]], sourceLocation: sourceLocation)
        #expect(try text.value == reference, sourceLocation: sourceLocation)
    }

    static let awkward = "quote \" backslash \\ slash / newline \n tab \t cr \r control \u{01} \u{1F} del \u{7F} é 😀 \u{2028} </script> \u{FEFF}"

    static var full: ConnectionView {
        var view = ConnectionView(
            ConnectionRecord(
                state: .accepted, invitation: ["@id": "inv-1", "label": "Peer"], invitationKind: "aries", invitationId: "inv-1",
                myDid: "did:peer:me", myVerkey: "MyKey", theirDid: "did:peer:them", theirVerkey: "TheirKey",
                theirEndpoint: "https://peer.example/didcomm?x=1&y=2", label: "Peer", logoUrl: "https://x/logo.png", goal: "g",
                goalCode: "gc", failureReason: "none", handshakeProtocol: "https://didcomm.org/connections/1.0", role: .inviter,
                multiUse: true, alias: "alias",
                rotation: PendingRotation(did: "did:peer:next", verkey: "NextKey", messageId: "r-1")))
        view.existing = true
        return view
    }

    static var optionalStrings: [WritableKeyPath<ConnectionView, String?>] {
        [
            \.pwDid, \.pwVerkey, \.theirDid, \.theirVerkey, \.theirEndpoint, \.invitationId, \.label, \.logoUrl, \.goal, \.goalCode,
            \.failureReason, \.handshakeProtocol, \.alias, \.rotatingToDid,
        ]
    }
    static var optionalBools: [WritableKeyPath<ConnectionView, Bool?>] { [\.multiUse, \.existing] }

    @Test func everyOptionalMemberPresentAbsentAndAlone() throws {
        try Self.expectWrittenAsEncoded(Self.full)
        var bare = ConnectionView(ConnectionRecord(invitation: .null, invitationKind: "aries"))
        try Self.expectWrittenAsEncoded(bare)
        for path in Self.optionalStrings {
            var without = Self.full
            without[keyPath: path] = nil
            try Self.expectWrittenAsEncoded(without)
            var alone = bare
            alone[keyPath: path] = "only"
            try Self.expectWrittenAsEncoded(alone)
            alone[keyPath: path] = ""
            try Self.expectWrittenAsEncoded(alone)
        }
        for path in Self.optionalBools {
            for value in [true, false] {
                var with = Self.full
                with[keyPath: path] = value
                try Self.expectWrittenAsEncoded(with)
                bare[keyPath: path] = value
                try Self.expectWrittenAsEncoded(bare)
            }
            var without = Self.full
            without[keyPath: path] = nil
            try Self.expectWrittenAsEncoded(without)
        }
    }

    @Test func everyStateRoleAndKind() throws {
        for state in ConnectionRecord.State.allCases {
            for role in [ConnectionRecord.Role.invitee, .inviter] {
                for kind in ["aries", "out-of-band", "proprietary", "proprietary-abbreviated"] {
                    try Self.expectWrittenAsEncoded(
                        ConnectionView(ConnectionRecord(state: state, invitation: [:], invitationKind: kind, role: role)))
                }
            }
        }
    }

    @Test func escapesAndUnicodeInEveryString() throws {
        var view = Self.full
        for (index, path) in Self.optionalStrings.enumerated() { view[keyPath: path] = Self.awkward + "\(index)" }
        view.connectionId = Self.awkward
        view.stateName = Self.awkward
        view.invitationKind = Self.awkward
        view.role = Self.awkward
        view.createdAt = Self.awkward
        view.updatedAt = Self.awkward
        view.state = -7
        try Self.expectWrittenAsEncoded(view)
        // Each escape written as JSONValue writes it.
        let written = String(decoding: view.text.bytes, as: UTF8.self)
        #expect(written.contains(#"quote \" backslash \\ slash / newline \n tab \t cr \r control \u0001 \u001f del \#u{7F} é 😀 \#u{2028} </script>"#))
    }
}
