import Testing

@testable import AerieCrypto

/// Known answers from the did:key spec's ed25519-x25519 vectors (w3c-ccg/did-method-key
/// test-vectors/ed25519-x25519.json): seed -> Ed25519 verkey -> X25519 key pair.
@Suite(.timeLimit(.minutes(5))) struct PrimitivesTests {
    static let vectors: [(seedHex: String, verkey: String, x25519Public: String, x25519Private: String)] = [
        (
            "0000000000000000000000000000000000000000000000000000000000000000",
            "4zvwRjXUKGfvwnParsHAS3HuSVzV5cA4McphgmoCtajS", "7By6kV2t2d188odEM4ExAve1UithKT6dLva4dwsDT3ak",
            "6QN8DfuN9hjgHgPvLXqgzqYE3jRRGRrmJQZkd5tL8paR"
        ),
        (
            "0000000000000000000000000000000000000000000000000000000000000001",
            "6ASf5EcmmEHTgDJ4X4ZT5vT6iHVJBXPg5AN5YoTCpGWt", "FcoNC5NqP9CePWbhfz95iHaEsCjGkZUioK9Ck7Qiw286",
            "HBTcN2MrXNRj9xF9oi8QqYyuEPv3JLLjQKuEgW9oxVKP"
        ),
        (
            "0000000000000000000000000000000000000000000000000000000000000004",
            "J3qYF7YJMKCqQke47UQwiHizgFUXapHxRxKmxbkar89x", "FbQtKTG6FjWSeYZyowWYv2KBcCbwmHqH6HUuxdJ4xkwP",
            "8Zybi2bqQ8YB4uPm3iy2rkDCmbB4wkG2Y2ig5YAkgNdg"
        ),
    ]

    @Test(arguments: vectors.indices)
    func seedToVerkeyAndX25519(index: Int) throws {
        let v = Self.vectors[index]
        let pair = try Ed25519KeyPair(seed: Hex.decode(v.seedHex))
        #expect(pair.verkeyBase58 == v.verkey)
        let x = pair.x25519()
        #expect(Base58.encode(x.publicKey) == v.x25519Public)
        #expect(try Base58.encode(Ed25519.x25519PublicKey(fromVerkey: pair.verkey)) == v.x25519Public)
        let secret = x.secret.withUnsafeBytes { Array($0) }
        #expect(Base58.encode(secret) == v.x25519Private)
    }

    /// `x25519()` derives its public half from the secret; it must equal the verkey's conversion.
    @Test func x25519PublicHalfEqualsTheVerkeyConversion() throws {
        for _ in 0..<500 {
            let pair = Ed25519KeyPair.generate()
            #expect(try pair.x25519().publicKey == Ed25519.x25519PublicKey(fromVerkey: pair.verkey))
        }
    }

    /// The per-tenant conversions: the same bytes as converting each time, kept per scope, and a
    /// verkey that is no valid point is refused every time (never remembered).
    @Test func x25519PublicKeysRememberConversionsPerScope() throws {
        let cache = X25519PublicKeys(capacity: 3)
        let pairs = (0..<4).map { _ in Ed25519KeyPair.generate() }
        for pair in pairs.prefix(2) {
            let expected = try Ed25519.x25519PublicKey(fromVerkey: pair.verkey)
            #expect(try cache.publicKey(ofVerkey: pair.verkey, scope: "a") == expected)
            #expect(cache.publicKey(of: pair, scope: "a") == expected)
        }
        #expect(cache.count == 2)
        #expect(cache.publicKey(of: pairs[0], scope: "b") == pairs[0].x25519().publicKey)
        #expect(cache.count == 3)
        // Full: emptied, then holds the new entry.
        #expect(try cache.publicKey(ofVerkey: pairs[3].verkey, scope: "a") == pairs[3].x25519().publicKey)
        #expect(cache.count == 1)
        // The y of the point of order 4 (all ones but the sign bit): small order, refused.
        var bad = [UInt8](repeating: 0, count: 32)
        bad[0] = 1
        for _ in 0..<2 { #expect(throws: CryptoError.self) { try cache.publicKey(ofVerkey: bad, scope: "a") } }
        #expect(cache.count == 1)
    }

    @Test func signAndVerify() throws {
        let pair = Ed25519KeyPair.generate()
        let message = Array("attack at dawn".utf8)
        let signature = pair.sign(message)
        #expect(signature.count == 64)
        #expect(Ed25519.verify(signature: signature, message: message, verkey: pair.verkey))
        var tampered = message
        tampered[0] ^= 1
        #expect(!Ed25519.verify(signature: signature, message: tampered, verkey: pair.verkey))
        #expect(!Ed25519.verify(signature: signature, message: message, verkey: Ed25519KeyPair.generate().verkey))
        #expect(!Ed25519.verify(signature: Array(signature.dropLast()), message: message, verkey: pair.verkey))
        #expect(!Ed25519.verify(signature: signature, message: message, verkey: [1, 2, 3]))
    }

    /// RFC 8032 §7.1 test 1 (empty message).
    @Test func rfc8032Vector() throws {
        let pair = try Ed25519KeyPair(
            seed: Hex.decode("9d61b19deffd5a60ba844af492ec2cc44449c5697b326919703bac031cae7f60"))
        #expect(Hex.encode(pair.verkey) == "d75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a")
        #expect(
            Hex.encode(pair.sign([]))
                == "e5564300c360ac729086e2cc806e828a84877f1eb8e5d974d873e065224901555fb8821590a33bacc61e39701cf9b46bd25bf5f0595bbe24655141438e7a100b"
        )
    }

    @Test func keyPairFromSecret() throws {
        let pair = Ed25519KeyPair.generate()
        #expect(try Ed25519KeyPair(secret: pair.seed).verkey == pair.verkey)
        #expect(try Ed25519KeyPair(secret: pair.secretKey).verkey == pair.verkey)
        // A 64-byte key whose public half belongs to another key is refused.
        var mixed = pair.secretKey.withUnsafeBytes { Array($0) }
        mixed.replaceSubrange(32..., with: Ed25519KeyPair.generate().verkey)
        #expect(throws: CryptoError.self) { try Ed25519KeyPair(secret: SecretBytes(mixed)) }
        #expect(throws: CryptoError.self) { try Ed25519KeyPair(seed: [1, 2, 3]) }
        #expect(throws: CryptoError.self) { try Ed25519KeyPair(secret: SecretBytes([UInt8](repeating: 1, count: 31))) }
    }

    @Test func invalidVerkeyConversionIsAnError() {
        // Not on the curve: y = 2 has no valid x.
        var bad = [UInt8](repeating: 0, count: 32)
        bad[0] = 2
        #expect(throws: CryptoError.self) { try Ed25519.x25519PublicKey(fromVerkey: bad) }
        #expect(throws: CryptoError.self) { try Ed25519.x25519PublicKey(fromVerkey: [0]) }
    }

    @Test func boxRoundTripAndFailures() throws {
        let alice = Ed25519KeyPair.generate().x25519()
        let bob = X25519KeyPair.generate()
        let nonce = Random.bytes(Box.nonceByteCount)
        let sealed = try Box.seal(Array("hi bob".utf8), nonce: nonce, to: bob.publicKey, from: alice)
        let opened = try Box.open(sealed, nonce: nonce, from: alice.publicKey, to: bob)
        #expect(opened.withUnsafeBytes { Array($0) } == Array("hi bob".utf8))
        var tampered = sealed
        tampered[3] ^= 0x80
        #expect(throws: CryptoError.self) { try Box.open(tampered, nonce: nonce, from: alice.publicKey, to: bob) }
        #expect(throws: CryptoError.self) {
            try Box.open(sealed, nonce: Random.bytes(24), from: alice.publicKey, to: bob)
        }
        #expect(throws: CryptoError.self) {
            try Box.open(sealed, nonce: nonce, from: X25519KeyPair.generate().publicKey, to: bob)
        }
        #expect(throws: CryptoError.self) { try Box.open([1, 2], nonce: nonce, from: alice.publicKey, to: bob) }
        #expect(throws: CryptoError.self) { try Box.seal([1], nonce: [1], to: bob.publicKey, from: alice) }
        #expect(throws: CryptoError.self) { try Box.seal([1], nonce: nonce, to: [1], from: alice) }
    }

    @Test func sealedBoxRoundTripAndFailures() throws {
        let bob = Ed25519KeyPair.generate().x25519()
        let sealed = try SealedBox.seal(Array("anonymous".utf8), to: bob.publicKey)
        #expect(sealed.count == 9 + SealedBox.overheadByteCount)
        #expect(try SealedBox.open(sealed, with: bob).withUnsafeBytes { Array($0) } == Array("anonymous".utf8))
        #expect(throws: CryptoError.self) { try SealedBox.open(sealed, with: X25519KeyPair.generate()) }
        var tampered = sealed
        tampered[tampered.count - 1] ^= 1
        #expect(throws: CryptoError.self) { try SealedBox.open(tampered, with: bob) }
        #expect(throws: CryptoError.self) { try SealedBox.open(Array(sealed.prefix(47)), with: bob) }
    }

    @Test(arguments: [AEAD.chacha20Poly1305, AEAD.xchacha20Poly1305])
    func aeadRoundTripAndFailures(aead: AEAD) throws {
        let key = SecretBytes.random(count: 32)
        let nonce = aead.randomNonce()
        let aad = Array("header".utf8)
        let message = Array("payload".utf8)
        let (c, t) = try aead.seal(message, key: key, nonce: nonce, authenticating: aad)
        #expect(c.count == message.count && t.count == 16)
        #expect(try aead.open(ciphertext: c, tag: t, key: key, nonce: nonce, authenticating: aad) == message)
        #expect(try aead.openCombined(try aead.sealCombined([], key: key, nonce: nonce), key: key, nonce: nonce) == [])
        var bad = c
        bad[0] ^= 1
        #expect(throws: CryptoError.self) {
            try aead.open(ciphertext: bad, tag: t, key: key, nonce: nonce, authenticating: aad)
        }
        #expect(throws: CryptoError.self) {
            try aead.open(ciphertext: c, tag: t, key: key, nonce: nonce, authenticating: [])
        }
        #expect(throws: CryptoError.self) {
            try aead.open(ciphertext: c, tag: t, key: .random(count: 32), nonce: nonce, authenticating: aad)
        }
        #expect(throws: CryptoError.self) {
            try aead.open(ciphertext: c, tag: t, key: key, nonce: Array(nonce.dropLast()), authenticating: aad)
        }
        #expect(throws: CryptoError.self) { try aead.openCombined([1, 2, 3], key: key, nonce: nonce) }
        #expect(throws: CryptoError.self) { try aead.seal(message, key: .random(count: 16), nonce: nonce) }
        #expect(throws: CryptoError.self) { try aead.seal(message, key: key, nonce: [1, 2, 3]) }
    }

    /// RFC 8439 §2.8.2 AEAD test vector (ChaCha20-Poly1305-IETF).
    @Test func chachaRFC8439Vector() throws {
        let key = SecretBytes(try Hex.decode("808182838485868788898a8b8c8d8e8f909192939495969798999a9b9c9d9e9f"))
        let nonce = try Hex.decode("070000004041424344454647")
        let aad = try Hex.decode("50515253c0c1c2c3c4c5c6c7")
        let plaintext = Array(
            "Ladies and Gentlemen of the class of '99: If I could offer you only one tip for the future, sunscreen would be it."
                .utf8)
        let (c, t) = try AEAD.chacha20Poly1305.seal(plaintext, key: key, nonce: nonce, authenticating: aad)
        #expect(Hex.encode(c.prefix(16)) == "d31a8d34648e60db7b86afbc53ef7ec2")
        #expect(Hex.encode(t) == "1ae10b594f09e26a7e902ecbd0600691")
    }

    @Test func randomAndConstantTime() {
        let a = Random.bytes(32)
        #expect(a.count == 32 && a != Random.bytes(32))
        #expect(Random.bytes(0).isEmpty)
        #expect(ConstantTime.equal(a, a))
        #expect(!ConstantTime.equal(a, Random.bytes(32)))
        #expect(!ConstantTime.equal(a, Array(a.dropLast())))
        #expect(ConstantTime.equal([], []))
    }

    @Test func blake2bKnownAnswer() {
        // BLAKE2b-256("abc"), from the BLAKE2 reference implementation.
        #expect(
            Hex.encode(BLAKE2b.hash(Array("abc".utf8)))
                == "bddd813c634239723171ef3fee98579b94964e3bb1cb3e427262c8c068d52319")
    }

    @Test func secretsNeverPrint() throws {
        let secret = SecretBytes(Array("super secret value 1234567890123".utf8))
        let pair = try Ed25519KeyPair(seed: Array("00000000000000000000000000000000".utf8))
        let master = MasterKey.generate()
        let dataKey = DataKey.generate()
        for text in [
            "\(secret)", String(reflecting: secret), String(describing: secret), dumped(secret),
            "\(pair)", String(reflecting: pair), dumped(pair), dumped(pair.x25519()), String(reflecting: pair.x25519()),
            "\(master)", String(reflecting: master), dumped(master),
            "\(dataKey)", String(reflecting: dataKey), dumped(dataKey),
        ] {
            #expect(!text.contains("super secret"))
            #expect(!text.contains(master.base64))
            #expect(!text.contains("0000000000000000"))
            #expect(!text.contains("UInt8"), "no raw bytes: \(text)")
        }
        #expect("\(pair)".contains(pair.verkeyBase58))
        #expect("\(master)".contains(master.fingerprint))
    }

    private func dumped(_ value: Any) -> String {
        var out = ""
        dump(value, to: &out)
        return out
    }
}
