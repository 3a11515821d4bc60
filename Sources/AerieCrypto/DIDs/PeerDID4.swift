/// did:peer:4 long form (DIF peer DID method 4, what ACA-Py 1.7.0 sends in a didexchange 1.1
/// Request by default): `did:peer:4<hash>:<encoded document>`, the document multibase base58btc
/// of the JSON multicodec (0x0200) and JSON bytes, the hash multibase base58btc of the sha2-256
/// multihash of the encoded document's text. Resolved locally; the short form (no document) is not.
public enum PeerDID4 {
    static let prefix = "did:peer:4"
    static let jsonMulticodec: [UInt8] = [0x80, 0x04]
    static let sha256Multihash: [UInt8] = [0x12, 0x20]
    /// Longest DID read: a document with a few keys and services fits (ACA-Py's is about 900
    /// characters); base58 decoding is quadratic, so this bounds its cost (a few milliseconds).
    public static let maxLength = 4096

    /// Whether `did` is a did:peer:4 in its long form (`hash:document`), the form that resolves.
    public static func isLongForm(_ did: String) -> Bool {
        guard did.hasPrefix(prefix) else { return false }
        return did.dropFirst(prefix.count).split(separator: ":", omittingEmptySubsequences: false).count == 2
    }

    /// The document's JSON bytes, after checking that the hash part matches it.
    public static func documentJSON(_ did: String) throws -> [UInt8] {
        guard did.hasPrefix(prefix), did.utf8.count <= maxLength else {
            throw CryptoError(.invalidDID, "not a did:peer:4 (or longer than \(maxLength) bytes)")
        }
        let parts = did.dropFirst(prefix.count).split(separator: ":", omittingEmptySubsequences: false)
        guard parts.count == 2, parts[0].hasPrefix("z"), parts[1].hasPrefix("z") else {
            throw CryptoError(.invalidDID, "a did:peer:4 must be in its long form (hash:document) to be resolved")
        }
        let encoded = String(parts[1])
        let expected = "z" + Base58.encode(sha256Multihash + SHA256.hash(Array(encoded.utf8)))
        guard expected == parts[0] else {
            throw CryptoError(.invalidDID, "the did:peer:4 hash does not match its document")
        }
        let bytes = try Base58.decode(String(encoded.dropFirst()), maxLength: maxLength)
        guard bytes.starts(with: jsonMulticodec) else {
            throw CryptoError(.invalidDID, "the did:peer:4 document is not JSON (multicodec)")
        }
        return Array(bytes.dropFirst(jsonMulticodec.count))
    }
}
