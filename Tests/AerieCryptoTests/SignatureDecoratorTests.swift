import AerieCore
import Foundation
import Testing

@testable import AerieCrypto

@Suite(.timeLimit(.minutes(5))) struct SignatureDecoratorTests {
    static let connection: JSONValue = [
        "DID": "8LXvA8e8DEoLfxxdtohXHU",
        "DIDDoc": [
            "service": [
                [
                    "serviceEndpoint": "https://example.org/didcomm/endpoint",
                    "recipientKeys": ["4zvwRjXUKGfvwnParsHAS3HuSVzV5cA4McphgmoCtajS"],
                ]
            ]
        ],
    ]

    @Test func signAndVerify() throws {
        let key = Ed25519KeyPair.generate()
        let decorator = try SignatureDecorator.sign(Self.connection, with: key, timestamp: 1_700_000_000)
        #expect(decorator.type == SignatureDecorator.signatureType)
        #expect(decorator.signer == key.verkeyBase58)
        #expect(decorator.sigData.hasSuffix("=") || decorator.sigData.count % 4 == 0)  // padded like ACA-Py
        let data = try Base64.decode(decorator.sigData)
        #expect(Array(data.prefix(8)) == [0, 0, 0, 0, 0x65, 0x53, 0xF1, 0x00])  // big-endian 1_700_000_000
        #expect(!String(decoding: data.dropFirst(8), as: UTF8.self).contains("\\/"))

        let verified = try decorator.verify(expectedSigner: key.verkeyBase58)
        #expect(verified.value == Self.connection)
        #expect(verified.signer == key.verkeyBase58)
        #expect(verified.timestamp == 1_700_000_000)
        #expect(try decorator.verify(expectedSigner: DIDKey.did(verkey: key.verkey)).value == Self.connection)

        // Through the JSON form a message carries.
        let reread = try SignatureDecorator(json: decorator.json)
        #expect(reread == decorator)
        let encoded = try JSONEncoder().encode(decorator)
        #expect(try JSONDecoder().decode(SignatureDecorator.self, from: encoded) == decorator)
    }

    @Test func legacyTypeAndUnpaddedFields() throws {
        let key = Ed25519KeyPair.generate()
        var decorator = SignatureDecorator.sign(json: Array(#"{"a":1}"#.utf8), with: key)
        decorator.type = SignatureDecorator.legacySignatureType
        decorator.sigData = decorator.sigData.replacingOccurrences(of: "=", with: "")
        decorator.signature = decorator.signature.replacingOccurrences(of: "=", with: "")
        #expect(try decorator.verify().value == ["a": 1])
    }

    @Test func rejections() throws {
        let key = Ed25519KeyPair.generate()
        let good = try SignatureDecorator.sign(Self.connection, with: key)

        var wrongType = good
        wrongType.type = "https://didcomm.org/signature/1.0/ed25519Sha256_single"
        #expect((#expect(throws: CryptoError.self) { try wrongType.verify() })?.code == .unsupportedAlgorithm)

        var tamperedData = good
        var data = try Base64.decode(good.sigData)
        data[data.count - 3] ^= 1
        tamperedData.sigData = Base64.encodeURL(data, padding: true)
        #expect((#expect(throws: CryptoError.self) { try tamperedData.verify() })?.code == .invalidSignature)

        var tamperedTime = good
        data = try Base64.decode(good.sigData)
        data[7] ^= 1
        tamperedTime.sigData = Base64.encodeURL(data, padding: true)
        #expect((#expect(throws: CryptoError.self) { try tamperedTime.verify() })?.code == .invalidSignature)

        var otherSigner = good
        otherSigner.signer = Ed25519KeyPair.generate().verkeyBase58
        #expect((#expect(throws: CryptoError.self) { try otherSigner.verify() })?.code == .invalidSignature)

        let unexpected = #expect(throws: CryptoError.self) {
            try good.verify(expectedSigner: Ed25519KeyPair.generate().verkeyBase58)
        }
        #expect(unexpected?.code == .invalidSignature)

        for broken in [
            SignatureDecorator(type: good.type, signature: "!!", sigData: good.sigData, signer: good.signer),
            SignatureDecorator(type: good.type, signature: good.signature, sigData: "AAAA", signer: good.signer),
            SignatureDecorator(type: good.type, signature: good.signature, sigData: good.sigData, signer: "0OIl"),
        ] {
            #expect((#expect(throws: CryptoError.self) { try broken.verify() })?.code == .malformedSignature)
        }
        // Signed bytes that are not JSON: valid signature, undecodable value.
        let notJSON = SignatureDecorator.sign(json: Array("not json".utf8), with: key)
        #expect((#expect(throws: CryptoError.self) { try notJSON.verify() })?.code == .malformedSignature)

        #expect(throws: CryptoError.self) { try SignatureDecorator(json: ["@type": "x"]) }
        #expect(throws: CryptoError.self) { try SignatureDecorator(json: "x") }
    }

    /// A decorator made by ACA-Py 1.2.7's SignatureDecorator.create (json.dumps, padded base64url).
    @Test func acapyVector() throws {
        let decorator = try SignatureDecorator(json: [
            "@type": "https://didcomm.org/signature/1.0/ed25519Sha512_single",
            "signature": "DVnrHg7aldhuMqS81sapyxSLvr99IHO9pWAgE3xq_zm4TvggL2nKPBqBvM44mIA0aQ6e1nPeaCKR9cUrrBq0CA==",
            "sig_data": "AAAAAGsCHLZ7ImEiOiAiYi9jIn0=",
            "signer": "2y6oVqbnTeZ4tv6WUY7FMHhY6SouNixyeWKHPgFDCsY8",
        ])
        let verified = try decorator.verify(expectedSigner: "2y6oVqbnTeZ4tv6WUY7FMHhY6SouNixyeWKHPgFDCsY8")
        #expect(verified.value == ["a": "b/c"])
        #expect(verified.valueJSON == Array(#"{"a": "b/c"}"#.utf8))
        // The signer is the key of ACA-Py seed "000…01" (32 ASCII characters).
        #expect(
            try Ed25519KeyPair(seed: Array("00000000000000000000000000000001".utf8)).verkeyBase58 == verified.signer)
    }
}
