import AerieCore
import Foundation

/// The `~sig` field decorator (`ed25519Sha512_single`), as in a Connection Response's
/// `connection~sig`: the signer's Ed25519 signature over an 8-byte big-endian Unix time
/// followed by the JSON value. The signed bytes are exactly those in `sig_data`, so the JSON
/// text inside may be formatted any way (ACA-Py uses `json.dumps`, we use sorted keys).
/// `sig_data` and `signature` are padded base64url like ACA-Py writes; either padding reads.
public struct SignatureDecorator: Sendable, Hashable, Codable {
    public static let signatureType = "https://didcomm.org/signature/1.0/ed25519Sha512_single"
    public static let legacySignatureType = "did:sov:BzCbsNYhMrjHiqZDTUASHg;spec/signature/1.0/ed25519Sha512_single"

    public var type: String
    /// base64url of the 64-byte signature.
    public var signature: String
    /// base64url of timestamp || JSON value.
    public var sigData: String
    /// The signer's base58 verkey.
    public var signer: String

    enum CodingKeys: String, CodingKey {
        case type = "@type"
        case signature
        case sigData = "sig_data"
        case signer
    }

    public init(type: String, signature: String, sigData: String, signer: String) {
        self.type = type
        self.signature = signature
        self.sigData = sigData
        self.signer = signer
    }

    /// What a valid signature vouches for.
    public struct Verified: Sendable, Hashable {
        /// The signed JSON value, decoded.
        public let value: JSONValue
        /// The signed JSON text exactly as signed.
        public let valueJSON: [UInt8]
        /// The signer's base58 verkey.
        public let signer: String
        /// Seconds since 1970 as the signer stated them.
        public let timestamp: UInt64
    }

    /// Signs JSON text as is.
    public static func sign(json valueJSON: [UInt8], with key: Ed25519KeyPair, timestamp: UInt64 = currentTimestamp())
        -> SignatureDecorator
    {
        var data = [UInt8]()
        data.reserveCapacity(8 + valueJSON.count)
        withUnsafeBytes(of: timestamp.bigEndian) { data.append(contentsOf: $0) }
        data.append(contentsOf: valueJSON)
        return SignatureDecorator(
            type: signatureType,
            signature: Base64.encodeURL(key.sign(data), padding: true),
            sigData: Base64.encodeURL(data, padding: true),
            signer: key.verkeyBase58)
    }

    /// Serialises `value` (sorted keys, unescaped slashes) and signs it.
    public static func sign(_ value: JSONValue, with key: Ed25519KeyPair, timestamp: UInt64 = currentTimestamp()) throws
        -> SignatureDecorator
    {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        let json: Data
        do {
            json = try encoder.encode(value)
        } catch {
            throw CryptoError(.invalidMessage, "value cannot be serialised as JSON")
        }
        return sign(json: [UInt8](json), with: key, timestamp: timestamp)
    }

    /// Reads the decorator out of a message field (e.g. `message["connection~sig"]`).
    public init(json: JSONValue) throws {
        guard case .object(let fields) = json,
            let type = fields["@type"]?.stringValue, let signature = fields["signature"]?.stringValue,
            let sigData = fields["sig_data"]?.stringValue, let signer = fields["signer"]?.stringValue
        else {
            throw CryptoError(.malformedSignature, "signature decorator needs @type, signature, sig_data and signer")
        }
        self.init(type: type, signature: signature, sigData: sigData, signer: signer)
    }

    /// The decorator as a JSON value, to put into a message.
    public var json: JSONValue {
        .object([
            "@type": .string(type), "signature": .string(signature), "sig_data": .string(sigData),
            "signer": .string(signer),
        ])
    }

    /// Checks the signature and returns the signed value. With `expectedSigner` (base58 or
    /// did:key), also requires that key to be the signer, as a Connection Response's
    /// `connection~sig` must be signed by the invitation key.
    public func verify(expectedSigner: String? = nil) throws -> Verified {
        guard type == Self.signatureType || type == Self.legacySignatureType else {
            throw CryptoError(.unsupportedAlgorithm, "unsupported signature type", details: type)
        }
        let verkey: [UInt8]
        let data: [UInt8]
        let signatureBytes: [UInt8]
        do {
            verkey = try KeyReference.verkey(from: signer)
            data = try Base64.decode(sigData)
            signatureBytes = try Base64.decode(signature)
        } catch {
            throw CryptoError(.malformedSignature, "signature decorator has undecodable fields")
        }
        guard data.count > 8 else { throw CryptoError(.malformedSignature, "sig_data is too short") }
        if let expectedSigner {
            guard let expected = try? KeyReference.verkey(from: expectedSigner), expected == verkey else {
                throw CryptoError(
                    .invalidSignature, "signed by another key than expected",
                    details: "signer \(signer), expected \(expectedSigner)")
            }
        }
        guard Ed25519.verify(signature: signatureBytes, message: data, verkey: verkey) else {
            throw CryptoError(.invalidSignature, "signature does not verify")
        }
        let timestamp = data.prefix(8).reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
        let valueJSON = Array(data[8...])
        let value: JSONValue
        do {
            value = try JSONValue(parsing: valueJSON)
        } catch {
            throw CryptoError(.malformedSignature, "signed data is not JSON")
        }
        return Verified(value: value, valueJSON: valueJSON, signer: Base58.encode(verkey), timestamp: timestamp)
    }

    public static func currentTimestamp() -> UInt64 { UInt64(max(0, Date().timeIntervalSince1970)) }
}
