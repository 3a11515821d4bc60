import AerieClient
import AerieCore
import AerieCrypto
import Foundation

/// A didexchange 1.1 inviter whose keys the caller holds, answered by hand: an out-of-band
/// invitation, and the Response a peer signs with its invitation key (the JWS written
/// independently, in ACA-Py's `AttachDecoratorData.sign` format). Tests and benchmarks use it to
/// establish a tenant's connection without a second agent.
public enum HandMadeHandshake {
    /// An out-of-band 1.1 invitation offering didexchange 1.1 (and connections 1.0), reached at
    /// `endpoint` (by default a port nothing listens on).
    public static func invitation(inviter: Ed25519KeyPair, id: String, endpoint: String = "http://127.0.0.1:9") throws -> JSONValue {
        [
            "@type": "https://didcomm.org/out-of-band/1.1/invitation", "@id": .string(id), "label": "Test Inviter",
            "handshake_protocols": ["https://didcomm.org/didexchange/1.1", "https://didcomm.org/connections/1.0"],
            "services": [
                [
                    "id": "#inline", "type": "did-communication",
                    "recipientKeys": [.string(try DIDKey.keyReference(verkey: inviter.verkey))],
                    "serviceEndpoint": .string(endpoint),
                ]
            ],
        ]
    }

    /// `did_rotate~attach` as ACA-Py writes it.
    public static func rotateAttachment(did: String, signedBy key: Ed25519KeyPair) throws -> JSONValue {
        let kid = try DIDKey.did(verkey: key.verkey)
        let protectedJSON: JSONValue = [
            "alg": "EdDSA", "jwk": ["kty": "OKP", "crv": "Ed25519", "x": .string(Base64.encodeURL(key.verkey)), "kid": .string(kid)],
        ]
        let protected = Base64.encodeURL(protectedJSON.serialized())
        let payload = Array(did.utf8)
        let signature = key.sign(Array((protected + "." + Base64.encodeURL(payload)).utf8))
        return [
            "@id": "a1", "mime-type": "text/string",
            "data": [
                "base64": .string(Base64.encode(payload)),
                "jws": ["header": ["kid": .string(kid)], "protected": .string(protected), "signature": .string(Base64.encodeURL(signature))],
            ],
        ]
    }

    /// The inviter's Response to the invitation `invitationId`, naming `theirDid`, signed by `key`.
    public static func response(invitationId: String, theirDid: String, signedBy key: Ed25519KeyPair) throws -> JSONValue {
        [
            "@type": "https://didcomm.org/didexchange/1.1/response", "@id": .string(UUID().uuidString), "did": .string(theirDid),
            "did_rotate~attach": try rotateAttachment(did: theirDid, signedBy: key),
            "~thread": ["pthid": .string(invitationId)],
        ]
    }
}

/// A peer whose every key the caller holds, connected to a tenant by a real didexchange 1.1
/// handshake answered by hand: the tenant accepts an out-of-band invitation of the caller's, and
/// `connections.updateStateWithMessage` applies a Response signed by the invitation key. The
/// connection then knows the peer's verkey, as after any real handshake, so the endpoint takes
/// the peer's authcrypted messages and refuses everyone else's (sender authentication).
public struct HandMadePeer: Sendable {
    public let connectionId: String
    /// Our side: the tenant's pairwise DID and verkey, which the peer packs messages to.
    public let pwDid: String
    public let pwVerkey: String
    /// The peer's pairwise key (its DID's key).
    public let key: Ed25519KeyPair
    public let did: String

    public init(connectionId: String, pwDid: String, pwVerkey: String, key: Ed25519KeyPair, did: String) {
        self.connectionId = connectionId
        self.pwDid = pwDid
        self.pwVerkey = pwVerkey
        self.key = key
        self.did = did
    }

    public struct Failure: Error, CustomStringConvertible {
        public let description: String
    }

    /// `endpoint` is where the peer's DIDDoc says it is reached, `invitationEndpoint` where its
    /// invitation says the Request goes (by default a port nothing listens on).
    public static func connect(
        _ client: AerieClient, endpoint: String = "http://127.0.0.1:9", invitationEndpoint: String = "http://127.0.0.1:9",
        key: Ed25519KeyPair = .generate()
    ) async throws -> HandMadePeer {
        let inviter = Ed25519KeyPair.generate()
        let did = try PeerDID2.make(verkey: key.verkey, serviceEndpoint: endpoint)
        let invitationId = UUID().uuidString
        let accepted = try await client.call(
            "connections.accept", params: ["invitation": try HandMadeHandshake.invitation(inviter: inviter, id: invitationId, endpoint: invitationEndpoint)])
        guard let id = accepted["connectionId"]?.stringValue else { throw Failure(description: "accept answered \(accepted)") }
        let response = try HandMadeHandshake.response(invitationId: invitationId, theirDid: did, signedBy: inviter)
        let updated = try await client.call(
            "connections.updateStateWithMessage", params: ["connectionId": .string(id), "message": response])
        guard updated["state"] == 4, let pwDid = updated["pwDid"]?.stringValue, let pwVerkey = updated["pwVerkey"]?.stringValue else {
            throw Failure(description: "the hand-made handshake did not establish: \(updated)")
        }
        return HandMadePeer(connectionId: id, pwDid: pwDid, pwVerkey: pwVerkey, key: key, did: did)
    }

    /// `message` authcrypted by the peer to our pairwise key, as the peer would send it.
    public func pack(_ message: JSONValue) throws -> [UInt8] {
        try DIDCommEnvelope.pack(message.serialized(), to: [pwVerkey], from: key)
    }

    /// `message` packed to our pairwise key by someone else: anoncrypt (`from` nil) or authcrypt
    /// by a stranger's key.
    public func forge(_ message: JSONValue, from stranger: Ed25519KeyPair?) throws -> [UInt8] {
        if let stranger { return try DIDCommEnvelope.pack(message.serialized(), to: [pwVerkey], from: stranger) }
        return try DIDCommEnvelope.pack(message.serialized(), to: [pwVerkey], from: nil)
    }
}
