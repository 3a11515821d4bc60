/// Unqualified (Indy-style) DIDs and verkey references in any of the forms invitations use.
public enum KeyReference {
    /// The unqualified DID of a verkey: base58 of its first 16 bytes.
    public static func unqualifiedDID(verkey: [UInt8]) -> String {
        Base58.encode(verkey.prefix(16))
    }

    /// The 32-byte verkey of a raw base58 verkey, a `did:key` or a `did:key:…#…` reference.
    public static func verkey(from reference: String) throws -> [UInt8] {
        if reference.hasPrefix("did:key:") { return try DIDKey.verkey(from: reference) }
        if reference.hasPrefix("did:") {
            throw CryptoError(.invalidDID, "key reference is a DID that needs resolving", details: String(reference.prefix(100)))
        }
        guard reference.utf8.count <= Base58.maxVerkeyLength else {
            throw CryptoError(
                .invalidKey, "verkey is longer than \(Base58.maxVerkeyLength) characters",
                details: "\(reference.utf8.count) characters")
        }
        let bytes: [UInt8]
        do {
            bytes = try Base58.decode(reference)
        } catch {
            throw CryptoError(.invalidKey, "verkey is not valid base58", details: String(reference.prefix(64)))
        }
        guard bytes.count == Ed25519.publicKeyByteCount else {
            throw CryptoError(.invalidKey, "verkey must be 32 bytes", details: "\(reference): \(bytes.count) bytes")
        }
        return bytes
    }

    /// The base58 verkey (DIDComm v1 `kid` form) of any reference `verkey(from:)` accepts.
    public static func verkeyBase58(from reference: String) throws -> String {
        Base58.encode(try verkey(from: reference))
    }
}
