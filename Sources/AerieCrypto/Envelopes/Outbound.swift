import AerieCore
import Foundation

/// The one way a message leaves over a connection: authcrypted from our pairwise key to the
/// peer's key, wrapped in a `forward` per routing key (RFC 0094), enqueued as an outbox row in
/// the caller's transaction (the store hands the row to the delivery service once that
/// transaction committed, `OutboxSignal`).
/// Packing happens before the transaction (it may read the sender key), so the transaction only
/// writes.
public struct Outbound: Sendable, Hashable {
    /// Where and to whom a message goes.
    public struct Route: Sendable, Hashable {
        public var recipientKey: String
        public var routingKeys: [String]
        public var endpoint: String

        public init(recipientKey: String, routingKeys: [String], endpoint: String) {
            self.recipientKey = recipientKey
            self.routingKeys = routingKeys
            self.endpoint = endpoint
        }

        /// The connection's peer as its record names it; nil before the peer is known.
        public init?(peerOf connection: ConnectionRecord) {
            guard let key = connection.theirVerkey, let endpoint = connection.theirEndpoint else { return nil }
            self.init(recipientKey: key, routingKeys: connection.theirRoutingKeys, endpoint: endpoint)
        }
    }

    /// Our key the message is packed with.
    public enum Sender: Sendable {
        /// A stored key of the tenant (read in a transaction of its own).
        case stored(verkey: String)
        /// A stored key whose sealed secret the caller's transaction already read.
        case sealed(verkey: String, sealedSecret: [UInt8])
        /// A key just made (`KeyWallet.makeKey`), stored in the same transaction as the row.
        case pending(PendingKey)

        public var verkey: String {
            switch self {
            case .stored(let verkey), .sealed(let verkey, _): verkey
            case .pending(let key): key.verkey
            }
        }
    }

    /// The verkey the envelope was packed with.
    public var senderVerkey: String
    public var endpoint: String
    public var envelope: [UInt8]

    /// Packs `message` from `sender` along `route`. Crypto failures come back as
    /// `AerieError(crypto:)`.
    public static func pack(_ message: JSONValue, from sender: Sender, to route: Route, tenant: TenantContext) async throws
        -> Outbound
    {
        try await AerieError.mappingCrypto {
            let plaintext = message.serialized()
            let packed: [UInt8]
            switch sender {
            case .stored(let verkey):
                packed = try await tenant.keys.pack(plaintext, to: [route.recipientKey], from: verkey)
            case .sealed(let verkey, let sealedSecret):
                packed = try await tenant.keys.pack(plaintext, to: [route.recipientKey], from: verkey, sealedSecret: sealedSecret)
            case .pending(let key):
                packed = try tenant.keys.pack(plaintext, to: [route.recipientKey], from: key)
            }
            let envelope = try Forward.wrap(packed, recipientKey: route.recipientKey, routingKeys: route.routingKeys)
            return Outbound(senderVerkey: sender.verkey, endpoint: route.endpoint, envelope: envelope)
        }
    }

    /// The outbox row, linked to `connectionId` (nil: a failed delivery fails no connection) and
    /// to the sent message it carries (`message`, whose status then follows the delivery).
    public func item(for connectionId: UUID?, message: UUID? = nil) -> OutboxItem {
        OutboxItem(connectionId: connectionId, endpoint: endpoint, envelope: envelope, messageUid: message)
    }

    /// Enqueues the row in the caller's transaction.
    public func enqueue(for connectionId: UUID?, message: UUID? = nil, in tx: any TenantTransaction) throws {
        try tx.outbox.enqueue(item(for: connectionId, message: message))
    }
}
