import AerieCore
import AerieCrypto
import Foundation

/// A `~attach` whose base64 data carries a detached JWS (Aries RFC 0017 "signed attachments"), as
/// ACA-Py writes them (`AttachDecoratorData.sign`): `protected` is base64url JSON with
/// `alg: EdDSA` and an OKP `jwk` (its `x` the signer's key, its `kid` a did:key), `header.kid` the
/// signer's did:key, and the signature is over `protected + "." + base64url(data, no padding)`.
public enum SignedAttachment {
    /// Verifies the attachment's JWS and that `expectedSigner` (base58 verkey) signed it; answers
    /// the signed bytes. Throws `CryptoError(.invalidSignature)` for a bad or foreign signature and
    /// `.malformedSignature` for an attachment that is not a signed one.
    public static func verify(_ attachment: JSONValue, expectedSigner: String) throws -> [UInt8] {
        guard let data = attachment["data"], let base64 = data["base64"]?.stringValue else {
            throw CryptoError(.malformedSignature, "the attachment has no base64 data")
        }
        guard base64.utf8.count <= PeerFieldLimits.maxAttachmentBase64Bytes else {
            throw CryptoError(.malformedSignature, "the attachment is larger than \(PeerFieldLimits.maxAttachmentBase64Bytes) bytes")
        }
        guard let jws = data["jws"], let protected = jws["protected"]?.stringValue,
            let signature = jws["signature"]?.stringValue, protected.utf8.count <= 4096, signature.utf8.count <= 256
        else {
            throw CryptoError(.malformedSignature, "the attachment is not signed (no single jws with protected and signature)")
        }
        let header: JSONValue
        do {
            header = try JSONValue(parsing: String(decoding: try Base64.decode(protected), as: UTF8.self))
        } catch {
            throw CryptoError(.malformedSignature, "the jws protected header is not base64url JSON")
        }
        guard header["alg"]?.stringValue == "EdDSA", let jwk = header["jwk"], jwk["kty"]?.stringValue == "OKP",
            jwk["crv"]?.stringValue ?? "Ed25519" == "Ed25519", let x = jwk["x"]?.stringValue
        else {
            throw CryptoError(.malformedSignature, "the jws is not EdDSA with an Ed25519 OKP jwk")
        }
        let signer = try Base64.decode(x)
        let payload = try Base64.decode(base64)
        let input = Array((protected + "." + Base64.encodeURL(payload)).utf8)
        guard Ed25519.verify(signature: try Base64.decode(signature), message: input, verkey: signer) else {
            throw CryptoError(.invalidSignature, "the attachment's signature does not verify")
        }
        // A kid (header first, as ACA-Py checks) must name the same key as the jwk.
        if let kid = jws["header"]?["kid"]?.stringValue ?? jwk["kid"]?.stringValue {
            guard (try? DIDKey.verkey(from: kid)) == signer else {
                throw CryptoError(.invalidSignature, "the jws kid names another key than its jwk")
            }
        }
        guard Base58.encode(signer) == expectedSigner else {
            throw CryptoError(.invalidSignature, "the attachment is signed by \(Base58.encode(signer)), not the invitation key")
        }
        return payload
    }

    /// A signed `base64` attachment in ACA-Py's shape; `sign` signs with `verkey`'s private key
    /// (the tenant's key wallet, or a key pair in tests).
    public static func make(
        _ payload: [UInt8], mimeType: String, verkey: String, id: String = UUID.random().lowercasedString,
        sign: ([UInt8]) async throws -> [UInt8]
    ) async throws -> JSONValue {
        let key = try KeyReference.verkey(from: verkey)
        let kid = try DIDKey.did(verkey: key)
        let protectedJSON: JSONValue = [
            "alg": "EdDSA", "jwk": ["kty": "OKP", "crv": "Ed25519", "x": .string(Base64.encodeURL(key)), "kid": .string(kid)],
        ]
        let protected = Base64.encodeURL(protectedJSON.serialized())
        let signature = try await sign(Array((protected + "." + Base64.encodeURL(payload)).utf8))
        return [
            "@id": .string(id), "mime-type": .string(mimeType),
            "data": [
                "base64": .string(Base64.encode(payload)),
                "jws": ["header": ["kid": .string(kid)], "protected": .string(protected), "signature": .string(Base64.encodeURL(signature))],
            ],
        ]
    }
}
