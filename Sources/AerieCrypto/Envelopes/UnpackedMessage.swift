/// What unpacking a DIDComm v1 envelope yields.
public struct UnpackedMessage: Sendable, Hashable {
    /// The plaintext (a JSON message, for DIDComm).
    public let plaintext: [UInt8]
    /// The sender's base58 verkey, proven by crypto_box; nil for anoncrypt.
    public let senderVerkey: String?
    /// The recipient verkey (base58) whose key opened the message.
    public let recipientVerkey: String
    public let algorithm: DIDCommEnvelope.Algorithm

    public init(
        plaintext: [UInt8], senderVerkey: String?, recipientVerkey: String, algorithm: DIDCommEnvelope.Algorithm
    ) {
        self.plaintext = plaintext
        self.senderVerkey = senderVerkey
        self.recipientVerkey = recipientVerkey
        self.algorithm = algorithm
    }
}
