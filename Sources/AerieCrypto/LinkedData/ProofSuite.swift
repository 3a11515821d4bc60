/// The Linked Data signature suites Aerie creates and verifies, both over Ed25519 did:key keys.
public enum ProofSuite: String, Sendable, Hashable, CaseIterable {
    /// A detached JWS (`b64: false`) in the proof's `jws`.
    case ed25519Signature2018 = "Ed25519Signature2018"
    /// A base58btc multibase signature in the proof's `proofValue`.
    case ed25519Signature2020 = "Ed25519Signature2020"

    /// The proof `type`.
    public var type: String { rawValue }
}
