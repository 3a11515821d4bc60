import AerieCore
import ConnectionsPlugin
import Testing

/// Hostile and malformed invitations: each is a clear `invalid_invitation` (or
/// `unsupported_invitation`) naming the field, never a crash.
@Suite(.timeLimit(.minutes(10))) struct BrokenInvitationTests {
    let aries = Fixtures.json(Fixtures.acapyCi)
    let oob = Fixtures.json(Fixtures.acapyOob11)

    @Test func missingType() async {
        await expectAerieError(.invalidInvitation, field: "@type", containing: "no @type") {
            try InvitationParser.parse(["@id": "x", "label": "no type"])
        }
    }

    @Test func typeOfTheWrongJSONType() async {
        await expectAerieError(.invalidInvitation, field: "@type", containing: "must be a string") {
            try InvitationParser.parse(aries.setting("@type", to: 42))
        }
    }

    @Test(arguments: [
        "https://didcomm.org/connections/1.0/request",
        "https://didcomm.org/trust_ping/1.0/ping",
        "https://example.org/connections/1.0/invitation",
        "connections/1.0/invitation",
        "https://didcomm.org/connections/invitation",
    ])
    func typeThatIsNotAnInvitation(type: String) async {
        await expectAerieError(.invalidInvitation, field: "@type") {
            try InvitationParser.parse(aries.setting("@type", to: .string(type)))
        }
    }

    @Test(arguments: [
        "https://didcomm.org/out-of-band/2.0/invitation",
        "https://didcomm.org/connections/2.0/invitation",
        "https://didcomm.org/didexchange/1.0/invitation",
    ])
    func unsupportedInvitationProtocols(type: String) async {
        await expectAerieError(.unsupportedInvitation, field: "@type") {
            try InvitationParser.parse(aries.setting("@type", to: .string(type)))
        }
    }

    @Test func notAnObject() async {
        for value: JSONValue in [[1, 2], 7, "text", true, nil] {
            await expectAerieError(.invalidInvitation, containing: "JSON object") { try InvitationParser.parse(value) }
        }
    }

    @Test func missingId() async {
        await expectAerieError(.invalidInvitation, field: "@id") { try InvitationParser.parse(aries.setting("@id", to: nil)) }
        await expectAerieError(.invalidInvitation, field: "@id") { try InvitationParser.parse(oob.setting("@id", to: "")) }
    }

    @Test func noRecipientKeys() async {
        await expectAerieError(.invalidInvitation, field: "recipientKeys", containing: "no recipient keys") {
            try InvitationParser.parse(aries.setting("recipientKeys", to: nil))
        }
        await expectAerieError(.invalidInvitation, field: "recipientKeys", containing: "no recipient keys") {
            try InvitationParser.parse(aries.setting("recipientKeys", to: []))
        }
        let service: JSONValue = ["serviceEndpoint": "https://x.example.org", "recipientKeys": []]
        await expectAerieError(.invalidInvitation, field: "services[0].recipientKeys") {
            try InvitationParser.parse(oob.setting("services", to: [service]))
        }
    }

    @Test func badKeys() async {
        await expectAerieError(.invalidInvitation, field: "recipientKeys[0]", containing: "must be a string") {
            try InvitationParser.parse(aries.setting("recipientKeys", to: [42]))
        }
        for key: JSONValue in ["notbase58!0OIl", "abc", "did:key:z6Mkxyz", "did:sov:LjgpST2rjsoxYegQDRm7EL", ""] {
            await expectAerieError(.invalidInvitation, field: "recipientKeys[0]", containing: "not an Ed25519 verkey") {
                try InvitationParser.parse(aries.setting("recipientKeys", to: [key]))
            }
        }
        await expectAerieError(.invalidInvitation, field: "routingKeys[1]") {
            try InvitationParser.parse(aries.setting("routingKeys", to: [.string(Fixtures.acapyVerkey), "zzz"]))
        }
        await expectAerieError(.invalidInvitation, field: "senderDetail.verKey") {
            let json = Fixtures.json(Fixtures.proprietaryStandard)
            let sender = json["senderDetail"]!.setting("verKey", to: "short")
            return try InvitationParser.parse(json.setting("senderDetail", to: sender))
        }
        await expectAerieError(.invalidInvitation, field: "s.v", containing: "no recipient key") {
            let json = Fixtures.json(Fixtures.proprietaryAbbreviated)
            return try InvitationParser.parse(json.setting("s", to: json["s"]!.setting("v", to: nil)))
        }
    }

    @Test(arguments: [
        "ftp://files.example.org/x", "not a url", "http://", "https:///path", "http://host:abc/",
        "didcomm:transport/queue", "javascript:alert(1)", "http://[::1/x", "mailto:a@b.c",
    ])
    func badEndpoint(endpoint: String) async {
        await expectAerieError(.invalidInvitation, field: "serviceEndpoint") {
            try InvitationParser.parse(aries.setting("serviceEndpoint", to: .string(endpoint)))
        }
    }

    @Test func goodEndpoints() throws {
        for endpoint in ["http://a.example:8080/x?y#z", "wss://[2001:db8::1]:443/ws", "HTTPS://User@Host.example"] {
            _ = try InvitationParser.parse(aries.setting("serviceEndpoint", to: .string(endpoint)))
        }
    }

    @Test func missingEndpoint() async {
        await expectAerieError(.invalidInvitation, field: "serviceEndpoint", containing: "no serviceEndpoint") {
            try InvitationParser.parse(aries.setting("serviceEndpoint", to: nil))
        }
        let service: JSONValue = ["recipientKeys": [.string(Fixtures.acapyDIDKey)]]
        await expectAerieError(.invalidInvitation, field: "services[0].serviceEndpoint") {
            try InvitationParser.parse(oob.setting("services", to: [service]))
        }
        let numeric: JSONValue = ["recipientKeys": [.string(Fixtures.acapyDIDKey)], "serviceEndpoint": 80]
        await expectAerieError(.invalidInvitation, field: "services[0].serviceEndpoint") {
            try InvitationParser.parse(oob.setting("services", to: [numeric]))
        }
    }

    @Test func wrongFieldTypes() async {
        await expectAerieError(.invalidInvitation, field: "label", containing: "must be a string") {
            try InvitationParser.parse(aries.setting("label", to: ["nested": true]))
        }
        await expectAerieError(.invalidInvitation, field: "handshake_protocols", containing: "must be an array") {
            try InvitationParser.parse(oob.setting("handshake_protocols", to: "https://didcomm.org/didexchange/1.0"))
        }
        await expectAerieError(.invalidInvitation, field: "handshake_protocols[0]") {
            try InvitationParser.parse(oob.setting("handshake_protocols", to: [1]))
        }
        await expectAerieError(.invalidInvitation, field: "services[0]", containing: "JSON object") {
            try InvitationParser.parse(oob.setting("services", to: [42]))
        }
        await expectAerieError(.invalidInvitation, field: "senderDetail", containing: "JSON object") {
            try InvitationParser.parse(Fixtures.json(Fixtures.proprietaryStandard).setting("senderDetail", to: "Faber"))
        }
        await expectAerieError(.invalidInvitation, field: "requests~attach[0]", containing: "JSON object") {
            try InvitationParser.parse(oob.setting("requests~attach", to: ["attachment"]))
        }
        await expectAerieError(.invalidInvitation, field: "request~attach[0].data") {
            try InvitationParser.parse(oob.setting("request~attach", to: [["@id": "a"]]))
        }
        await expectAerieError(.invalidInvitation, field: "request~attach[0].data") {
            try InvitationParser.parse(oob.setting("request~attach", to: [["@id": "a", "data": "x"]]))
        }
    }

    @Test func outOfBandServices() async {
        await expectAerieError(.invalidInvitation, field: "services", containing: "no services") {
            try InvitationParser.parse(oob.setting("services", to: []))
        }
        await expectAerieError(.invalidInvitation, field: "services", containing: "no services") {
            try InvitationParser.parse(oob.setting("services", to: nil))
        }
        await expectAerieError(.invalidInvitation, field: "services[0]", containing: "not a DID") {
            try InvitationParser.parse(oob.setting("services", to: ["LjgpST2rjsoxYegQDRm7EL"]))
        }
        await expectAerieError(.invalidInvitation, field: "services[0]", containing: "did:peer:2") {
            try InvitationParser.parse(oob.setting("services", to: ["did:peer:2.Zgarbage.Snotbase64!"]))
        }
        await expectAerieError(.invalidInvitation, field: "services[0]", containing: "did:peer:2") {
            try InvitationParser.parse(oob.setting("services", to: ["did:peer:2.Vz6MknpgBxnwXKcmm1bd2yMNMNiYUf1Di3gaR1CPSm4zg9Ki7"]))
        }
    }

    @Test func outOfBandWithNeitherHandshakeNorAttachment() async {
        await expectAerieError(.invalidInvitation, field: "handshake_protocols", containing: "neither") {
            try InvitationParser.parse(oob.setting("handshake_protocols", to: []))
        }
    }

    @Test func controlCharactersAndOverlongStrings() async {
        await expectAerieError(.invalidInvitation, field: "label", containing: "control characters") {
            try InvitationParser.parse(aries.setting("label", to: "Faber\u{0}College"))
        }
        await expectAerieError(.invalidInvitation, field: "@id", containing: "control characters") {
            try InvitationParser.parse(aries.setting("@id", to: "id\u{1B}[31m"))
        }
        await expectAerieError(.invalidInvitation, field: "label", containing: "longer than") {
            try InvitationParser.parse(aries.setting("label", to: .string(String(repeating: "x", count: 5000))))
        }
        await expectAerieError(.invalidInvitation, field: "serviceEndpoint", containing: "spaces") {
            try InvitationParser.parse(aries.setting("serviceEndpoint", to: "https://a.example/ x"))
        }
    }

    @Test func boundedLists() async {
        let keys = JSONValue.array(Array(repeating: .string(Fixtures.acapyVerkey), count: 17))
        await expectAerieError(.invalidInvitation, field: "recipientKeys", containing: "more than 16") {
            try InvitationParser.parse(aries.setting("recipientKeys", to: keys))
        }
        let services = JSONValue.array(Array(repeating: "did:sov:LjgpST2rjsoxYegQDRm7EL", count: 100))
        await expectAerieError(.invalidInvitation, field: "services", containing: "more than 16") {
            try InvitationParser.parse(oob.setting("services", to: services))
        }
    }

    @Test func hugeInvitations() async {
        let blob = JSONValue.string(String(repeating: "A", count: 70 * 1024))
        await expectAerieError(.invalidInvitation, containing: "larger than 64 KiB") {
            try InvitationParser.parse(oob.setting("requests~attach", to: [["@id": "big", "data": ["base64": blob]]]))
        }
        let text = #"{"@type":"https://didcomm.org/connections/1.0/invitation","pad":""#
            + String(repeating: " ", count: 65 * 1024) + #""}"#
        await expectAerieError(.invalidInvitation, containing: "larger than 64 KiB") {
            try InvitationParser.parse(text: text)
        }
    }

    @Test func deepNesting() async {
        let deep = String(repeating: "[", count: 10_000) + String(repeating: "]", count: 10_000)
        await expectAerieError(.invalidInvitation, containing: "not valid JSON") {
            try InvitationParser.parse(text: #"{"@type":"x","a":"# + deep + "}")
        }
        // Nesting within the parser's bound is just data.
        var nested: JSONValue = "leaf"
        for _ in 0..<40 { nested = ["n": nested] }
        let invitation = try? InvitationParser.parse(
            oob.setting("requests~attach", to: [["@id": "deep", "data": ["json": nested]]]))
        #expect(invitation?.hasAttachment == true)
    }

    /// Every truncation and many random byte changes of real invitations: an answer or an
    /// `AerieError`, nothing else.
    @Test func truncatedAndMutatedInvitationsNeverCrash() {
        var generator = SplitMix64(seed: 0xA3_41E)
        let samples = [
            Fixtures.proprietaryStandard, Fixtures.proprietaryAbbreviated, Fixtures.ariesSeed000,
            Fixtures.outOfBandSeed000, Fixtures.acapyOob11, Fixtures.acapyOobPeer, Fixtures.acapyOobB64attach,
        ]
        var outcomes = (parsed: 0, refused: 0)
        for sample in samples {
            let bytes = Array(sample.utf8)
            var variants: [[UInt8]] = (0..<bytes.count).map { Array(bytes[..<$0]) }
            for _ in 0..<300 {
                var mutated = bytes
                for _ in 0..<Int(generator.next() % 4 + 1) {
                    let index = Int(generator.next() % UInt64(mutated.count))
                    mutated[index] = UInt8(truncatingIfNeeded: generator.next())
                }
                variants.append(mutated)
            }
            for variant in variants {
                do {
                    _ = try InvitationParser.parse(text: String(decoding: variant, as: UTF8.self))
                    outcomes.parsed += 1
                } catch is AerieError {
                    outcomes.refused += 1
                } catch {
                    Issue.record("unexpected error type: \(error)")
                }
            }
        }
        #expect(outcomes.refused > 0 && outcomes.parsed > 0)
    }
}

/// A small deterministic generator, so a failing mutation can be replayed.
struct SplitMix64: RandomNumberGenerator {
    var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
