import AerieClient
import AerieCore
import AerieCrypto
import AerieTesting
import Foundation
import Testing

/// A peer whose every key the test holds, connected to a tenant by a real didexchange 1.1
/// handshake answered by hand: the tenant accepts an out-of-band invitation of the test's, and
/// `connections.updateStateWithMessage` applies a Response signed by the invitation key. The
/// connection then knows the peer's verkey, as after any real handshake, so the endpoint takes
/// the peer's authcrypted messages and refuses everyone else's (sender authentication).
struct TestPeer {
    let connectionId: String
    /// Our side: the tenant's pairwise DID and verkey, which the peer packs messages to.
    let pwDid: String
    let pwVerkey: String
    /// The peer's pairwise key (its DID's key).
    let key: Ed25519KeyPair
    let did: String

    /// `endpoint` is where the peer's DIDDoc says it is reached (by default a port nothing
    /// listens on; a `PeerInbox` to see what the tenant sends).
    static func connect(_ client: AerieClient, endpoint: String = "http://127.0.0.1:9", key: Ed25519KeyPair = .generate())
        async throws -> TestPeer
    {
        let inviter = Ed25519KeyPair.generate()
        let did = try PeerDID2.make(verkey: key.verkey, serviceEndpoint: endpoint)
        let invitationId = UUID().uuidString
        let accepted = try await client.call(
            "connections.accept", params: ["invitation": try DIDExchangeResponseTests.invitation(inviter: inviter, id: invitationId)])
        let id = try #require(accepted["connectionId"]?.stringValue)
        let response = try DIDExchangeResponseTests.response(invitationId: invitationId, theirDid: did, signedBy: inviter)
        let updated = try await client.call(
            "connections.updateStateWithMessage", params: ["connectionId": .string(id), "message": response])
        try #require(updated["state"] == 4, "the hand-made handshake did not establish: \(updated)")
        return TestPeer(
            connectionId: id, pwDid: try #require(updated["pwDid"]?.stringValue),
            pwVerkey: try #require(updated["pwVerkey"]?.stringValue), key: key, did: did)
    }

    /// `message` authcrypted by the peer to our pairwise key, as the peer would send it.
    func pack(_ message: JSONValue) throws -> [UInt8] {
        try DIDCommEnvelope.pack(message.serialized(), to: [pwVerkey], from: key)
    }

    /// `message` packed to our pairwise key by someone else: anoncrypt (`from` nil) or authcrypt
    /// by a stranger's key.
    func forge(_ message: JSONValue, from stranger: Ed25519KeyPair?) throws -> [UInt8] {
        if let stranger { return try DIDCommEnvelope.pack(message.serialized(), to: [pwVerkey], from: stranger) }
        return try DIDCommEnvelope.pack(message.serialized(), to: [pwVerkey], from: nil)
    }
}
