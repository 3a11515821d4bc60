extension DIDCommEnvelope {
    /// Bounds checked while parsing an envelope, before the text they bound is decoded. Each is
    /// well above what a conforming packer (ACA-Py, Credo, libindy, ours) writes.
    public enum Limits {
        /// Recipients one envelope may list (RFC 0019 sends one per key of the recipient's DIDDoc).
        public static let maxRecipients = 20
        /// A `kid` is a base58 Ed25519 verkey: at most 44 characters.
        public static let maxKidLength = Base58.maxVerkeyLength
        /// The protected header's base64url text: about 400 characters per authcrypt recipient.
        public static let maxProtectedLength = 16 * 1024
        /// The content IV (12 or 24 bytes) and a recipient's box nonce (24 bytes), as base64.
        public static let maxIVLength = 32
        /// The 16-byte content tag, as base64.
        public static let maxTagLength = 24
        /// A recipient's encrypted content key: 48 bytes (box) or 80 bytes (sealed box), as base64.
        public static let maxEncryptedKeyLength = 128
        /// A recipient's sealed sender verkey: 48 + at most 44 bytes, as base64.
        public static let maxSenderLength = 128
        /// JSON values in the envelope (its members and an unprotected recipients list) and in
        /// the protected header: a few per recipient.
        public static let maxEnvelopeValues = 16 + maxRecipients * 8
        public static let maxHeaderValues = 16 + maxRecipients * 8
    }
}
