/// The bounds on every field a peer writes: invitations (connections/1.0 and out-of-band, their
/// `services`), Requests and Responses of both handshakes (connections/1.0, didexchange 1.0 and
/// 1.1) and the DID documents they carry. The one place these numbers live; every reader checks
/// against them and refuses a value over a limit (never truncates it), each with the error its
/// caller answers (`invalid_invitation` for a tenant's invitation, a 400 for a peer's Request).
/// docs/SECURITY.md lists them. A value of this type is the limit of one kind of string field.
public struct PeerFieldLimits: Sendable, Hashable {
    public var maxBytes: Int
    /// Identifiers, keys, DIDs and URLs: no spaces or control characters.
    public var token: Bool

    public init(maxBytes: Int, token: Bool) {
        self.maxBytes = maxBytes
        self.token = token
    }

    /// Why `value` (the field named `name`) is refused, or nil when it is within bounds.
    public func violation(_ value: String, name: String) -> String? {
        guard value.utf8.count <= maxBytes else { return "\(name) is longer than \(maxBytes) bytes" }
        if token {
            guard value.utf8.allSatisfy({ $0 > 0x20 && $0 != 0x7F }) else {
                return "\(name) contains spaces or control characters"
            }
        } else {
            guard !value.utf8.contains(where: { $0 < 0x20 && $0 != 0x09 && $0 != 0x0A && $0 != 0x0D }) else {
                return "\(name) contains control characters"
            }
        }
        return nil
    }

    /// Message, invitation, attachment and service ids; `~thread.thid` and `pthid`.
    public static let id = PeerFieldLimits(maxBytes: 256, token: false)
    /// Labels, goals and other free text.
    public static let text = PeerFieldLimits(maxBytes: 1024, token: false)
    /// A key reference: a base58 verkey, a did:key (with its fragment) or a DID URL.
    public static let key = PeerFieldLimits(maxBytes: 256, token: true)
    /// Endpoints, image URLs and message types.
    public static let url = PeerFieldLimits(maxBytes: 2048, token: true)
    /// A DID, qualified or not (a did:peer:4 long form with a few keys and services fits).
    public static let did = PeerFieldLimits(maxBytes: 4096, token: true)
    /// Type names and codes.
    public static let name = PeerFieldLimits(maxBytes: 256, token: true)

    /// Most entries in any list a peer sends: services, recipient keys, routing keys, a DID
    /// document's keys, handshake protocols, attachments.
    public static let maxListCount = 16
    /// Largest DID document (its JSON) read from a Request or Response, inline or attached.
    public static let maxDocumentBytes = 48 * 1024
    /// Largest base64 text of an attachment, refused before decoding.
    public static let maxAttachmentBase64Bytes = 64 * 1024
}
