/// Why a Linked Data proof was made: its `proofPurpose`, and for presentations the verifier's
/// `challenge` and `domain` that bind the proof to one request.
public enum ProofPurpose: Sendable, Hashable {
    /// An issuer's assertion: the proof of a verifiable credential.
    case assertionMethod
    /// A holder's authentication: the proof of a verifiable presentation, made for one
    /// request's `challenge` (and `domain`, when the verifier gave one).
    case authentication(challenge: String, domain: String?)

    /// The `proofPurpose` term written in the proof.
    public var term: String {
        switch self {
        case .assertionMethod: "assertionMethod"
        case .authentication: "authentication"
        }
    }
}
