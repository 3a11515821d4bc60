import AerieCore

/// did:peer:1 (DIF peer DID method, numalgo 1, "genesis doc"): `did:peer:1` + multibase
/// base58btc of the sha2-256 multihash of the stored variant of the DID's genesis document (its
/// JSON text without the root `id`). The DID carries no keys, so it resolves only together with
/// that document, which its owner attaches (didexchange `did_doc~attach`); `verify` checks that
/// the attached document is the one the DID was made from.
public enum PeerDID1 {
    static let prefix = "did:peer:1"
    static let sha256Multihash: [UInt8] = [0x12, 0x20]

    /// Whether `did` names numalgo 1.
    public static func isPeerDID1(_ did: String) -> Bool { did.hasPrefix(prefix) }

    /// The did:peer:1 of a stored-variant genesis document (JSON text without a root `id`).
    public static func did(storedVariant: [UInt8]) -> String {
        prefix + "z" + Base58.encode(sha256Multihash + SHA256.hash(storedVariant))
    }

    /// Checks that `did` is the hash of `document`, the JSON text as attached: either the stored
    /// variant itself, or a resolved variant whose text without its root `id` member (and the
    /// comma and spaces that separated it) is the stored variant: how Credo hashes the document
    /// it then attaches with its `id` (compact text; `", "`-separated text, as Python writes it,
    /// comes out the same way). Throws `CryptoError(.invalidDID)` for a DID that is not numalgo 1 or not that hash.
    /// Linear in the document's size.
    public static func verify(_ did: String, document: [UInt8]) throws {
        guard did.hasPrefix(prefix + "z"), did.utf8.count <= 64 else {
            throw CryptoError(.invalidDID, "not a did:peer:1 (did:peer:1z followed by a base58 sha2-256 multihash)")
        }
        if Self.did(storedVariant: document) == did { return }
        if let stored = try? JSONObjectText(document).removing("id"), Self.did(storedVariant: stored) == did { return }
        throw CryptoError(.invalidDID, "the did:peer:1 is not the hash of the DID document attached to it")
    }
}
