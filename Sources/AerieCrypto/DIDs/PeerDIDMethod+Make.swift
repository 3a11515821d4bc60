import AerieCore

extension PeerDIDMethod {
    /// A new DID of ours in this method for `verkey` (raw Ed25519), our `serviceEndpoint` and the
    /// routing keys in front of it (base58 or did:key), shaped as ACA-Py makes its own
    /// (`PeerDID2.make`, `PeerDID4.document`). The one place handshakes and rotations make our DID.
    /// Throws `CryptoError` for a key that is not 32 bytes, a routing key that is not a verkey,
    /// or a did:peer:4 longer than peers read (`PeerDID4.maxLength`).
    public func make(verkey: [UInt8], serviceEndpoint: String, routingKeys: [String] = []) throws -> OwnPeerDID {
        switch self {
        case .peer2:
            let did = try PeerDID2.make(verkey: verkey, serviceEndpoint: serviceEndpoint, routingKeys: routingKeys)
            return OwnPeerDID(method: self, did: did, shortForm: did)
        case .peer4:
            let document = try PeerDID4.document(verkey: verkey, serviceEndpoint: serviceEndpoint, routingKeys: routingKeys)
            let did = PeerDID4.longForm(document: document)
            guard did.utf8.count <= PeerDID4.maxLength else {
                throw CryptoError(
                    .invalidDID, "a did:peer:4 of this endpoint and routing keys is longer than \(PeerDID4.maxLength) bytes")
            }
            return OwnPeerDID(method: self, did: did, shortForm: PeerDID4.shortForm(did))
        }
    }
}

/// A DID of ours made by `PeerDIDMethod.make`: the form the first message carries and the form
/// that names it afterwards. Its document is in the DID itself (both methods resolve without a
/// network).
public struct OwnPeerDID: Sendable, Hashable {
    public let method: PeerDIDMethod
    /// The DID as the first message carries it: the did:peer:2, or the did:peer:4 long form.
    public let did: String
    /// The DID once the peer has seen `did`: the did:peer:4 short form; a did:peer:2 itself.
    public let shortForm: String
}
