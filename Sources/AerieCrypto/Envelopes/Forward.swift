import AerieCore
import Foundation

/// Routing wrappers (Aries RFC 0094): a packed message inside `forward` messages, one per
/// mediator, each anoncrypted to that mediator's routing key.
public enum Forward {
    public static let messageType = "https://didcomm.org/routing/1.0/forward"
    public static let legacyMessageType = "did:sov:BzCbsNYhMrjHiqZDTUASHg;spec/routing/1.0/forward"

    /// Wraps `packed` (already packed for `recipientKey`) for each of `routingKeys`, innermost
    /// first: the first routing key's forward says `to: recipientKey`, the next one's says
    /// `to: <first routing key>`, and so on. Keys may be base58 verkeys or did:key references;
    /// `to` is always written as a base58 verkey, as ACA-Py and Credo do.
    public static func wrap(_ packed: [UInt8], recipientKey: String, routingKeys: [String]) throws -> [UInt8] {
        guard !routingKeys.isEmpty else { return packed }
        guard (try? JSONSerialization.jsonObject(with: Data(packed))) is [String: Any] else {
            throw CryptoError(.invalidMessage, "only a packed message (a JSON object) can be forwarded")
        }
        var message = packed
        var to = try KeyReference.verkeyBase58(from: recipientKey)
        for routingKey in routingKeys {
            let routingVerkey = try KeyReference.verkeyBase58(from: routingKey)
            message = try DIDCommEnvelope.pack(forwardMessage(to: to, packed: message), to: [routingVerkey], from: nil)
            to = routingVerkey
        }
        return message
    }

    /// The plaintext `forward` message carrying `packed` to `to`.
    public static func forwardMessage(to: String, packed: [UInt8], id: String = UUID.random().lowercasedString)
        -> [UInt8]
    {
        var out: [UInt8] = []
        out.reserveCapacity(packed.count + 160)
        out.append(contentsOf: #"{"@type":""#.utf8)
        out.append(contentsOf: messageType.utf8)
        out.append(contentsOf: #"","@id":"#.utf8)
        out.append(contentsOf: JSONText.quoted(id))
        out.append(contentsOf: #","to":"#.utf8)
        out.append(contentsOf: JSONText.quoted(to))
        out.append(contentsOf: #","msg":"#.utf8)
        out.append(contentsOf: packed)
        out.append(UInt8(ascii: "}"))
        return out
    }

    /// Reads a plaintext `forward` message: where it goes and the packed message it carries.
    public static func unwrap(_ plaintext: [UInt8]) throws -> (to: String, packed: [UInt8]) {
        guard let parsed = try? JSONSerialization.jsonObject(with: Data(plaintext)), let object = parsed as? [String: Any]
        else {
            throw CryptoError(.invalidMessage, "forward message is not a JSON object")
        }
        guard let type = object["@type"] as? String, type == messageType || type == legacyMessageType else {
            throw CryptoError(.invalidMessage, "not a forward message")
        }
        guard let to = object["to"] as? String, let msg = object["msg"] as? [String: Any] else {
            throw CryptoError(.invalidMessage, "forward message needs to and msg")
        }
        let data = try JSONSerialization.data(withJSONObject: msg, options: [.withoutEscapingSlashes])
        return (to, [UInt8](data))
    }
}
