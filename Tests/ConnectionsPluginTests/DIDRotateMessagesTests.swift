import AerieCore
import AerieCrypto
import Testing

@testable import ConnectionsPlugin

/// DID Rotate 1.0 (RFC 0794) messages, pure: a peer's `to_did` resolved or refused with the RFC's
/// code, and the messages we write.
@Suite(.timeLimit(.minutes(5))) struct DIDRotateMessagesTests {
    static func rotate(_ did: JSONValue?) -> JSONValue {
        var fields: [String: JSONValue] = ["@type": .string(DIDRotateMessages.rotateType), "@id": "r-1"]
        if let did { fields["to_did"] = did }
        return .object(fields)
    }

    static func problem(_ did: JSONValue?) -> DIDRotateMessages.Problem? {
        guard case .failure(let refusal) = DIDRotateMessages.readRotate(rotate(did)).peer else { return nil }
        return refusal.problem
    }

    @Test func aDIDPeer2ResolvesToItsKeyEndpointAndRoutingKeys() throws {
        let key = Ed25519KeyPair.generate()
        let mediator = Ed25519KeyPair.generate()
        let did = try PeerDID2.make(
            verkey: key.verkey, serviceEndpoint: "https://peer.example/didcomm",
            routingKeys: [try DIDKey.did(verkey: mediator.verkey)])
        let read = DIDRotateMessages.readRotate(Self.rotate(.string(did)))
        #expect(read.toDid == did)
        let peer = try read.peer.get()
        #expect(peer.did == did)
        #expect(peer.verkey == Base58.encode(key.verkey))
        #expect(peer.endpoint == "https://peer.example/didcomm")
        #expect(peer.routingKeys == [Base58.encode(mediator.verkey)])
    }

    @Test func eachRefusalHasTheRFCsCode() throws {
        let key = Ed25519KeyPair.generate()
        // The method is not one resolved here.
        #expect(Self.problem("did:sov:WRfXPg8dantKVubE3HX8pw") == .methodUnsupported)
        #expect(Self.problem("did:web:example.com") == .methodUnsupported)
        #expect(Self.problem("WRfXPg8dantKVubE3HX8pw") == .methodUnsupported)
        // A method resolved here, but this DID does not resolve.
        #expect(Self.problem("did:peer:2.garbage") == .unresolvable)
        #expect(Self.problem("did:peer:4zQmNotAShortFormThatResolves") == .unresolvable)
        #expect(Self.problem("did:key:zNotAKey") == .unresolvable)
        // A did:peer:1 resolves only with its document, which a rotate cannot carry.
        #expect(Self.problem("did:peer:1zQmZMygzYqNwU6Uhmewx5Xepf2VLp5S4HLSwwgf2aiKZuwa") == .unresolvable)
        #expect(Self.problem(nil) == .unresolvable)
        #expect(Self.problem(42) == .unresolvable)
        #expect(Self.problem("") == .unresolvable)
        // Resolves, but names no DIDComm service.
        #expect(Self.problem(.string(try DIDKey.did(verkey: key.verkey))) == .docUnsupported)
        #expect(Self.problem(.string("did:peer:2.V" + (try DIDKey.multibase(verkey: key.verkey)))) == .docUnsupported)
    }

    /// A `to_did` over `PeerFieldLimits.did` (or with control characters) is refused without
    /// being parsed, and not echoed back in the problem report.
    @Test func anOversizedDIDIsRefusedAndNotEchoed() throws {
        for did in ["did:peer:2." + String(repeating: "A", count: 1_000_000), "did:peer:2.V\u{1}"] {
            let read = DIDRotateMessages.readRotate(Self.rotate(.string(did)))
            #expect(read.toDid == nil)
            guard case .failure(let refusal) = read.peer else {
                Issue.record("resolved an oversized DID")
                continue
            }
            #expect(refusal.problem == .unresolvable)
            let report = DIDRotateMessages.problemReport(refusal, did: read.toDid, to: "r-1", id: "p-1")
            #expect(report["problem_items"] == [["did": ""]])
        }
    }

    @Test func ourMessagesAreShapedAsTheRFCAndACAPyRead() {
        #expect(DIDRotateMessages.rotate(to: "did:peer:2.x", id: "r-1") == [
            "@type": "https://didcomm.org/did-rotate/1.0/rotate", "@id": "r-1", "to_did": "did:peer:2.x",
        ])
        let ack = DIDRotateMessages.ack(of: "r-1", id: "a-1")
        #expect(ack == ["@type": "https://didcomm.org/did-rotate/1.0/ack", "@id": "a-1", "status": "OK", "~thread": ["thid": "r-1"]])
        let report = DIDRotateMessages.problemReport(
            DIDRotateMessages.Refusal(.unresolvable, "no"), did: "did:peer:2.x", to: "r-1", id: "p-1")
        #expect(report["@type"] == "https://didcomm.org/did-rotate/1.0/problem-report")
        #expect(report["~thread"] == ["thid": "r-1", "pthid": "r-1"])
        #expect(report["description"] == ["en": "no", "code": "e.did.unresolvable"])
        #expect(report["problem_items"] == [["did": "did:peer:2.x"]])
        // An answer names the rotate by thid (ACA-Py) or pthid (the RFC's problem report).
        #expect(DIDRotateMessages.threads(["~thread": ["pthid": "r-2"]]) == ["r-2"])
        #expect(DIDRotateMessages.threads(ack) == ["r-1"])
        #expect(DIDRotateMessages.threads(["@id": "x"]).isEmpty)
    }
}
