import AerieCore
import Foundation
import Testing

@testable import AerieCrypto

/// did:peer:1: the hash of the stored variant of its genesis document, checked against the
/// document as attached (stored variant, or resolved variant with its root `id`, compact or
/// `", "`-separated); any other document, a changed byte, or a DID that is not numalgo 1 refused.
@Suite(.timeLimit(.minutes(5))) struct PeerDID1Tests {
    /// The members of a genesis document shaped as Credo makes them (one Ed25519 key, the did:key
    /// spec's first, and one did-communication service), without `id`.
    static let members = [
        #""@context":["https://w3id.org/did/v1"]"#,
        ##""service":[{"id":"#inline-0","serviceEndpoint":"http://peer.example:8020","type":"did-communication","priority":0,"recipientKeys":["#key-1"],"routingKeys":[]}]"##,
        ##""verificationMethod":[{"id":"#key-1","type":"Ed25519VerificationKey2018","controller":"#id","publicKeyBase58":"4zvwRjXUKGfvwnParsHAS3HuSVzV5cA4McphgmoCtajS"}]"##,
        ##""authentication":["#key-1"]"##,
    ]
    /// The document compact, and as Python's `json.dumps` writes it (`", "` and `": "`).
    static let stored = document(members)
    static let spaced = document(spacedMembers, separator: ", ")
    /// Computed independently of Aerie, with Python (`hashlib.sha256` and the `base58` package of
    /// .interop/venv-1.7.0): "did:peer:1z" + b58encode(b"\x12\x20" + sha256(text)).
    static let did = "did:peer:1zQmNfBxRXS5uFGLN8Ag6gzyXe78aGiqAwX3kF2miwcGo5d5"
    static let spacedDid = "did:peer:1zQmNPQ2NEoNPHnNPcYxu7ckkgwVhpcEHa51ZqBQKYRhL3qW"

    static var spacedMembers: [String] {
        members.map {
            $0.replacingOccurrences(of: "\":", with: "\": ").replacingOccurrences(of: ",\"", with: ", \"")
                .replacingOccurrences(of: ",{", with: ", {")
        }
    }

    static func document(_ members: [String], separator: String = ",") -> String {
        "{" + members.joined(separator: separator) + "}"
    }

    /// The resolved variant, as attached: `"id": did` inserted as member `position`.
    static func resolved(_ members: [String], did: String, position: Int, separator: String = ",", colon: String = ":") -> String {
        var all = members
        all.insert("\"id\"\(colon)\"\(did)\"", at: position)
        return document(all, separator: separator)
    }

    @Test func theDIDIsTheHashOfTheStoredVariant() throws {
        #expect(PeerDID1.did(storedVariant: Array(Self.stored.utf8)) == Self.did)
        #expect(PeerDID1.did(storedVariant: Array(Self.spaced.utf8)) == Self.spacedDid)
        try PeerDID1.verify(Self.did, document: Array(Self.stored.utf8))
        try PeerDID1.verify(Self.spacedDid, document: Array(Self.spaced.utf8))
    }

    /// The resolved variant (with its `id`) as attached, wherever the `id` is: first, inside, last.
    @Test(arguments: [0, 1, 4])
    func theResolvedVariantVerifiesWithItsIDLeftOut(position: Int) throws {
        let compact = Self.resolved(Self.members, did: Self.did, position: position)
        #expect(try JSONValue(parsing: compact)["id"] == .string(Self.did))
        try PeerDID1.verify(Self.did, document: Array(compact.utf8))
        let spaced = Self.resolved(Self.spacedMembers, did: Self.spacedDid, position: position, separator: ", ", colon: ": ")
        try PeerDID1.verify(Self.spacedDid, document: Array(spaced.utf8))
        // Only the root `id` is left out, not the keys' and services' own.
        #expect(try JSONObjectText(Array(compact.utf8)).removing("id") == Array(Self.stored.utf8))
    }

    @Test func anotherDocumentOrDIDIsRefused() {
        var changed = Array(Self.stored.utf8)
        changed[changed.count - 5] ^= 0x01
        let other = Self.stored.replacingOccurrences(of: "8020", with: "8021")
        let cases: [(String, String)] = [
            (Self.did, String(decoding: changed, as: UTF8.self)),
            (Self.did, other),
            (Self.did, Self.resolved(Self.members.map { $0.replacingOccurrences(of: "8020", with: "8021") }, did: Self.did, position: 1)),
            (Self.did, Self.spaced),
            (Self.did, ""),
            (Self.did, "{\"id\":"),
            (Self.did, String(repeating: "[", count: 10_000)),
            ("did:peer:1zQmXYZ", Self.stored),
            ("did:peer:2.Ez6Mk", Self.stored),
            ("did:peer:1" + String(repeating: "z", count: 100), Self.stored),
        ]
        for (did, document) in cases {
            #expect(throws: CryptoError.self, "\(did.prefix(20)) \(document.prefix(30))") {
                try PeerDID1.verify(did, document: Array(document.utf8))
            }
        }
    }
}
