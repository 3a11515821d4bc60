/// did:key for Ed25519 (multicodec 0xed01, multibase base58btc `z`), both ways.
public enum DIDKey {
    static let ed25519Prefix: [UInt8] = [0xED, 0x01]
    static let x25519Prefix: [UInt8] = [0xEC, 0x01]

    /// `did:key:z6Mk…` for a 32-byte Ed25519 verkey.
    public static func did(verkey: [UInt8]) throws -> String {
        "did:key:" + (try multibase(verkey: verkey))
    }

    /// `did:key:z6Mk…` for a base58 verkey.
    public static func did(verkeyBase58: String) throws -> String {
        try did(verkey: Base58.decode(verkeyBase58))
    }

    /// `did:key:z6Mk…#z6Mk…`, the key reference OOB invitations use in `recipientKeys`.
    public static func keyReference(verkey: [UInt8]) throws -> String {
        let id = try multibase(verkey: verkey)
        return "did:key:\(id)#\(id)"
    }

    /// The `z6Mk…` multibase form of an Ed25519 verkey (did:key id and did:peer:2 key element).
    public static func multibase(verkey: [UInt8]) throws -> String {
        guard verkey.count == Ed25519.publicKeyByteCount else {
            throw CryptoError(.invalidKey, "Ed25519 verkey must be 32 bytes", details: "got \(verkey.count) bytes")
        }
        return "z" + Base58.encode(ed25519Prefix + verkey)
    }

    /// The verkey of `did:key:z6Mk…`, with or without a `#…` fragment.
    /// Only Ed25519 keys are accepted: DIDComm v1 has no use for others.
    public static func verkey(from didKey: String) throws -> [UInt8] {
        guard didKey.hasPrefix("did:key:") else {
            throw CryptoError(.invalidDID, "not a did:key", details: String(didKey.prefix(100)))
        }
        var id = didKey.dropFirst(8)
        if let hash = id.firstIndex(of: "#") {
            let fragment = id[id.index(after: hash)...]
            id = id[..<hash]
            // The fragment, when present, names the same key (did:key has exactly one).
            guard fragment == id || fragment.isEmpty else {
                throw CryptoError(.invalidDID, "did:key fragment names another key", details: String(didKey.prefix(100)))
            }
        }
        return try verkey(fromMultibase: String(id))
    }

    /// The verkey of a `z…` multibase Ed25519 multikey (0xed01 prefix).
    public static func verkey(fromMultibase value: String) throws -> [UInt8] {
        guard value.first == "z" else {
            throw CryptoError(.invalidDID, "key is not base58btc multibase ('z')", details: String(value.prefix(100)))
        }
        let bytes: [UInt8]
        do {
            bytes = try Base58.decode(String(value.dropFirst()))
        } catch {
            throw CryptoError(.invalidDID, "key is not valid base58", details: String(value.prefix(100)))
        }
        guard bytes.count == 34, bytes[0] == ed25519Prefix[0], bytes[1] == ed25519Prefix[1] else {
            throw CryptoError(.invalidDID, "key is not an Ed25519 multikey (0xed01)", details: String(value.prefix(100)))
        }
        return Array(bytes[2...])
    }
}
