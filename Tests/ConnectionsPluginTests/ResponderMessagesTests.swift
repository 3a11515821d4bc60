import AerieCore
import AerieCrypto
import Foundation
import Testing

@testable import ConnectionsPlugin

/// The didexchange 1.0/1.1 responder's pure parts: a did:peer:4 Request (what ACA-Py 1.7.0 sends) is
/// resolved locally, a tampered or short-form one refused; the Response's signed attachment (1.1 `did_rotate~attach`, 1.0 `did_doc~attach`)
/// reads back, signed by the invitation key, as Aerie's own requester side (and ACA-Py) checks it.
@Suite(.timeLimit(.minutes(10))) struct ResponderMessagesTests {
    /// Made by the `did_peer_4` package ACA-Py 1.7.0 uses (`did_peer_4.encode`), for the document
    /// with the did:key spec's first Ed25519 key and endpoint http://peer.example:8020.
    static let peer4 = "did:peer:4zQmNte3upk6NSag9mkD2YrK8sNMdavpgVZrvYD9MHaxPxvg:z7eDJujEWxy7EZQfuCx3NRViEHorQd34uxKaVyQ5cQw11QTwFJ6ZxydDjuAFy1NWtQoMv7vJ3i1gjTqDSjTS3fv2gftgzbDFZzocGqtZ3nbufT1eUjdpAMEz5rGqc2L33GK7Z3veo4NMteeEQ3HYfVFQrLKuX3zPSyNdxFo3BRmLbkMYASXKv4HW95XUt17vZgkqNYB3juyP8R5dbMYvFyR4oTAkLtADPwVyrufLLLTs9EaTZyLoeSMYow1ti99mGdMGo1wFUPbkWtkgTpTH7AXCWBg6sR2PcrPENvPE5wiXwxcncHUgKQdNWCUBEQK8b3kRmwUGVzrvdn4whjXYUuhEMCiY4EigQG4kPnfsw1rTajU3Rqid2B2SRAwR7xxk1AsapB4RY4r49ga5frMwHT2AiWKQXjBpNeqT9411HZA3dZ6m3E73QYg8avWo6KsYcQR8w7LXGHn7CNHz878hX4V4aK6b43TGanpb9jnGrmhnU"

    static func request(did: String) -> JSONValue {
        [
            "@type": "https://didcomm.org/didexchange/1.1/request", "@id": "req-1", "label": "ACA-Py", "did": .string(did),
            "~thread": ["thid": "req-1", "pthid": "inv-1"],
        ]
    }

    @Test func aDIDPeer4RequestIsResolvedLocally() throws {
        let read = try DIDExchangeMessages.readRequest(Self.request(did: Self.peer4))
        #expect(read.peer.verkey == "4zvwRjXUKGfvwnParsHAS3HuSVzV5cA4McphgmoCtajS")
        #expect(read.peer.endpoint == "http://peer.example:8020")
        #expect(read.peer.did == Self.peer4)
        #expect(read.threadId == "req-1" && read.parentThreadId == "inv-1" && read.label == "ACA-Py")
    }

    @Test func tamperedShortOrOversizedDIDPeer4IsRefused() {
        let parts = Self.peer4.split(separator: ":")
        let short = parts.prefix(3).joined(separator: ":")
        var tampered = Array(Self.peer4)
        tampered[tampered.count - 5] = tampered[tampered.count - 5] == "a" ? "b" : "a"
        let oversized = Self.peer4 + String(repeating: "z", count: PeerDID4.maxLength)
        for bad in [short, String(tampered), oversized, "did:peer:4zQm:z", "did:peer:3abc"] {
            #expect(throws: AerieError.self, "\(bad.prefix(40))") { try DIDExchangeMessages.readRequest(Self.request(did: bad)) }
        }
    }

    /// didexchange 1.1 as responder, in each method: the Response carries the DID as first sent
    /// (a did:peer:4 long form), signed; the connection records the form that names it after.
    @Test(arguments: PeerDIDMethod.allCases)
    func theResponseCarriesOurDIDSignedByTheInvitationKey(method: PeerDIDMethod) async throws {
        let invitationKey = Ed25519KeyPair.generate()
        let pairwise = Ed25519KeyPair.generate()
        let (did, response) = try await DIDExchangeMessages.signedResponse(
            version: "1.1", method: method, threadId: "req-1", parentThreadId: "inv-1", verkey: pairwise.verkeyBase58,
            endpoint: "http://aerie.example", invitationKey: invitationKey.verkeyBase58
        ) { invitationKey.sign($0) }
        let sent = try #require(response["did"]?.stringValue)
        #expect(PeerDIDMethod(of: sent) == method)
        switch method {
        case .peer2: #expect(did == sent)
        case .peer4: #expect(PeerDID4.isLongForm(sent) && !PeerDID4.isLongForm(did) && did == PeerDID4.shortForm(sent))
        }
        #expect(response["@type"] == "https://didcomm.org/didexchange/1.1/response")
        #expect(response["~thread"] == ["thid": "req-1", "pthid": "inv-1"])
        #expect(response["did_doc~attach"] == nil)
        let peer = try DIDExchangeMessages.readResponse(response, invitationKey: invitationKey.verkeyBase58)
        #expect(peer.verkey == pairwise.verkeyBase58 && peer.endpoint == "http://aerie.example")
        #expect(throws: CryptoError.self) { try DIDExchangeMessages.readResponse(response, invitationKey: pairwise.verkeyBase58) }
    }

    /// didexchange 1.0 as responder: an unqualified DID and its legacy DIDDoc as a did_doc~attach
    /// signed by the invitation key, which Aerie's own invitee side reads (and refuses when
    /// another key signed it or the document was changed).
    @Test func theVersion10ResponseCarriesOurDIDDocSignedByTheInvitationKey() async throws {
        let invitationKey = Ed25519KeyPair.generate()
        let pairwise = Ed25519KeyPair.generate()
        let (did, response) = try await DIDExchangeMessages.signedResponse(
            version: "1.0", method: .peer4, threadId: "req-1", parentThreadId: "inv-1", verkey: pairwise.verkeyBase58,
            endpoint: "http://aerie.example", invitationKey: invitationKey.verkeyBase58
        ) { invitationKey.sign($0) }
        #expect(did == KeyReference.unqualifiedDID(verkey: pairwise.verkey))
        #expect(response["@type"] == "https://didcomm.org/didexchange/1.0/response")
        #expect(response["did"] == .string(did))
        #expect(response["~thread"] == ["thid": "req-1", "pthid": "inv-1"])
        #expect(response["did_rotate~attach"] == nil)
        #expect(response["did_doc~attach"]?["mime-type"] == "application/json")
        let peer = try DIDExchangeMessages.readResponse(response, invitationKey: invitationKey.verkeyBase58)
        #expect(peer.did == did && peer.verkey == pairwise.verkeyBase58 && peer.endpoint == "http://aerie.example")
        #expect(throws: CryptoError.self) { try DIDExchangeMessages.readResponse(response, invitationKey: pairwise.verkeyBase58) }

        // The document swapped for another key's, the signature left: refused.
        let other = Ed25519KeyPair.generate()
        let forgedDoc = ConnectionMessages.didDoc(did: did, verkey: other.verkeyBase58, endpoint: "http://evil.example")
        guard case .object(var fields) = response, case .object(var attach)? = fields["did_doc~attach"],
            case .object(var data)? = attach["data"]
        else { Issue.record("no did_doc~attach object"); return }
        data["base64"] = .string(Base64.encode(forgedDoc.serialized()))
        attach["data"] = .object(data)
        fields["did_doc~attach"] = .object(attach)
        #expect(throws: CryptoError.self) {
            try DIDExchangeMessages.readResponse(.object(fields), invitationKey: invitationKey.verkeyBase58)
        }
    }

    // MARK: - did:peer:1

    /// `PeerDID1Tests`' genesis document as its owner attaches it (with its `id`, base64).
    static func peer1Attachment(_ text: String) -> JSONValue {
        ["@id": "doc-1", "mime-type": "application/json", "data": ["base64": .string(Base64.encode(Array(text.utf8)))]]
    }

    /// A Request whose did:peer:1 comes with the document it is the hash of: resolved from that
    /// document; another document (a changed endpoint, another key), no document, or a document
    /// of another DID: refused, as a bad did:peer:4 is.
    @Test func aDIDPeer1RequestResolvesOnlyWithItsOwnDocument() throws {
        var request = Self.request(did: PeerDID1Fixture.did)
        guard case .object(var fields) = request else { return }
        fields["did_doc~attach"] = Self.peer1Attachment(PeerDID1Fixture.resolved)
        request = .object(fields)
        let read = try DIDExchangeMessages.readRequest(request)
        #expect(read.peer.did == PeerDID1Fixture.did)
        #expect(read.peer.verkey == "4zvwRjXUKGfvwnParsHAS3HuSVzV5cA4McphgmoCtajS")
        #expect(read.peer.endpoint == "http://peer.example:8020")

        // The stored variant (no id) attached as it is also resolves.
        fields["did_doc~attach"] = Self.peer1Attachment(PeerDID1Fixture.stored)
        #expect(try DIDExchangeMessages.readRequest(.object(fields)).peer.endpoint == "http://peer.example:8020")

        let other = Ed25519KeyPair.generate().verkeyBase58
        let swappedKey = PeerDID1Fixture.resolved.replacingOccurrences(of: "4zvwRjXUKGfvwnParsHAS3HuSVzV5cA4McphgmoCtajS", with: other)
        for forged in [PeerDID1Fixture.resolved.replacingOccurrences(of: "peer.example", with: "evil.example"), swappedKey] {
            fields["did_doc~attach"] = Self.peer1Attachment(forged)
            let error = try #require(throws: CryptoError.self) { try DIDExchangeMessages.readRequest(.object(fields)) }
            #expect(error.message.contains("not the hash"), "\(error)")
        }
        fields["did_doc~attach"] = nil
        let missing = try #require(throws: AerieError.self) { try DIDExchangeMessages.readRequest(.object(fields)) }
        #expect(missing.message.contains("did:peer:1 resolves only with its attached DID document"))
        // A document naming another DID is not this DID's.
        fields["did_doc~attach"] = Self.peer1Attachment(
            PeerDID1Fixture.resolved.replacingOccurrences(of: PeerDID1Fixture.did, with: "did:peer:1zQmOther"))
        #expect(throws: AerieError.self) { try DIDExchangeMessages.readRequest(.object(fields)) }
    }

    /// A didexchange Response (1.0 shape, or 1.1's fallback) naming a did:peer:1 with its
    /// document signed by the invitation key: resolved when the DID is the document's hash,
    /// refused when it is not, even with a good signature; a 1.1 `did_rotate~attach` naming a
    /// did:peer:1 takes its document from an unsigned `did_doc~attach` beside it (its hash is
    /// what was signed), and is refused without one.
    @Test func aDIDPeer1ResponseResolvesOnlyWithItsOwnDocument() async throws {
        let invitationKey = Ed25519KeyPair.generate()
        func response(did: String, document: String) async throws -> JSONValue {
            let attachment = try await SignedAttachment.make(
                Array(document.utf8), mimeType: "application/json", verkey: invitationKey.verkeyBase58) { invitationKey.sign($0) }
            return DIDExchangeMessages.response(
                version: "1.1", threadId: "req-1", parentThreadId: "inv-1", did: did, signedAttachment: attachment)
        }
        // `response(version: "1.1")` names the attachment did_rotate~attach: rename it.
        func withDocAttach(_ message: JSONValue) -> JSONValue {
            guard case .object(var fields) = message else { return message }
            fields["did_doc~attach"] = fields.removeValue(forKey: "did_rotate~attach")
            return .object(fields)
        }
        let good = withDocAttach(try await response(did: PeerDID1Fixture.did, document: PeerDID1Fixture.resolved))
        let peer = try DIDExchangeMessages.readResponse(good, invitationKey: invitationKey.verkeyBase58)
        #expect(peer.did == PeerDID1Fixture.did && peer.endpoint == "http://peer.example:8020")
        let forged = withDocAttach(try await response(
            did: PeerDID1Fixture.did, document: PeerDID1Fixture.resolved.replacingOccurrences(of: "peer.example", with: "evil.example")))
        #expect(throws: CryptoError.self) { try DIDExchangeMessages.readResponse(forged, invitationKey: invitationKey.verkeyBase58) }

        // 1.1: the DID signed, its document beside it.
        let signedDID = try await SignedAttachment.make(
            Array(PeerDID1Fixture.did.utf8), mimeType: "text/string", verkey: invitationKey.verkeyBase58) { invitationKey.sign($0) }
        var rotate = DIDExchangeMessages.response(
            version: "1.1", threadId: "req-1", parentThreadId: "inv-1", did: PeerDID1Fixture.did, signedAttachment: signedDID)
        #expect(throws: AerieError.self) { try DIDExchangeMessages.readResponse(rotate, invitationKey: invitationKey.verkeyBase58) }
        guard case .object(var fields) = rotate else { return }
        fields["did_doc~attach"] = Self.peer1Attachment(PeerDID1Fixture.resolved)
        rotate = .object(fields)
        #expect(try DIDExchangeMessages.readResponse(rotate, invitationKey: invitationKey.verkeyBase58).verkey
            == "4zvwRjXUKGfvwnParsHAS3HuSVzV5cA4McphgmoCtajS")
        fields["did_doc~attach"] = Self.peer1Attachment(PeerDID1Fixture.resolved.replacingOccurrences(of: "8020", with: "8021"))
        #expect(throws: CryptoError.self) {
            try DIDExchangeMessages.readResponse(.object(fields), invitationKey: invitationKey.verkeyBase58)
        }
    }
}

/// `PeerDID1Tests`' vector (AerieCryptoTests), for the handshake tests: a Credo-shaped genesis
/// document and its did:peer:1, computed with Python's hashlib and base58.
enum PeerDID1Fixture {
    static let did = "did:peer:1zQmNfBxRXS5uFGLN8Ag6gzyXe78aGiqAwX3kF2miwcGo5d5"
    static let stored =
        ##"{"@context":["https://w3id.org/did/v1"],"service":[{"id":"#inline-0","serviceEndpoint":"http://peer.example:8020","type":"did-communication","priority":0,"recipientKeys":["#key-1"],"routingKeys":[]}],"verificationMethod":[{"id":"#key-1","type":"Ed25519VerificationKey2018","controller":"#id","publicKeyBase58":"4zvwRjXUKGfvwnParsHAS3HuSVzV5cA4McphgmoCtajS"}],"authentication":["#key-1"]}"##
    /// As Credo attaches it: the `id` second.
    static let resolved = stored.replacingOccurrences(
        of: #""service":"#, with: #""id":"\#(did)","service":"#, options: [], range: nil)
}
