import AerieCore
import AerieCrypto

/// Whether a DID a peer names in a Request or Response belongs to the key the peer uses (the
/// recipient key of its DID document, which the handlers require to be the key the message was
/// authcrypted with). Nothing that fails here is stored or shown as the peer's DID.
///
/// - unqualified and `did:sov` DIDs: base58 of the first 16 bytes of the key (how ACA-Py and
///   Aerie make pairwise DIDs); a ledger DID would need a resolver, and there is none here;
/// - `did:key`: its own key;
/// - `did:peer:2` and `did:peer:4` (long form): resolved from the DID itself
///   (`DIDExchangeMessages.resolve`), so their keys are the DID's by construction; an attached
///   document must name the same key;
/// - `did:peer:1`: the hash of its attached document (`ConnectionMessages.boundPeer` checks it
///   before this is reached), whose keys are therefore the DID's;
/// - any other method: cannot be resolved here.
enum PeerDIDBinding {
    /// Throws `CryptoError(.invalidDID)` saying why when `did` does not belong to `verkey`
    /// (base58). `message` names the message for the reason ("request", "response").
    static func check(did: String, verkey: String, in message: String) throws {
        let shown = did.utf8.count > 80 ? "\(did.prefix(80))…" : did
        if did.hasPrefix("did:key:") {
            guard (try? KeyReference.verkeyBase58(from: did)) == verkey else {
                throw CryptoError(.invalidDID, "the DID \(shown) is not the key the \(message) names")
            }
            return
        }
        if isSelfResolving(did) { return }
        let unqualified: Substring
        if did.hasPrefix("did:sov:") {
            unqualified = did.dropFirst("did:sov:".count)
        } else if !did.hasPrefix("did:") {
            unqualified = Substring(did)
        } else {
            throw CryptoError(.invalidDID, "the DID \(shown) uses a method that cannot be resolved here")
        }
        guard let key = try? Base58.decode(verkey), unqualified == KeyReference.unqualifiedDID(verkey: key) else {
            throw CryptoError(
                .invalidDID, "the DID \(shown) is not derived from the key the \(message) names and cannot be resolved here")
        }
    }

    /// Whether `did` is resolved from itself (its keys are the DID's own).
    static func isSelfResolving(_ did: String) -> Bool {
        did.hasPrefix("did:peer:2.") || did.hasPrefix("did:peer:4")
    }
}
