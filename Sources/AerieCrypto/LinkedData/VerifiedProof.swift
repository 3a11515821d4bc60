/// What a verified Linked Data proof says: which key signed, for which purpose, with which suite.
public struct VerifiedProof: Sendable, Hashable {
    /// The suite of the proof that verified.
    public var suite: ProofSuite
    /// The proof's `verificationMethod`, `did:key:z6Mk…#z6Mk…`.
    public var verificationMethod: String
    /// The DID controlling the verification method, `did:key:z6Mk…` (the issuer of a
    /// credential, the holder of a presentation).
    public var controller: String
    /// The 32-byte Ed25519 public key that verified the signature.
    public var verkey: [UInt8]
    /// The purpose the proof was checked against.
    public var purpose: ProofPurpose
    /// The proof's `created`, as written.
    public var created: String?

    public init(
        suite: ProofSuite, verificationMethod: String, controller: String, verkey: [UInt8], purpose: ProofPurpose,
        created: String?
    ) {
        self.suite = suite
        self.verificationMethod = verificationMethod
        self.controller = controller
        self.verkey = verkey
        self.purpose = purpose
        self.created = created
    }
}
