import Foundation

/// A decrypted inbound DIDComm message, as handed to the plugin that registered its type.
public struct InboundMessage: Sendable {
    public static let didcommPrefix = "https://didcomm.org/"
    public static let legacyPrefix = "did:sov:BzCbsNYhMrjHiqZDTUASHg;spec/"

    /// `@type`, normalised to the `https://didcomm.org/` prefix.
    public var type: String
    public var id: String?
    public var body: JSONValue
    /// Base58 verkey of the sender (authcrypt) or nil (anoncrypt).
    public var senderVerkey: String?
    /// Base58 verkey of ours that the message was packed to.
    public var recipientVerkey: String
    /// The mailbox uid it is stored under.
    public var uid: UUID
    /// How it is stored: by the handler's own transaction (`claim(in:)`), else by the pipeline.
    public var receipt: InboundReceipt?
    /// The connection its recipient key belongs to, resolved once by the inbound pipeline with
    /// the sender checked (`InboundSender`); nil for a message a backend hands in.
    public var connection: ConnectionRecord?
    /// Who sent it, as `connection` sees it; nil when `connection` is.
    public var sender: InboundSender?
    /// The sealed private key of `recipientVerkey`, as the pipeline read it with `connection`
    /// (a handler that answers packs with it without reading it again); nil when `connection` is.
    public var recipientSealedSecret: [UInt8]?

    public init(
        type: String, id: String?, body: JSONValue, senderVerkey: String?, recipientVerkey: String, uid: UUID,
        receipt: InboundReceipt? = nil, connection: ConnectionRecord? = nil, sender: InboundSender? = nil,
        recipientSealedSecret: [UInt8]? = nil
    ) {
        self.type = Self.normalizedType(type)
        self.id = id
        self.body = body
        self.senderVerkey = senderVerkey
        self.recipientVerkey = recipientVerkey
        self.uid = uid
        self.receipt = receipt
        self.connection = connection
        self.sender = sender
        self.recipientSealedSecret = recipientSealedSecret
    }

    public static func normalizedType(_ type: String) -> String {
        if type.hasPrefix(legacyPrefix) {
            return didcommPrefix + type.dropFirst(legacyPrefix.count)
        }
        return type
    }
}

/// A recipient key of an inbound envelope that the tenant holds: its sealed private key and the
/// connection it is our key of (nil: a key of no connection), read together
/// (`ConnectionRepository.inboundRecipient`).
public struct InboundRecipient: Sendable {
    public var verkey: String
    public var sealedSecret: [UInt8]
    public var connection: ConnectionRecord?

    public init(verkey: String, sealedSecret: [UInt8], connection: ConnectionRecord?) {
        self.verkey = verkey
        self.sealedSecret = sealedSecret
        self.connection = connection
    }
}
