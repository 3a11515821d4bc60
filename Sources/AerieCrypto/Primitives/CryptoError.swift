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
