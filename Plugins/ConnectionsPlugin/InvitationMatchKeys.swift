import AerieCore
import AerieCrypto

/// What duplicate detection compares (seeds 001, 003, 004): a stored connection matches an
/// invitation with the same `@id`, the same public DID, or the same first recipient key.
///
/// Values are normalised so that spellings of one thing compare equal: keys as base58 verkeys
/// (a `did:key`, with or without fragment, becomes its verkey), `did:sov:` DIDs unqualified, a
/// did:peer:4 in its short form.
public struct InvitationMatchKeys: Sendable, Hashable, Codable {
    public typealias Match = InvitationMatch

    public var id: String?
    public var publicDid: String?
    public var firstRecipientKey: String?

    /// Normalises each value (see the type's documentation); empty strings count as absent.
    public init(id: String?, publicDid: String?, firstRecipientKey: String?) {
        self.id = id.flatMap { $0.isEmpty ? nil : $0 }
        self.publicDid = publicDid.flatMap { $0.isEmpty ? nil : PeerDID4.shortForm(Self.normalizedDID($0)) }
        self.firstRecipientKey = firstRecipientKey.flatMap { $0.isEmpty ? nil : Self.normalizedKey($0) }
    }

    public init(_ invitation: Invitation) {
        self.init(id: invitation.id, publicDid: invitation.publicDid, firstRecipientKey: invitation.recipientKeys.first)
    }

    /// How `other` matches this, the strongest reason first; nil when it does not.
    public func match(_ other: InvitationMatchKeys) -> Match? {
        if let id, id == other.id { return .id }
        if let publicDid, publicDid == other.publicDid { return .publicDid }
        if let firstRecipientKey, firstRecipientKey == other.firstRecipientKey { return .recipientKey }
        return nil
    }

    /// `did:sov:X` as `X`, the form proprietary invitations and Indy use; other DIDs unchanged.
    public static func normalizedDID(_ did: String) -> String {
        did.hasPrefix("did:sov:") ? String(did.dropFirst("did:sov:".count)) : did
    }

    /// A `did:key` reference as its base58 verkey; anything else unchanged (so an unreadable key
    /// still matches only itself).
    public static func normalizedKey(_ key: String) -> String {
        guard key.hasPrefix("did:key:") else { return key }
        return (try? KeyReference.verkeyBase58(from: key)) ?? key
    }
}
