import AerieCore
import AerieCrypto
import Foundation
import Testing

@testable import ConnectionsPlugin

/// didexchange (RFC 0023) without I/O: which handshake an invitation gets, the Request's shape,
/// and Response verification and DID resolution, with the right and with a wrong key.
@Suite(.timeLimit(.minutes(10))) struct DIDExchangeTests {
    static let didcomm = "https://didcomm.org/"
    static let legacy = "did:sov:BzCbsNYhMrjHiqZDTUASHg;spec/"

    // MARK: - Protocol choice

    @Test(arguments: [
        (["https://didcomm.org/didexchange/1.1"], HandshakeProtocol.didExchange11),
        (["https://didcomm.org/didexchange/1.0"], .didExchange10),
        (["https://didcomm.org/didexchange/1.0", "https://didcomm.org/didexchange/1.1"], .didExchange10),
        (["https://didcomm.org/didexchange/1.1", "https://didcomm.org/didexchange/1.0"], .didExchange11),
        // any didexchange beats connections/1.0, wherever it is listed
        (["https://didcomm.org/connections/1.0", "https://didcomm.org/didexchange/1.1"], .didExchange11),
        (["https://didcomm.org/didexchange/1.1", "https://didcomm.org/connections/1.0"], .didExchange11),
        (["did:sov:BzCbsNYhMrjHiqZDTUASHg;spec/didexchange/1.0"], .didExchange10),
        (["did:sov:BzCbsNYhMrjHiqZDTUASHg;spec/connections/1.0"], .connections10),
        (["https://didcomm.org/connections/1.0/"], .connections10),
        (["https://didcomm.org/didexchange/2.0", "https://didcomm.org/connections/1.0"], .connections10),
    ])
    func outOfBandChoice(offered: [String], expected: HandshakeProtocol) throws {
        #expect(try HandshakeProtocol.choose(kind: .outOfBand, offered: offered) == expected)
    }

    @Test func ariesInvitationsUseConnections() throws {
        #expect(try HandshakeProtocol.choose(kind: .aries, offered: []) == .connections10)
    }

    @Test func nothingSupportedNamesWhatWasOffered() async {
        await expectAerieError(.unsupportedInvitation, containing: "didexchange/2.0") {
            try HandshakeProtocol.choose(kind: .outOfBand, offered: ["https://didcomm.org/didexchange/2.0"])
        }
        await expectAerieError(.unsupportedInvitation, containing: "outOfBand.accept") {
            try HandshakeProtocol.choose(kind: .outOfBand, offered: [])
        }
        await expectAerieError(.unsupportedInvitation, containing: "proprietary") {
            try HandshakeProtocol.choose(kind: .proprietary, offered: [])
        }
    }

    @Test func versions() {
        #expect(HandshakeProtocol.didExchange11.version == "1.1")
        #expect(HandshakeProtocol.didExchange10.version == "1.0")
        #expect(DIDExchangeMessages.version(of: "https://didcomm.org/didexchange/1.1/response") == "1.1")
        #expect(DIDExchangeMessages.version(of: "https://didcomm.org/didexchange/1.0/problem_report") == "1.0")
        #expect(DIDExchangeMessages.version(of: "https://didcomm.org/connections/1.0/response") == nil)
        #expect(DIDExchangeMessages.version(of: "https://didcomm.org/didexchange/1.2/response") == nil)
    }

    // MARK: - Request

    @Test func requestShapeAndItsDIDResolvesToOurKeyAndEndpoint() throws {
        let key = Ed25519KeyPair.generate()
        let did = try PeerDID2.make(verkey: key.verkey, serviceEndpoint: "http://127.0.0.1:7401")
        let request = DIDExchangeMessages.request(
            version: "1.1", id: "req-1", label: "Alice", did: did, invitationId: "inv-1")
        #expect(request["@type"] == "https://didcomm.org/didexchange/1.1/request")
        #expect(request["@id"] == "req-1")
        #expect(request["label"] == "Alice")
        #expect(request["did"]?.stringValue == did)
        #expect(request["~thread"] == ["thid": "req-1", "pthid": "inv-1"])
        #expect(request["did_doc~attach"] == nil)
        #expect(request["~transport"] == nil)
        let returning = DIDExchangeMessages.request(
            version: "1.0", id: "r", label: "A", did: did, invitationId: "i", returnRoute: true)
        #expect(returning["@type"] == "https://didcomm.org/didexchange/1.0/request")
        #expect(returning["~transport"] == ["return_route": "all"])

        let peer = try DIDExchangeMessages.resolve(did: did, in: "response")
        #expect(peer.verkey == key.verkeyBase58)
        #expect(peer.endpoint == "http://127.0.0.1:7401")
        #expect(peer.routingKeys.isEmpty)
    }

    @Test func completeCarriesBothThreadIds() {
        let complete = DIDExchangeMessages.complete(version: "1.0", id: "c", threadId: "req-1", parentThreadId: "inv-1")
        #expect(complete == ["@type": "https://didcomm.org/didexchange/1.0/complete", "@id": "c", "~thread": ["thid": "req-1", "pthid": "inv-1"]])
    }

    // MARK: - Response

    static func signed(_ payload: [UInt8], mimeType: String, by key: Ed25519KeyPair) async throws -> JSONValue {
        try await SignedAttachment.make(payload, mimeType: mimeType, verkey: key.verkeyBase58) { key.sign($0) }
    }

    /// A 1.1 Response as ACA-Py sends it: its did:peer:2 in `did`, and the same DID signed by the
    /// invitation key in `did_rotate~attach`.
    static func response11(inviter: Ed25519KeyPair, signer: Ed25519KeyPair, theirKey: Ed25519KeyPair,
                           signedDID: String? = nil) async throws -> (JSONValue, String) {
        let did = try PeerDID2.make(verkey: theirKey.verkey, serviceEndpoint: "http://127.0.0.1:8020")
        let attach = try await signed(Array((signedDID ?? did).utf8), mimeType: "text/string", by: signer)
        let message: JSONValue = [
            "@type": "https://didcomm.org/didexchange/1.1/response", "@id": "resp-1", "did": .string(did),
            "did_rotate~attach": attach, "~thread": ["thid": "req-1", "pthid": "inv-1"],
        ]
        return (message, did)
    }

    @Test func response11VerifiesWithTheInvitationKeyAndResolvesTheirDID() async throws {
        let inviter = Ed25519KeyPair.generate()
        let theirs = Ed25519KeyPair.generate()
        let (message, did) = try await Self.response11(inviter: inviter, signer: inviter, theirKey: theirs)
        let peer = try DIDExchangeMessages.readResponse(message, invitationKey: inviter.verkeyBase58)
        #expect(peer.did == did)
        #expect(peer.verkey == theirs.verkeyBase58)
        #expect(peer.endpoint == "http://127.0.0.1:8020")
        #expect(peer.routingKeys == [])
    }

    @Test func response11SignedByAnotherKeyIsRefused() async throws {
        let inviter = Ed25519KeyPair.generate()
        let mallory = Ed25519KeyPair.generate()
        let (message, _) = try await Self.response11(inviter: inviter, signer: mallory, theirKey: Ed25519KeyPair.generate())
        let error = #expect(throws: CryptoError.self) {
            try DIDExchangeMessages.readResponse(message, invitationKey: inviter.verkeyBase58)
        }
        #expect(error?.code == .invalidSignature)
        #expect(error?.message.contains("not the invitation key") == true, "\(String(describing: error))")
    }

    @Test func response11WhoseJWSClaimsTheInvitationKeyButDoesNotVerifyIsRefused() async throws {
        let inviter = Ed25519KeyPair.generate()
        let mallory = Ed25519KeyPair.generate()
        let (message, did) = try await Self.response11(inviter: inviter, signer: inviter, theirKey: Ed25519KeyPair.generate())
        // Same protected header (the invitation key), signature by another key.
        var attach = try #require(message["did_rotate~attach"])
        let protected = try #require(attach["data"]?["jws"]?["protected"]?.stringValue)
        let forged = mallory.sign(Array((protected + "." + Base64.encodeURL(Array(did.utf8))).utf8))
        attach = attach.setting(path: ["data", "jws", "signature"], to: .string(Base64.encodeURL(forged)))
        let tampered = message.setting(path: ["did_rotate~attach"], to: attach)
        let error = #expect(throws: CryptoError.self) {
            try DIDExchangeMessages.readResponse(tampered, invitationKey: inviter.verkeyBase58)
        }
        #expect(error?.code == .invalidSignature)
    }

    @Test func response11SigningAnotherDIDIsRefused() async throws {
        let inviter = Ed25519KeyPair.generate()
        let other = try PeerDID2.make(verkey: Ed25519KeyPair.generate().verkey, serviceEndpoint: "http://127.0.0.1:9")
        let (message, _) = try await Self.response11(
            inviter: inviter, signer: inviter, theirKey: Ed25519KeyPair.generate(), signedDID: other)
        let error = #expect(throws: CryptoError.self) {
            try DIDExchangeMessages.readResponse(message, invitationKey: inviter.verkeyBase58)
        }
        #expect(error?.message.contains("another DID") == true)
    }

    @Test func responseWithoutSignedAttachmentIsRefused() async throws {
        let inviter = Ed25519KeyPair.generate()
        let (message, _) = try await Self.response11(inviter: inviter, signer: inviter, theirKey: Ed25519KeyPair.generate())
        let bare = message.setting(path: ["did_rotate~attach"], to: .null)
        let error = #expect(throws: CryptoError.self) {
            try DIDExchangeMessages.readResponse(bare, invitationKey: inviter.verkeyBase58)
        }
        #expect(error?.code == .malformedSignature)
        // An unsigned attachment is no better.
        var unsigned = try #require(message["did_rotate~attach"])
        unsigned = unsigned.setting(path: ["data", "jws"], to: .null)
        #expect(throws: CryptoError.self) {
            try DIDExchangeMessages.readResponse(
                message.setting(path: ["did_rotate~attach"], to: unsigned), invitationKey: inviter.verkeyBase58)
        }
    }

    /// A 1.0 Response as ACA-Py sends it: an unqualified DID and its legacy DIDDoc signed by the
    /// invitation key in `did_doc~attach`.
    @Test func response10WithSignedLegacyDIDDoc() async throws {
        let inviter = Ed25519KeyPair.generate()
        let theirs = Ed25519KeyPair.generate()
        let did = KeyReference.unqualifiedDID(verkey: theirs.verkey)
        let doc = ConnectionMessages.didDoc(did: did, verkey: theirs.verkeyBase58, endpoint: "http://127.0.0.1:8020")
        let message: JSONValue = [
            "@type": "https://didcomm.org/didexchange/1.0/response", "@id": "resp-1", "did": .string(did),
            "did_doc~attach": try await Self.signed(doc.serialized(), mimeType: "application/json", by: inviter),
            "~thread": ["thid": "req-1", "pthid": "inv-1"],
        ]
        let peer = try DIDExchangeMessages.readResponse(message, invitationKey: inviter.verkeyBase58)
        #expect(peer == .init(did: did, verkey: theirs.verkeyBase58, endpoint: "http://127.0.0.1:8020", routingKeys: []))

        let wrong = Ed25519KeyPair.generate()
        let error = #expect(throws: CryptoError.self) {
            try DIDExchangeMessages.readResponse(message, invitationKey: wrong.verkeyBase58)
        }
        #expect(error?.code == .invalidSignature)

        // The signed document must be the response's DID.
        let otherDoc = ConnectionMessages.didDoc(did: "Zz1234567890123456789", verkey: theirs.verkeyBase58, endpoint: "http://x")
        let mismatched = message.setting(
            path: ["did_doc~attach"],
            to: try await Self.signed(otherDoc.serialized(), mimeType: "application/json", by: inviter))
        await expectAerieError(.invalidParams, containing: "not the response's did") {
            try DIDExchangeMessages.readResponse(mismatched, invitationKey: inviter.verkeyBase58)
        }
    }

    @Test func unresolvableDIDsAndOversizedAttachmentsAreErrorsNotCrashes() async throws {
        await expectAerieError(.invalidParams, containing: "only did:peer:2") {
            try DIDExchangeMessages.resolve(did: "did:web:example.com", in: "response")
        }
        await expectAerieError(.invalidParams, containing: "did:peer:2 is invalid") {
            try DIDExchangeMessages.resolve(did: "did:peer:2.Vz6Mk", in: "response")
        }
        await expectAerieError(.invalidParams, field: "message") {
            try DIDExchangeMessages.readResponse(["did": .string(String(repeating: "a", count: 20_000))], invitationKey: "x")
        }
        let huge: JSONValue = ["data": ["base64": .string(String(repeating: "A", count: PeerFieldLimits.maxAttachmentBase64Bytes + 4))]]
        #expect(throws: CryptoError.self) { try SignedAttachment.verify(huge, expectedSigner: "x") }
    }

}

extension JSONValue {
    /// A copy with the value at `path` (object keys) replaced; `.null` removes it.
    func setting(path: [String], to value: JSONValue) -> JSONValue {
        guard let first = path.first, case .object(var fields) = self else { return self }
        if path.count == 1 {
            if value.isNull { fields[first] = nil } else { fields[first] = value }
        } else {
            fields[first] = (fields[first] ?? .object([:])).setting(path: Array(path.dropFirst()), to: value)
        }
        return .object(fields)
    }
}
