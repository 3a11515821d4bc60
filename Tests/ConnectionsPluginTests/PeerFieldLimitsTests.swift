import AerieCore
import AerieCrypto
import Foundation
import Testing

@testable import ConnectionsPlugin

/// Every field a peer writes is bounded by `PeerFieldLimits`, the same in both handshakes
/// (Requests and Responses) and in invitations, and refused (never truncated) over its limit;
/// a peer's DID belongs to its key (`PeerDIDBinding`).
@Suite(.timeLimit(.minutes(10))) struct PeerFieldLimitsTests {
    static let endpoint = "http://peer.example:8020"
    /// The ledger DID an impersonator claims.
    static let government = "did:sov:WRfXPg8dantKVubE3HX8pw"

    static func unqualifiedDID(_ key: Ed25519KeyPair) -> String { KeyReference.unqualifiedDID(verkey: key.verkey) }

    static func connectionsRequest(
        did: String, doc: JSONValue, label: String = "Alice", thid: String = "req-1", pthid: String = "inv-1"
    ) -> JSONValue {
        [
            "@type": .string(ConnectionMessages.requestType), "@id": "req-1", "label": .string(label),
            "connection": ["DID": .string(did), "DIDDoc": doc], "~thread": ["thid": .string(thid), "pthid": .string(pthid)],
        ]
    }

    static func connectionsRequest(key: Ed25519KeyPair, label: String = "Alice", thid: String = "req-1", pthid: String = "inv-1")
        -> JSONValue
    {
        let did = unqualifiedDID(key)
        return connectionsRequest(
            did: did, doc: ConnectionMessages.didDoc(did: did, verkey: key.verkeyBase58, endpoint: endpoint), label: label,
            thid: thid, pthid: pthid)
    }

    /// A legacy DIDDoc of `did` with `key`, its one service changed by `edit`.
    static func doc(did: String, key: Ed25519KeyPair, edit: (inout [String: JSONValue]) -> Void) -> JSONValue {
        guard case .object(var fields) = ConnectionMessages.didDoc(did: did, verkey: key.verkeyBase58, endpoint: endpoint),
            case .array(let services)? = fields["service"], case .object(var service)? = services.first
        else { preconditionFailure("didDoc shape") }
        edit(&service)
        fields["service"] = .array([.object(service)])
        return .object(fields)
    }

    static func exchangeRequest(version: String, did: String, attach: JSONValue?) -> JSONValue {
        var fields: [String: JSONValue] = [
            "@type": .string(DIDExchangeMessages.type("request", version: version)), "@id": "req-1", "label": "Alice",
            "did": .string(did), "~thread": ["thid": "req-1", "pthid": "inv-1"],
        ]
        if let attach { fields["did_doc~attach"] = attach }
        return .object(fields)
    }

    static func attached(_ doc: JSONValue, signedBy signer: Ed25519KeyPair?) async throws -> JSONValue {
        guard let signer else {
            return ["@id": "doc", "mime-type": "application/json", "data": ["base64": .string(Base64.encode(doc.serialized()))]]
        }
        return try await SignedAttachment.make(doc.serialized(), mimeType: "application/json", verkey: signer.verkeyBase58) {
            signer.sign($0)
        }
    }

    static func keys(_ count: Int) -> [JSONValue] {
        (0..<count).map { _ in .string(Ed25519KeyPair.generate().verkeyBase58) }
    }

    static func expectInvalidParams(_ message: Comment, _ body: () throws -> Void) {
        do {
            try body()
            Issue.record("not refused: \(message)")
        } catch let error as AerieError {
            #expect(error.code == .invalidParams, message)
        } catch {
            Issue.record("\(message): \(error)")
        }
    }

    static func expectUnbound(_ message: Comment, containing reason: String, _ body: () throws -> Void) {
        do {
            try body()
            Issue.record("not refused: \(message)")
        } catch let error as CryptoError {
            #expect(error.code == .invalidDID, message)
            #expect(error.message.contains(reason), "\(message): \(error.message)")
        } catch {
            Issue.record("\(message): \(error)")
        }
    }

    // MARK: - Limits: connections/1.0 Requests

    @Test func aConnectionsRequestWithA700000CharacterDIDIsRefused() {
        let key = Ed25519KeyPair.generate()
        let did = String(repeating: "A", count: 700_000)
        let request = Self.connectionsRequest(
            did: did, doc: ConnectionMessages.didDoc(did: did, verkey: key.verkeyBase58, endpoint: Self.endpoint))
        Self.expectInvalidParams("700,000-character DID") { _ = try ConnectionMessages.readRequest(request) }
    }

    @Test func aGenuineConnectionsRequestAtEveryLimitIsRead() throws {
        let key = Ed25519KeyPair.generate()
        let label = String(repeating: "é", count: PeerFieldLimits.text.maxBytes / 2)
        let thid = String(repeating: "t", count: PeerFieldLimits.id.maxBytes)
        let read = try ConnectionMessages.readRequest(Self.connectionsRequest(key: key, label: label, thid: thid, pthid: thid))
        #expect(read.label == label && read.threadId == thid && read.parentThreadId == thid)
        #expect(read.peer.did == Self.unqualifiedDID(key) && read.peer.verkey == key.verkeyBase58)
    }

    @Test func overLongLabelsAndThreadIdsAreRefusedNotTruncated() {
        let key = Ed25519KeyPair.generate()
        let long = String(repeating: "x", count: PeerFieldLimits.id.maxBytes + 1)
        Self.expectInvalidParams("label") {
            _ = try ConnectionMessages.readRequest(
                Self.connectionsRequest(key: key, label: String(repeating: "x", count: PeerFieldLimits.text.maxBytes + 1)))
        }
        Self.expectInvalidParams("label with control characters") {
            _ = try ConnectionMessages.readRequest(Self.connectionsRequest(key: key, label: "a\u{0}b"))
        }
        Self.expectInvalidParams("thid") { _ = try ConnectionMessages.readRequest(Self.connectionsRequest(key: key, thid: long)) }
        Self.expectInvalidParams("pthid") { _ = try ConnectionMessages.readRequest(Self.connectionsRequest(key: key, pthid: long)) }
    }

    @Test func didDocumentListsEndpointsAndKeysAreBounded() {
        let key = Ed25519KeyPair.generate()
        let did = Self.unqualifiedDID(key)
        let over = PeerFieldLimits.maxListCount + 1
        let cases: [(String, JSONValue)] = [
            ("routing keys", Self.doc(did: did, key: key) { $0["routingKeys"] = .array(Self.keys(over)) }),
            ("recipient keys", Self.doc(did: did, key: key) {
                $0["recipientKeys"] = .array([.string(key.verkeyBase58)] + Self.keys(over - 1))
            }),
            ("endpoint", Self.doc(did: did, key: key) {
                $0["serviceEndpoint"] = .string("http://peer.example/" + String(repeating: "a", count: PeerFieldLimits.url.maxBytes))
            }),
            ("routing key reference length", Self.doc(did: did, key: key) {
                $0["routingKeys"] = [.string("did:key:z" + String(repeating: "1", count: PeerFieldLimits.did.maxBytes))]
            }),
        ]
        for (name, doc) in cases {
            Self.expectInvalidParams(Comment(rawValue: name)) {
                _ = try ConnectionMessages.readRequest(Self.connectionsRequest(did: did, doc: doc))
            }
        }
        guard case .object(var fields) = ConnectionMessages.didDoc(did: did, verkey: key.verkeyBase58, endpoint: Self.endpoint),
            case .array(let services)? = fields["service"], case .array(let publicKeys)? = fields["publicKey"]
        else { Issue.record("didDoc shape"); return }
        var many = fields
        many["service"] = .array(Array(repeating: services[0], count: over))
        var manyKeys = fields
        manyKeys["publicKey"] = .array(Array(repeating: publicKeys[0], count: over))
        var longKey = fields
        longKey["publicKey"] = [["id": "#1", "publicKeyBase58": .string(String(repeating: "1", count: PeerFieldLimits.key.maxBytes + 1))]]
        fields["padding"] = .string(String(repeating: "p", count: PeerFieldLimits.maxDocumentBytes))
        for (name, doc) in [("services", many), ("keys", manyKeys), ("key length", longKey), ("document size", fields)] {
            Self.expectInvalidParams(Comment(rawValue: name)) {
                _ = try ConnectionMessages.readRequest(Self.connectionsRequest(did: did, doc: .object(doc)))
            }
        }
    }

    // MARK: - Limits: didexchange Requests and Responses

    @Test func didexchangeDIDsAreBoundedAlike() throws {
        let over = "did:peer:4z" + String(repeating: "a", count: PeerFieldLimits.did.maxBytes)
        for version in DIDExchangeMessages.versions {
            Self.expectInvalidParams("request did, \(version)") {
                _ = try DIDExchangeMessages.readRequest(Self.exchangeRequest(version: version, did: over, attach: nil))
            }
        }
        Self.expectInvalidParams("response did") {
            _ = try DIDExchangeMessages.readResponse(["did": .string(over)], invitationKey: Ed25519KeyPair.generate().verkeyBase58)
        }
        let key = Ed25519KeyPair.generate()
        let overRouting = (0...PeerFieldLimits.maxListCount).map { _ in Ed25519KeyPair.generate().verkeyBase58 }
        let peer2 = try PeerDID2.make(verkey: key.verkey, serviceEndpoint: Self.endpoint, routingKeys: overRouting)
        Self.expectInvalidParams("did:peer:2 routing keys") {
            _ = try DIDExchangeMessages.readRequest(Self.exchangeRequest(version: "1.1", did: peer2, attach: nil))
        }
        let long = try PeerDID2.make(
            verkey: key.verkey, serviceEndpoint: "http://peer.example/" + String(repeating: "a", count: PeerFieldLimits.url.maxBytes))
        Self.expectInvalidParams("did:peer:2 endpoint") {
            _ = try DIDExchangeMessages.readRequest(Self.exchangeRequest(version: "1.1", did: long, attach: nil))
        }
    }

    @Test func aConnectionsResponseDIDIsBoundedLikeARequest() throws {
        let invitation = Ed25519KeyPair.generate()
        let key = Ed25519KeyPair.generate()
        let did = String(repeating: "A", count: PeerFieldLimits.did.maxBytes + 1)
        let signed = try SignatureDecorator.sign(
            ["DID": .string(did), "DIDDoc": ConnectionMessages.didDoc(did: did, verkey: key.verkeyBase58, endpoint: Self.endpoint)],
            with: invitation)
        let response = ConnectionMessages.response(threadId: "req-1", parentThreadId: nil, signature: signed)
        Self.expectInvalidParams("response DID") {
            _ = try ConnectionMessages.readResponse(response, invitationKey: invitation.verkeyBase58)
        }
    }

    // MARK: - Limits: invitations

    @Test func invitationFieldsAreBoundedByTheSameLimits() throws {
        let key = Ed25519KeyPair.generate().verkeyBase58
        func aries(_ edit: (inout [String: JSONValue]) -> Void) -> JSONValue {
            var fields: [String: JSONValue] = [
                "@type": .string(ConnectionMessages.invitationType), "@id": "inv-1", "label": "Bob",
                "recipientKeys": [.string(key)], "serviceEndpoint": .string(Self.endpoint),
            ]
            edit(&fields)
            return .object(fields)
        }
        _ = try InvitationParser.parse(aries { _ in })
        let tooLongURL = "http://peer.example/" + String(repeating: "a", count: PeerFieldLimits.url.maxBytes)
        let cases: [(String, JSONValue)] = [
            ("label", aries { $0["label"] = .string(String(repeating: "b", count: PeerFieldLimits.text.maxBytes + 1)) }),
            ("imageUrl", aries { $0["imageUrl"] = .string(tooLongURL) }),
            ("endpoint", aries { $0["serviceEndpoint"] = .string(tooLongURL) }),
            ("routing keys", aries { $0["routingKeys"] = .array(Self.keys(PeerFieldLimits.maxListCount + 1)) }),
            ("recipient keys", aries { $0["recipientKeys"] = .array(Self.keys(PeerFieldLimits.maxListCount + 1)) }),
            ("did", aries { $0["did"] = .string("did:web:" + String(repeating: "a", count: PeerFieldLimits.did.maxBytes)) }),
            ("@id", aries { $0["@id"] = .string(String(repeating: "i", count: PeerFieldLimits.id.maxBytes + 1)) }),
        ]
        for (name, invitation) in cases {
            #expect(throws: AerieError.self, Comment(rawValue: name)) { try InvitationParser.parse(invitation) }
        }
        let verkey = Ed25519KeyPair.generate().verkey
        let service: JSONValue = ["id": "#inline", "type": "did-communication", "recipientKeys": [.string(key)],
                                  "serviceEndpoint": .string(Self.endpoint)]
        func outOfBand(_ services: [JSONValue]) -> JSONValue {
            [
                "@type": "https://didcomm.org/out-of-band/1.1/invitation", "@id": "oob-1",
                "handshake_protocols": ["https://didcomm.org/didexchange/1.1"], "services": .array(services),
            ]
        }
        _ = try InvitationParser.parse(outOfBand([service]))
        let routed = try PeerDID2.make(
            verkey: verkey, serviceEndpoint: Self.endpoint,
            routingKeys: (0...PeerFieldLimits.maxListCount).map { _ in Ed25519KeyPair.generate().verkeyBase58 })
        let foreignService = Base64.encodeURL(
            Array(#"{"t":"did-communication","recipientKeys":["\#(key)"],"s":"\#(Self.endpoint)"}"#.utf8))
        let borrowed = "did:peer:2.V" + (try DIDKey.multibase(verkey: verkey)) + ".S" + foreignService
        _ = try InvitationParser.parse(outOfBand([.string(try PeerDID2.make(verkey: verkey, serviceEndpoint: Self.endpoint))]))
        for (name, services) in [
            ("services", Array(repeating: service, count: PeerFieldLimits.maxListCount + 1)),
            ("did:peer:2 routing keys", [.string(routed)]),
            ("did:peer:2 sending to a key not its own", [.string(borrowed)]),
        ] {
            do {
                _ = try InvitationParser.parse(outOfBand(services))
                Issue.record("not refused: \(name)")
            } catch let error as AerieError {
                #expect(error.code == .invalidInvitation, Comment(rawValue: name))
            }
        }
    }

    // MARK: - A peer's DID belongs to its key

    @Test func unqualifiedAndSovDIDsMustDeriveFromTheKey() throws {
        let key = Ed25519KeyPair.generate()
        let did = Self.unqualifiedDID(key)
        #expect(try ConnectionMessages.readRequest(Self.connectionsRequest(key: key)).peer.did == did)
        let sov = Self.connectionsRequest(
            did: "did:sov:\(did)", doc: ConnectionMessages.didDoc(did: did, verkey: key.verkeyBase58, endpoint: Self.endpoint))
        #expect(try ConnectionMessages.readRequest(sov).peer.did == did)
        let claimed = String(Self.government.dropFirst("did:sov:".count))
        for claim in [Self.government, claimed] {
            let request = Self.connectionsRequest(
                did: claim, doc: ConnectionMessages.didDoc(did: claimed, verkey: key.verkeyBase58, endpoint: Self.endpoint))
            Self.expectUnbound(
                "connections/1.0 claiming \(claim)",
                containing: "the DID \(claimed) is not derived from the key the request names and cannot be resolved here"
            ) { _ = try ConnectionMessages.readRequest(request) }
        }
    }

    @Test func didKeyMustBeItsOwnKeyAndOtherMethodsAreNotResolvedHere() throws {
        let key = Ed25519KeyPair.generate()
        let didKey = try DIDKey.did(verkey: key.verkey)
        let own = Self.connectionsRequest(
            did: didKey, doc: ConnectionMessages.didDoc(did: didKey, verkey: key.verkeyBase58, endpoint: Self.endpoint))
        #expect(try ConnectionMessages.readRequest(own).peer.verkey == key.verkeyBase58)
        let otherKey = try DIDKey.did(verkey: Ed25519KeyPair.generate().verkey)
        let other = Self.connectionsRequest(
            did: otherKey, doc: ConnectionMessages.didDoc(did: otherKey, verkey: key.verkeyBase58, endpoint: Self.endpoint))
        Self.expectUnbound("did:key of another key", containing: "is not the key the request names") {
            _ = try ConnectionMessages.readRequest(other)
        }
        let web = Self.connectionsRequest(
            did: "did:web:example.com",
            doc: ConnectionMessages.didDoc(did: "did:web:example.com", verkey: key.verkeyBase58, endpoint: Self.endpoint))
        Self.expectUnbound("did:web", containing: "cannot be resolved here") { _ = try ConnectionMessages.readRequest(web) }
    }

    /// The impersonation: a didexchange Request claiming a ledger DID with a document naming the
    /// attacker's own key, signed by it, in both versions.
    @Test func aDidexchangeRequestClaimingAnotherDIDIsRefused() async throws {
        let attacker = Ed25519KeyPair.generate()
        let doc = ConnectionMessages.didDoc(
            did: String(Self.government.dropFirst("did:sov:".count)), verkey: attacker.verkeyBase58, endpoint: Self.endpoint)
        let attach = try await Self.attached(doc, signedBy: attacker)
        for version in DIDExchangeMessages.versions {
            let request = Self.exchangeRequest(version: version, did: Self.government, attach: attach)
            Self.expectUnbound("didexchange \(version)", containing: "is not derived from the key the request names") {
                _ = try DIDExchangeMessages.readRequest(request)
            }
        }
    }

    /// ACA-Py's didexchange 1.0 Request: an unqualified DID of its key and its DIDDoc signed by
    /// that key; signed by another key, it is refused.
    @Test func aSignedDIDDocAttachmentMustBeSignedByTheKeyItNames() async throws {
        let key = Ed25519KeyPair.generate()
        let did = Self.unqualifiedDID(key)
        let doc = ConnectionMessages.didDoc(did: did, verkey: key.verkeyBase58, endpoint: Self.endpoint)
        let genuine = Self.exchangeRequest(version: "1.0", did: did, attach: try await Self.attached(doc, signedBy: key))
        #expect(try DIDExchangeMessages.readRequest(genuine).peer.verkey == key.verkeyBase58)
        let unsigned = Self.exchangeRequest(version: "1.0", did: did, attach: try await Self.attached(doc, signedBy: nil))
        #expect(try DIDExchangeMessages.readRequest(unsigned).peer.did == did)
        let foreign = Self.exchangeRequest(
            version: "1.0", did: did, attach: try await Self.attached(doc, signedBy: Ed25519KeyPair.generate()))
        #expect(throws: CryptoError.self) { try DIDExchangeMessages.readRequest(foreign) }
    }

    @Test func peerDIDsMustNameTheirOwnKeys() async throws {
        let key = Ed25519KeyPair.generate()
        let peer2 = try PeerDID2.make(verkey: key.verkey, serviceEndpoint: Self.endpoint)
        #expect(try DIDExchangeMessages.readRequest(Self.exchangeRequest(version: "1.1", did: peer2, attach: nil)).peer.verkey
            == key.verkeyBase58)
        // A did:peer:2 of the victim's key whose service sends to the attacker's key.
        let attacker = Ed25519KeyPair.generate()
        let service = Base64.encodeURL(
            Array(#"{"t":"did-communication","recipientKeys":["\#(attacker.verkeyBase58)"],"s":"\#(Self.endpoint)"}"#.utf8))
        let borrowed = "did:peer:2.V" + (try DIDKey.multibase(verkey: key.verkey)) + ".S" + service
        Self.expectUnbound("did:peer:2 naming a foreign recipient key", containing: "not one of its own") {
            _ = try DIDExchangeMessages.readRequest(Self.exchangeRequest(version: "1.1", did: borrowed, attach: nil))
        }
        // A did:peer:2 with a document attached naming another key.
        let doc = ConnectionMessages.didDoc(did: peer2, verkey: attacker.verkeyBase58, endpoint: Self.endpoint)
        let mismatched = Self.exchangeRequest(version: "1.0", did: peer2, attach: try await Self.attached(doc, signedBy: attacker))
        Self.expectUnbound("did:peer:2 with another key's document", containing: "names another key than its DID") {
            _ = try DIDExchangeMessages.readRequest(mismatched)
        }
        // ACA-Py 1.7.0's did:peer:4 (its own key in its service).
        let read = try DIDExchangeMessages.readRequest(
            Self.exchangeRequest(version: "1.1", did: ResponderMessagesTests.peer4, attach: nil))
        #expect(read.peer.did == ResponderMessagesTests.peer4)
    }

    /// As the invitee: a Response signed by the invitation key whose DID is not its key's.
    @Test func responsesNamingAnotherDIDAreRefused() async throws {
        let invitation = Ed25519KeyPair.generate()
        let key = Ed25519KeyPair.generate()
        let claimed = String(Self.government.dropFirst("did:sov:".count))
        let doc = ConnectionMessages.didDoc(did: claimed, verkey: key.verkeyBase58, endpoint: Self.endpoint)
        let attach = try await Self.attached(doc, signedBy: invitation)
        let exchange: JSONValue = [
            "@type": "https://didcomm.org/didexchange/1.0/response", "@id": "resp-1", "did": .string(claimed),
            "did_doc~attach": attach, "~thread": ["thid": "req-1"],
        ]
        Self.expectUnbound("didexchange 1.0 response", containing: "is not derived from the key the response names") {
            _ = try DIDExchangeMessages.readResponse(exchange, invitationKey: invitation.verkeyBase58)
        }
        let signed = try SignatureDecorator.sign(["DID": .string(Self.government), "DIDDoc": doc], with: invitation)
        let connections = ConnectionMessages.response(threadId: "req-1", parentThreadId: nil, signature: signed)
        Self.expectUnbound("connections/1.0 response", containing: "is not derived from the key the response names") {
            _ = try ConnectionMessages.readResponse(connections, invitationKey: invitation.verkeyBase58)
        }
        // Genuine: the pairwise DID of the key.
        let did = Self.unqualifiedDID(key)
        let genuine = try SignatureDecorator.sign(
            ["DID": .string(did), "DIDDoc": ConnectionMessages.didDoc(did: did, verkey: key.verkeyBase58, endpoint: Self.endpoint)],
            with: invitation)
        let read = try ConnectionMessages.readResponse(
            ConnectionMessages.response(threadId: "req-1", parentThreadId: nil, signature: genuine),
            invitationKey: invitation.verkeyBase58)
        #expect(read.did == did && read.verkey == key.verkeyBase58)
    }
}
