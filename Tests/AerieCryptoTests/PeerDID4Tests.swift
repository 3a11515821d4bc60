import AerieCore
import Foundation
import Testing

@testable import AerieCrypto

/// Making our did:peer:4: byte for byte what ACA-Py makes for the same key and endpoint, its hash
/// checked, long and short forms, and the document read back.
@Suite(.timeLimit(.minutes(5))) struct PeerDID4Tests {
    /// The did:key spec's first Ed25519 key (`DIDTests.didKeyVectors`).
    static let verkey = "4zvwRjXUKGfvwnParsHAS3HuSVzV5cA4McphgmoCtajS"
    static let routingKey = "did:key:z6MkjchhfUsD6mmvni8mCdXHw216Xrm9bQe2mBH1P5RDjVJG#z6MkjchhfUsD6mmvni8mCdXHw216Xrm9bQe2mBH1P5RDjVJG"
    static let endpoint = "http://peer.example:8020"

    /// Made with ACA-Py 1.7.0's `did_peer_4` 0.1.4 (.interop/venv-1.7.0/bin/python) as
    /// `create_did_peer_4` builds it: `encode(input_doc_from_keys_and_services(keys=[KeySpec(
    /// multikey="z6MkiTBz…", relationships=["authentication", "keyAgreement"])], services=[{"id":
    /// "#didcomm-0", "type": "did-communication", "recipientKeys": ["#key-0"], "routingKeys": [],
    /// "serviceEndpoint": "http://peer.example:8020", "priority": 0}]))`.
    static let acapy =
        "did:peer:4zQmTYPmGto1NoYq3fbebBDvqWvQESfYi33Hvr8zQsvSGJnk:z6gn9Zotp6pxDtB9XMd1VJEfh2dZ5P2L3X3eSr3XQaSHmeroYjmSciR4LJq5RyboiGahWaLUjzsFsucHYKUeiaS4ZZagemQkVmAE1nffuobseyhexRER4rjz8wTCzMRYiWXiReDAEBwJvxDBYzwjFC8JnU4MF6SqTXBGV3iKzC5i46ufFMx1iwX7qNtWFAZerrHmpipneoystV1qWLDFXpCZkCSUkjcX4gc9Tm6ofKd8RmKS4njjCebYEeCjP2cdq69LJ998StNTwzFgeaAKbCfVNppQ2pEA5k4yUokyJ23BujVoAWGerVc7Dr4p8XxpeF6VAvpNXmUvHVB9qakG9q6dG9pEJYzRDhbdLm4Jty8wqcGFhvyL59pab8inSCxorps4tBz3Hf3S74V7euNv5QjkSJzyatwAk8sjwnEkNp3pRTJssxniQjghxxzF3bwJeihq9CQh29kf2fi3FUQKduEYNWZj83rvzsM8GphunZybfC2UCaPxwdYqapmqUvnBrAGY99khQDeK5aKsBuxDdpmBw82fd7XksGdk6TLYoAT6DXXjheRigd3GvsNVCe6QayC7bVPQm1gQNg"
    /// `long_to_short(acapy)`.
    static let acapyShort = "did:peer:4zQmTYPmGto1NoYq3fbebBDvqWvQESfYi33Hvr8zQsvSGJnk"
    /// The same with `"routingKeys": [routingKey]`.
    static let acapyRouted =
        "did:peer:4zQmRoiwQj57EUqcagLywMRtrbbbxndM3jBQjBC1gco6ZPbb:zAToCuX8h6NHVEYM8C5SANARYH4Tog1sWPaNLqoRN1BrkABzySgaefZUpBXEFGurv9NYmUExd3KXu29TXKsvpLUK2Baut8qTqxLdyjpt5Hyh6DURYVgGXYfy31NbbVLKY4eW1a333tGh5eUoZpMxdLDZ1NqWEo1nmHxipCw6aJWouWDvJt7vfqL5n32MBp4AGE3UBdixxmuS7LLixwb3Xs5KsCNdxM1xKZFc838JWUZ53YrY4s8MT7u8ELNgB1EyqvXKfNkDjzNEh6djFmyuLvFEHp9vozkdC2hHjfGimQ34afFM8NXABX4a3yRbhJ4ReVsWWXWjVyRh9LgFvkurQ4gCvFcdaaJuRa2SmtGEDppatM3G5mpthZqRfhCFW1fEoeR5DbxVFMhauAQhcdXfKWw3djNfmQ467U7mhRUcbTDxLGw2hopwQgFYkUp8NRixjMbTJEUyDLcZ5LUR19RBZX6aHpM82AL6YkCrnaRYyvRmhzzvcfhz8MB8p2eyPMqqQaBDdqWZCnahm4eW37FT7MSgbxSJMdXGw3dYLNAMyyXRjdFqFT9q35UV4wNZUomwfyiev32EPhV6HkLpZJMAkCLmKq3xNvNq668ivuWXemEuumM222WLrdNNivukSDrT3p2cSh77sEpETWDFpc9RQmhYjwkPAdiiVmZz6xdk8R6g9EtueaPBy34qgK2jgkP3aKBWfqR8Rbu8X1SdoLV6Z3TvR6UHirJx"

    @Test func ourDIDIsTheOneACAPyMakesForTheSameKeyAndEndpoint() throws {
        let made = try PeerDIDMethod.peer4.make(verkey: try Base58.decode(Self.verkey), serviceEndpoint: Self.endpoint)
        #expect(made.method == .peer4)
        #expect(made.did == Self.acapy)
        #expect(made.shortForm == Self.acapyShort)
        let routed = try PeerDIDMethod.peer4.make(
            verkey: try Base58.decode(Self.verkey), serviceEndpoint: Self.endpoint, routingKeys: [Self.routingKey])
        #expect(routed.did == Self.acapyRouted)
        // A base58 routing key is written as the did:key reference ACA-Py writes.
        let base58Routed = try PeerDIDMethod.peer4.make(
            verkey: try Base58.decode(Self.verkey), serviceEndpoint: Self.endpoint,
            routingKeys: ["6ASf5EcmmEHTgDJ4X4ZT5vT6iHVJBXPg5AN5YoTCpGWt"])
        #expect(base58Routed.did == Self.acapyRouted)
    }

    @Test func theHashIsTheMultihashOfTheEncodedDocument() throws {
        let made = try PeerDIDMethod.peer4.make(verkey: Ed25519KeyPair.generate().verkey, serviceEndpoint: Self.endpoint)
        let parts = made.did.dropFirst("did:peer:4".count).split(separator: ":")
        #expect(parts.count == 2)
        let digest = try Base58.decode(String(parts[0].dropFirst()))
        #expect(digest == [0x12, 0x20] + SHA256.hash(Array(parts[1].utf8)))
        #expect(made.shortForm == "did:peer:4" + parts[0])
        #expect(PeerDID4.isLongForm(made.did) && !PeerDID4.isLongForm(made.shortForm))
        #expect(PeerDID4.shortForm(made.did) == made.shortForm && PeerDID4.shortForm(made.shortForm) == made.shortForm)
        #expect(PeerDID4.shortForm("did:peer:2.Vz6Mk") == "did:peer:2.Vz6Mk")
        #expect(PeerDIDMethod(of: made.did) == .peer4 && PeerDIDMethod(of: made.shortForm) == .peer4)
    }

    @Test func theDocumentReadsBackWithOurKeyAndEndpoint() throws {
        let key = Ed25519KeyPair.generate()
        let made = try PeerDIDMethod.peer4.make(verkey: key.verkey, serviceEndpoint: "https://aerie.example/a\"b")
        let doc = try JSONValue(parsing: String(decoding: try PeerDID4.documentJSON(made.did), as: UTF8.self))
        let method = try #require(Self.first(doc["verificationMethod"]))
        #expect(method["publicKeyMultibase"]?.stringValue == (try DIDKey.multibase(verkey: key.verkey)))
        #expect(method["id"] == "#key-0" && method["type"] == "Multikey")
        #expect(doc["authentication"] == ["#key-0"] && doc["keyAgreement"] == ["#key-0"])
        let service = try #require(Self.first(doc["service"]))
        #expect(service["type"] == "did-communication" && service["recipientKeys"] == ["#key-0"])
        #expect(service["serviceEndpoint"] == "https://aerie.example/a\"b")
        #expect(doc["@context"] == ["https://www.w3.org/ns/did/v1", "https://w3id.org/security/multikey/v1"])
    }

    @Test func aTamperedOrShortOrOversizedDIDIsNotRead() throws {
        #expect(try PeerDID4.documentJSON(Self.acapy).count > 0)
        var tampered = Array(Self.acapy)
        tampered[tampered.count - 3] = tampered[tampered.count - 3] == "a" ? "b" : "a"
        let otherHash = try PeerDIDMethod.peer4.make(verkey: Ed25519KeyPair.generate().verkey, serviceEndpoint: Self.endpoint)
        let swapped = otherHash.shortForm + Self.acapy.dropFirst(Self.acapyShort.count)
        for bad in [String(tampered), swapped, Self.acapyShort, Self.acapy + String(repeating: "1", count: PeerDID4.maxLength)] {
            #expect(throws: CryptoError.self, "\(bad.prefix(60))") { try PeerDID4.documentJSON(bad) }
        }
        // An endpoint that makes the DID longer than any peer would read is refused when made.
        let long = "https://aerie.example/" + String(repeating: "a", count: PeerDID4.maxLength)
        #expect(throws: CryptoError.self) { try PeerDIDMethod.peer4.make(verkey: Ed25519KeyPair.generate().verkey, serviceEndpoint: long) }
    }

    static func first(_ value: JSONValue?) -> JSONValue? {
        guard case .array(let items)? = value else { return nil }
        return items.first
    }

    @Test func aDIDPeer2IsMadeAsBefore() throws {
        let verkey = try Base58.decode(Self.verkey)
        let made = try PeerDIDMethod.peer2.make(verkey: verkey, serviceEndpoint: Self.endpoint)
        #expect(made.did == (try PeerDID2.make(verkey: verkey, serviceEndpoint: Self.endpoint)))
        #expect(made.shortForm == made.did && made.method == .peer2 && PeerDIDMethod(of: made.did) == .peer2)
        #expect(PeerDIDMethod(of: "did:peer:1zQm") == nil && PeerDIDMethod(of: "did:sov:abc") == nil)
        #expect(throws: AerieError.self) { try PeerDIDMethod.parameter("did:peer:1") }
        #expect(try PeerDIDMethod.parameter(nil) == nil && PeerDIDMethod.parameter("did:peer:4") == .peer4)
    }
}
