import AerieCore
import Foundation

/// Linked Data proofs (Ed25519Signature2018 and Ed25519Signature2020 over did:key keys) on
/// JSON-LD credentials and presentations, made and checked as ACA-Py does: the proof options
/// (with the document's `@context`, without `jws` / `proofValue`) and the document (without
/// `proof`) are each canonicalized (URDNA2015) and hashed with SHA-256; the signature covers the
/// two hashes concatenated.
public enum LinkedDataProofs {
    /// Verifies the document's `proof` (one of them, when it holds several: the first whose type
    /// and `proofPurpose` match and whose signature verifies) and answers which key made it.
    ///
    /// For `.assertionMethod` on a credential, the `issuer` must be the key's controller. For
    /// `.authentication`, the proof's `challenge` (and `domain`, when given) must match.
    /// Throws a `CryptoError`: `unknown_context` (naming the URL), `invalid_jsonld`,
    /// `limit_exceeded`, `invalid_proof`, `unsupported_algorithm` (an unknown proof type),
    /// `invalid_did` (a verification method that is not an Ed25519 did:key),
    /// `proof_purpose_mismatch` (purpose, challenge, domain or issuer), `invalid_signature`.
    public static func verify(
        _ document: JSONValue, purpose: ProofPurpose, contexts: JSONLDContexts = .bundled,
        limits: LinkedDataLimits = .default
    ) throws -> VerifiedProof {
        throw CryptoError(.unsupportedAlgorithm, "Linked Data proofs are not implemented yet")
    }

    /// The document with a new proof added to its `proof` (beside any it already has).
    ///
    /// `verificationMethod` must be the did:key URL of `key` (`did:key:z6Mk…#z6Mk…`). For
    /// `.ed25519Signature2020` the suite's context (`https://w3id.org/security/suites/ed25519-2020/v1`)
    /// is appended to the document's `@context` when missing, as ACA-Py does. `created` is
    /// written in whole seconds, UTC.
    public static func sign(
        _ document: JSONValue, suite: ProofSuite, key: Ed25519KeyPair, verificationMethod: String,
        purpose: ProofPurpose, created: Date, contexts: JSONLDContexts = .bundled,
        limits: LinkedDataLimits = .default
    ) throws -> JSONValue {
        throw CryptoError(.unsupportedAlgorithm, "Linked Data proofs are not implemented yet")
    }
}
