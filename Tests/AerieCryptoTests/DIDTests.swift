import Testing

@testable import AerieCrypto

@Suite(.timeLimit(.minutes(5))) struct DIDTests {
    /// did:key spec vectors (w3c-ccg/did-method-key test-vectors/ed25519-x25519.json).
    static let didKeyVectors = [
        ("did:key:z6MkiTBz1ymuepAQ4HEHYSF1H8quG5GLVVQR3djdX3mDooWp", "4zvwRjXUKGfvwnParsHAS3HuSVzV5cA4McphgmoCtajS"),
        ("did:key:z6MkjchhfUsD6mmvni8mCdXHw216Xrm9bQe2mBH1P5RDjVJG", "6ASf5EcmmEHTgDJ4X4ZT5vT6iHVJBXPg5AN5YoTCpGWt"),
        ("did:key:z6MknGc3ocHs3zdPiJbnaaqDi58NGb4pk1Sp9WxWufuXSdxf", "8pM1DN3RiT8vbom5u1sNryaNT1nyL8CTTW3b5PwWXRBH"),
        ("did:key:z6MkvqoYXQfDDJRv8L4wKzxYeuKyVZBfi9Qo6Ro8MiLH3kDQ", "HPYVwAQmskwT1qEEeRzhoomyfyupJGASQQtCXSNG8XS2"),
        ("did:key:z6MkwW6aqMnjgrhJXFUko3NnZPGzVpkNzhYK7yEhnsibmLwL", "J3qYF7YJMKCqQke47UQwiHizgFUXapHxRxKmxbkar89x"),
    ]

    @Test(arguments: didKeyVectors)
    func didKeyBothWays(did: String, verkey: String) throws {
        #expect(try DIDKey.did(verkeyBase58: verkey) == did)
        #expect(try Base58.encode(DIDKey.verkey(from: did)) == verkey)
        let id = String(did.dropFirst("did:key:".count))
        #expect(try Base58.encode(DIDKey.verkey(from: "\(did)#\(id)")) == verkey)
        #expect(try KeyReference.verkeyBase58(from: "\(did)#\(id)") == verkey)
        #expect(try KeyReference.verkeyBase58(from: verkey) == verkey)
        #expect(try DIDKey.keyReference(verkey: Base58.decode(verkey)) == "\(did)#\(id)")
    }

    @Test func didKeyRejects() {
        for bad in [
            "did:key:6MkiTBz1ymuepAQ4HEHYSF1H8quG5GLVVQR3djdX3mDooWp",  // no multibase prefix
            "did:key:z6LShs9GGnqk85isEBzzshkuVWrVKsRp24GnDuHk8QWkARMW",  // X25519, not Ed25519
            "did:key:z6MkiTBz1ymuepAQ4HEHYSF1H8quG5GLVVQR3djdX3mDooW",  // truncated
            "did:key:z6MkiTBz1ymuepAQ4HEHYSF1H8quG5GLVVQR3djdX3mDooWp#z6MkjchhfUsD6mmvni8mCdXHw216Xrm9bQe2mBH1P5RDjVJG",
            "did:key:z0OIl", "did:sov:123", "",
        ] {
            #expect(throws: CryptoError.self, "\(bad)") { try DIDKey.verkey(from: bad) }
        }
        #expect(throws: CryptoError.self) { try KeyReference.verkey(from: "did:sov:WgWxqztrNooG92RXvxSTWv") }
        #expect(throws: CryptoError.self) { try KeyReference.verkey(from: "2NEpo7TZRRrLZSi2U") }  // 12 bytes
        #expect(throws: CryptoError.self) { try DIDKey.did(verkey: [1, 2, 3]) }
    }

    @Test func unqualifiedDID() throws {
        // Indy: the DID is base58 of the verkey's first 16 bytes; value cross-checked with ACA-Py's
        // default_did_from_verkey.
        let verkey = try Base58.decode("4zvwRjXUKGfvwnParsHAS3HuSVzV5cA4McphgmoCtajS")
        #expect(KeyReference.unqualifiedDID(verkey: verkey) == Base58.encode(verkey.prefix(16)))
        #expect(KeyReference.unqualifiedDID(verkey: verkey) == "8LXvA8e8DEoLfxxdtohXHU")
    }

    /// Generated with the did_peer_2 package ACA-Py 1.2.7 uses, in ACA-Py's own shape
    /// (create_did_peer_2: V + E keys, did-communication service, recipientKeys #key-1).
    static let acapyPeerDID =
        "did:peer:2.Vz6MkiTBz1ymuepAQ4HEHYSF1H8quG5GLVVQR3djdX3mDooWp.Ez6LShs9GGnqk85isEBzzshkuVWrVKsRp24GnDuHk8QWkARMW.SeyJpZCI6IiNkaWRjb21tLTAiLCJ0IjoiZGlkLWNvbW11bmljYXRpb24iLCJwcmlvcml0eSI6MCwicmVjaXBpZW50S2V5cyI6WyIja2V5LTEiXSwiciI6WyJkaWQ6a2V5Ono2TWtqY2hoZlVzRDZtbXZuaThtQ2RYSHcyMTZYcm05YlFlMm1CSDFQNVJEalZKRyN6Nk1ramNoaGZVc0Q2bW12bmk4bUNkWEh3MjE2WHJtOWJRZTJtQkgxUDVSRGpWSkciXSwicyI6Imh0dHA6Ly9leGFtcGxlLm9yZy9kaWRjb21tIn0"

    @Test func peerDID2FromACAPy() throws {
        let peer = try PeerDID2(Self.acapyPeerDID + "#key-1")
        #expect(peer.did == Self.acapyPeerDID)
        #expect(peer.keys.count == 2)
        #expect(peer.keys[0].id == "#key-1" && peer.keys[0].purpose == .authentication && peer.keys[0].type == .ed25519)
        #expect(peer.keys[0].verkeyBase58 == "4zvwRjXUKGfvwnParsHAS3HuSVzV5cA4McphgmoCtajS")
        #expect(peer.keys[1].id == "#key-2" && peer.keys[1].purpose == .keyAgreement && peer.keys[1].type == .x25519)
        #expect(Base58.encode(peer.keys[1].publicKey) == "7By6kV2t2d188odEM4ExAve1UithKT6dLva4dwsDT3ak")
        #expect(peer.services.count == 1)
        let service = peer.services[0]
        #expect(service.id == "#didcomm-0" && service.type == "did-communication")
        #expect(service.serviceEndpoint == "http://example.org/didcomm")
        #expect(service.recipientKeys == ["#key-1"])
        let didcomm = try #require(try peer.didCommService())
        #expect(didcomm.recipientKeys == ["4zvwRjXUKGfvwnParsHAS3HuSVzV5cA4McphgmoCtajS"])
        #expect(didcomm.routingKeys == ["6ASf5EcmmEHTgDJ4X4ZT5vT6iHVJBXPg5AN5YoTCpGWt"])
        #expect(didcomm.serviceEndpoint == "http://example.org/didcomm")
    }

    /// DIDCommMessaging with an endpoint object and abbreviations, two services (ids
    /// #service and #service-1 as the did_peer_2 resolver assigns them).
    @Test func peerDID2DIDCommMessaging() throws {
        let did =
            "did:peer:2.Vz6MkiTBz1ymuepAQ4HEHYSF1H8quG5GLVVQR3djdX3mDooWp.Ez6LShs9GGnqk85isEBzzshkuVWrVKsRp24GnDuHk8QWkARMW.SeyJ0IjoiZG0iLCJzIjp7InVyaSI6Imh0dHBzOi8vZXhhbXBsZS5jb20vZW5kcG9pbnQiLCJyIjpbImRpZDprZXk6ejZNa2pjaGhmVXNENm1tdm5pOG1DZFhIdzIxNlhybTliUWUybUJIMVA1UkRqVkpHIl0sImEiOlsiZGlkY29tbS92MiJdfX0.SeyJ0IjoiZG0iLCJzIjoiaHR0cHM6Ly9zZWNvbmQuZXhhbXBsZSJ9"
        let peer = try PeerDID2(did)
        #expect(peer.services.map(\.id) == ["#service", "#service-1"])
        #expect(peer.services.map(\.type) == ["DIDCommMessaging", "DIDCommMessaging"])
        #expect(peer.services[0].serviceEndpoint == "https://example.com/endpoint")
        #expect(peer.services[0].accept == ["didcomm/v2"])
        #expect(peer.services[1].serviceEndpoint == "https://second.example")
        let didcomm = try #require(try peer.didCommService())
        // No recipientKeys in the service: the V key serves.
        #expect(didcomm.recipientKeys == ["4zvwRjXUKGfvwnParsHAS3HuSVzV5cA4McphgmoCtajS"])
        #expect(didcomm.routingKeys == ["6ASf5EcmmEHTgDJ4X4ZT5vT6iHVJBXPg5AN5YoTCpGWt"])
    }

    @Test func peerDID2Make() throws {
        let verkey = try Base58.decode("4zvwRjXUKGfvwnParsHAS3HuSVzV5cA4McphgmoCtajS")
        let did = try PeerDID2.make(
            verkey: verkey, serviceEndpoint: "https://aerie.example/didcomm",
            routingKeys: ["6ASf5EcmmEHTgDJ4X4ZT5vT6iHVJBXPg5AN5YoTCpGWt"])
        #expect(
            did.hasPrefix(
                "did:peer:2.Vz6MkiTBz1ymuepAQ4HEHYSF1H8quG5GLVVQR3djdX3mDooWp.Ez6LShs9GGnqk85isEBzzshkuVWrVKsRp24GnDuHk8QWkARMW.S"
            ))
        let peer = try PeerDID2(did)
        let service = try #require(try peer.didCommService())
        #expect(
            service
                == DIDCommService(
                    serviceEndpoint: "https://aerie.example/didcomm",
                    recipientKeys: ["4zvwRjXUKGfvwnParsHAS3HuSVzV5cA4McphgmoCtajS"],
                    routingKeys: ["6ASf5EcmmEHTgDJ4X4ZT5vT6iHVJBXPg5AN5YoTCpGWt"]))
        #expect(
            peer.services[0].routingKeys == [
                "did:key:z6MkjchhfUsD6mmvni8mCdXHw216Xrm9bQe2mBH1P5RDjVJG#z6MkjchhfUsD6mmvni8mCdXHw216Xrm9bQe2mBH1P5RDjVJG"
            ])
        #expect(throws: CryptoError.self) { try PeerDID2.make(verkey: [1], serviceEndpoint: "x") }
    }

    @Test func peerDID2Rejects() throws {
        for bad in [
            "did:peer:2", "did:peer:2.", "did:peer:4.abc",
            "did:peer:2.Xz6MkiTBz1ymuepAQ4HEHYSF1H8quG5GLVVQR3djdX3mDooWp",
            "did:peer:2.V6MkiTBz", "did:peer:2.Vz0OIl", "did:peer:2.S!!!", "did:peer:2.SeyJ0IjoiZG0ifQ",  // service without endpoint
            "did:peer:2.Vz6MkiTBz1ymuepAQ4HEHYSF1H8quG5GLVVQR3djdX3mDooWp..Ez6LS",
        ] {
            #expect(throws: CryptoError.self, "\(bad)") { try PeerDID2(bad) }
        }
        // A reference to a key it does not have.
        let peer = try PeerDID2("did:peer:2.Vz6MkiTBz1ymuepAQ4HEHYSF1H8quG5GLVVQR3djdX3mDooWp")
        #expect(throws: CryptoError.self) { try peer.verkeyBase58(forReference: "#key-7") }
        #expect(try peer.didCommService() == nil)
    }
}
