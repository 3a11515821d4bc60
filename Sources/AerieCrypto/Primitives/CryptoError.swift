/// An error from AerieCrypto: a stable code, a message safe to show, and details for logs only.
///
/// Messages never contain key material or plaintext; `details` (shown only by
/// `String(reflecting:)`) may name lengths, algorithms or kids, never secrets.
public struct CryptoError: Error, Sendable, CustomStringConvertible, CustomDebugStringConvertible {
    public struct Code: Sendable, Hashable, CustomStringConvertible {
        private enum Base: String, Sendable {
            case invalidKey = "invalid_key"
            case invalidEncoding = "invalid_encoding"
            case invalidDID = "invalid_did"
            case decryptionFailed = "decryption_failed"
            case wrongMasterKey = "wrong_master_key"
            case malformedEnvelope = "malformed_envelope"
            case unsupportedAlgorithm = "unsupported_algorithm"
            case unknownRecipient = "unknown_recipient"
            case invalidSignature = "invalid_signature"
            case malformedSignature = "malformed_signature"
            case invalidMessage = "invalid_message"
            case unknownContext = "unknown_context"
            case invalidJSONLD = "invalid_jsonld"
            case limitExceeded = "limit_exceeded"
            case invalidProof = "invalid_proof"
            case proofPurposeMismatch = "proof_purpose_mismatch"
        }

        private let base: Base
        private init(_ base: Base) { self.base = base }

        /// A key of the wrong length, or not a valid point / key pair.
        public static let invalidKey = Code(.invalidKey)
        /// Bad base58 / base64 / JSON text.
        public static let invalidEncoding = Code(.invalidEncoding)
        /// A DID or DID URL this library cannot read (did:key, did:peer:2, unqualified).
        public static let invalidDID = Code(.invalidDID)
        /// Authentication of a ciphertext failed: wrong key, wrong associated data or tampering.
        public static let decryptionFailed = Code(.decryptionFailed)
        /// A wrapped data key was sealed under a different master key (fingerprints differ).
        public static let wrongMasterKey = Code(.wrongMasterKey)
        /// A DIDComm envelope that is not well-formed JWE as RFC 0019 describes it.
        public static let malformedEnvelope = Code(.malformedEnvelope)
        /// An `alg`, `enc`, `typ` or signature type this library does not implement.
        public static let unsupportedAlgorithm = Code(.unsupportedAlgorithm)
        /// None of an envelope's recipients is a key the caller holds.
        public static let unknownRecipient = Code(.unknownRecipient)
        /// A signature that does not verify.
        public static let invalidSignature = Code(.invalidSignature)
        /// A signature decorator missing fields or with undecodable ones.
        public static let malformedSignature = Code(.malformedSignature)
        /// A plaintext message that cannot be wrapped or read (e.g. not a JSON object).
        public static let invalidMessage = Code(.invalidMessage)
        /// A JSON-LD `@context` URL outside the pinned set (never fetched); the message names it.
        public static let unknownContext = Code(.unknownContext)
        /// A document JSON-LD 1.1 processing refuses (a bad term definition, a redefined
        /// protected term, a value of the wrong shape).
        public static let invalidJSONLD = Code(.invalidJSONLD)
        /// A document past a bound of `LinkedDataLimits` (depth, size, nodes, contexts,
        /// canonicalization work).
        public static let limitExceeded = Code(.limitExceeded)
        /// A Linked Data proof missing fields or with undecodable ones (`jws`, `proofValue`,
        /// `verificationMethod`...).
        public static let invalidProof = Code(.invalidProof)
        /// A proof made for another purpose, challenge or domain, or by a key that does not
        /// control the credential's issuer.
        public static let proofPurposeMismatch = Code(.proofPurposeMismatch)

        /// The stable string, e.g. `decryption_failed`.
        public var name: String { base.rawValue }
        public var description: String { base.rawValue }
    }

    public var code: Code
    /// Safe to show to the caller.
    public var message: String
    /// For logs only; never secrets.
    public var details: String?

    public init(_ code: Code, _ message: String, details: String? = nil) {
        self.code = code
        self.message = message
        self.details = details
    }

    public var description: String { "\(code): \(message)" }
    public var debugDescription: String {
        var s = "CryptoError(\(code): \(message)"
        if let details { s += ", details: \(details)" }
        return s + ")"
    }
}
