/// did:peer:4 (DIF peer DID method 4, what ACA-Py 1.2.7 and 1.7.0 send in a didexchange 1.1
/// Request by default). The long form `did:peer:4<hash>:<encoded document>` carries the document:
/// multibase base58btc of the JSON multicodec (0x0200) and JSON bytes; the hash is multibase
/// base58btc of the sha2-256 multihash of the encoded document's text. The short form
/// `did:peer:4<hash>` names the same DID once the long form has been seen; only the long form
/// resolves.
public enum PeerDID4 {
    static let prefix = "did:peer:4"
    static let jsonMulticodec: [UInt8] = [0x80, 0x04]
    static let sha256Multihash: [UInt8] = [0x12, 0x20]
    /// Longest DID read: a document with a few keys and services fits (ACA-Py's is about 900
    /// characters); base58 decoding is quadratic, so this bounds its cost (a few milliseconds).
    public static let maxLength = 4096

    /// Whether `did` is a did:peer:4 (long or short form).
    public static func isPeerDID4(_ did: String) -> Bool { did.hasPrefix(prefix) }

    /// The short form of a did:peer:4 (the long form without `:<document>`); a short form, or any
    /// other DID, unchanged. Both forms of one DID have the same short form, so it is the key to
    /// compare and look them up by.
    public static func shortForm(_ did: String) -> String {
        guard did.hasPrefix(prefix), let colon = did.dropFirst(prefix.count).firstIndex(of: ":") else { return did }
        return String(did[..<colon])
    }

    /// The long form of `document` (JSON text): `did:peer:4<hash>:<encoded document>`.
    public static func longForm(document: [UInt8]) -> String {
        let encoded = "z" + Base58.encode(jsonMulticodec + document)
        let hash = "z" + Base58.encode(sha256Multihash + SHA256.hash(Array(encoded.utf8)))
        return prefix + hash + ":" + encoded
    }

    /// The input document of a did:peer:4 for one of our keys, shaped as ACA-Py's
    /// `create_did_peer_4` makes them (`did_peer_4.input_doc_from_keys_and_services`): the
    /// Ed25519 verkey as a `Multikey` `#key-0` listed for `authentication` and `keyAgreement`
    /// (as ACA-Py lists it; DIDComm v1 derives the X25519 key from it), and one
    /// `did-communication` service with `recipientKeys: ["#key-0"]` and routing keys as did:key
    /// references, keys in ACA-Py's order, compact (`separators=(",", ":")`).
    public static func document(verkey: [UInt8], serviceEndpoint: String, routingKeys: [String] = []) throws -> [UInt8] {
        var doc: [UInt8] = Array(
            ##"{"@context":["https://www.w3.org/ns/did/v1","https://w3id.org/security/multikey/v1"],"verificationMethod":[{"id":"#key-0","type":"Multikey","publicKeyMultibase":"##.utf8)
        doc += JSONText.quoted(try DIDKey.multibase(verkey: verkey))
        doc += Array(
            ##"}],"authentication":["#key-0"],"keyAgreement":["#key-0"],"service":[{"id":"#didcomm-0","type":"did-communication","recipientKeys":["#key-0"],"routingKeys":["##.utf8)
        for (index, key) in routingKeys.enumerated() {
            if index > 0 { doc.append(UInt8(ascii: ",")) }
            doc += JSONText.quoted(try DIDKey.keyReference(verkey: KeyReference.verkey(from: key)))
        }
        doc += Array(#"],"serviceEndpoint":"#.utf8)
        doc += JSONText.quoted(serviceEndpoint)
        doc += Array(#","priority":0}]}"#.utf8)
        return doc
    }

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
