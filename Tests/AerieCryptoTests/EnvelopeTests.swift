import Foundation
import Testing

@testable import AerieCrypto

@Suite(.timeLimit(.minutes(5))) struct EnvelopeTests {
    static let alice = try! Ed25519KeyPair(seed: Array("aerie-test-alice-000000000000000".utf8))
    static let bob = try! Ed25519KeyPair(seed: Array("aerie-test-bob-00000000000000000".utf8))
    static let carol = try! Ed25519KeyPair(seed: Array("aerie-test-carol-000000000000000".utf8))
    static let message = Array(
        #"{"@type":"https://didcomm.org/basicmessage/1.0/message","@id":"1","content":"hi / there"}"#.utf8)

    // MARK: Known answers: Credo 0.5 envelopes (openwallet-foundation/credo-ts
    // packages/askar/tests/askar-didcomm-credo-05.test.ts).

    static let credoRecipientSeed = "226e10dad834f65c4e2b4bed1c29db06908f225eaa27ca7ebe2b74258fd6f1eb"
    static let credoRecipientKid = "BTfNVH1CK5G7oGFdpnAER3Zi4swrksbuEk1f3WMUxqhf"

    static func credoEnvelope(protected: String, ciphertext: String, iv: String, tag: String) -> [UInt8] {
        Array(#"{"protected":"\#(protected)","ciphertext":"\#(ciphertext)","iv":"\#(iv)","tag":"\#(tag)"}"#.utf8)
    }

    @Test func credoAuthcryptVector() throws {
        let recipient = try Ed25519KeyPair(seed: Hex.decode(Self.credoRecipientSeed))
        #expect(recipient.verkeyBase58 == Self.credoRecipientKid)
        #expect(Base64.encodeURL(recipient.verkey) == "m2lbHnBNuvMlBnJrV1tPKLc-Jdabzd_GWXs1Ft39U_4")
        let envelope = Self.credoEnvelope(
            protected:
                "eyJlbmMiOiJ4Y2hhY2hhMjBwb2x5MTMwNV9pZXRmIiwidHlwIjoiSldNLzEuMCIsImFsZyI6IkF1dGhjcnlwdCIsInJlY2lwaWVudHMiOlt7ImVuY3J5cHRlZF9rZXkiOiJfWm5YYkdYLVFwTG8xVEllY1BnbDFFZUhiZEpyMUMteWNvc25fWWVDZm9BeUlzUVk4UmFBTG1IMFZlcEhQcnMwIiwiaGVhZGVyIjp7ImtpZCI6IkJUZk5WSDFDSzVHN29HRmRwbkFFUjNaaTRzd3Jrc2J1RWsxZjNXTVV4cWhmIiwic2VuZGVyIjoiWjBBZXZVYkRsand4YzJsdVhpYWI5M1Z2OUw1YzBGdm4tV3ljaUpHc0RYcWlobVdtTEg1R1JtQjVaN2FTRVNfQXFsMDByUllQMDRkaWg1YjVSTG9ydEg1N2JUSER3QnhGallZTElMSE9ValI4NUZJeHdsSnNhM1NKUXY0IiwiaXYiOiJjYjJlaDdYRHdFSVU0WFNrWDduOFl6cVVNSXRMUWlUbyJ9fV19",
            ciphertext: "ZN9MbaJYFEIcIsjS7RJL0-J8QvuJCRgfUyunQPlN2FTa88HfCFyJfwCWeN1RbZs",
            iv: "t2rSkBzjq8uu7-ji", tag: "bOflaQwnOsUngIeoh9adww")
        let unpacked = try DIDCommEnvelope.unpack(envelope) { kids in
            kids.contains(recipient.verkeyBase58) ? recipient : nil
        }
        #expect(try jsonStrings(unpacked.plaintext) == ["@type": "https://didcomm.org/connections/1.0"])
        #expect(unpacked.algorithm == .authcrypt)
        #expect(unpacked.recipientVerkey == Self.credoRecipientKid)
        #expect(
            unpacked.senderVerkey == Base58.encode(try Base64.decode("R0s2NusuG1Yth0izz5kNzd1_-vLb4m5sUoSUBVDOOcY")))
    }

    @Test func credoAnoncryptVector() throws {
        let recipient = try Ed25519KeyPair(seed: Hex.decode(Self.credoRecipientSeed))
        let envelope = Self.credoEnvelope(
            protected:
                "eyJlbmMiOiJ4Y2hhY2hhMjBwb2x5MTMwNV9pZXRmIiwidHlwIjoiSldNLzEuMCIsImFsZyI6IkFub25jcnlwdCIsInJlY2lwaWVudHMiOlt7ImVuY3J5cHRlZF9rZXkiOiJZME9uTUNGZ2VIQUpEV1Y4NkVhWEpQWXN5RUVlWXVfZVNQX2ltX3VDMUFkYkpRalI4RkRTUFZxd1RrUU5GcDc1X2RwemZpX2pqcGlUVTZhQ2VobThTdzMwS3B5bmJHemNROWdsUnFxY1NnQSIsImhlYWRlciI6eyJraWQiOiJCVGZOVkgxQ0s1RzdvR0ZkcG5BRVIzWmk0c3dya3NidUVrMWYzV01VeHFoZiJ9fV19",
            ciphertext: "GTzzcCSkcofiC2dH2LRChTxikb9Nn8ZAesGY6iJWzeLNQea5SgEqM0zw-cwVSbFlPSq5_w",
            iv: "EF6uHk2lUSoayxV7", tag: "op_xOrKdtJVhCa0u1hBJ7A")
        let unpacked = try DIDCommEnvelope.unpack(envelope) { _ in recipient }
        #expect(try jsonStrings(unpacked.plaintext) == ["@type": "https://didcomm.org/another-protocol/1.0"])
        #expect(unpacked.algorithm == .anoncrypt)
        #expect(unpacked.senderVerkey == nil)
        #expect(unpacked.recipientVerkey == Self.credoRecipientKid)
    }

    // MARK: Round trips

    @Test(arguments: [AEAD.chacha20Poly1305, AEAD.xchacha20Poly1305])
    func authcryptRoundTrip(cipher: AEAD) throws {
        let packed = try DIDCommEnvelope.pack(
            Self.message, to: [Self.bob.verkeyBase58], from: Self.alice, contentCipher: cipher)
        let top = try json(packed)
        #expect(try Base64.decode(top["iv"] as! String).count == cipher.nonceByteCount)
        let header = try json(Base64.decode(top["protected"] as! String))
        #expect(header["enc"] as? String == "xchacha20poly1305_ietf")
        #expect(header["typ"] as? String == "JWM/1.0")
        #expect(header["alg"] as? String == "Authcrypt")
        let unpacked = try DIDCommEnvelope.unpack(packed) { _ in Self.bob }
        #expect(unpacked.plaintext == Self.message)
        #expect(unpacked.senderVerkey == Self.alice.verkeyBase58)
        #expect(unpacked.recipientVerkey == Self.bob.verkeyBase58)
    }

    /// With a tenant's `keyScope` the X25519 keys come from `X25519PublicKeys`: the envelopes are
    /// the same to the other side, either way round, authcrypt and anoncrypt.
    @Test(arguments: [true, false])
    func keyScopeChangesNothingOnTheWire(authcrypt: Bool) throws {
        let scope = "tenant-\(authcrypt)"
        let sender = authcrypt ? Self.alice : nil
        for _ in 0..<2 {
            let scoped = try DIDCommEnvelope.pack(Self.message, to: [Self.bob.verkeyBase58], from: sender, keyScope: scope)
            let opened = try DIDCommEnvelope(parsing: scoped).open(with: Self.bob)
            #expect(opened.plaintext == Self.message)
            #expect(opened.senderVerkey == sender?.verkeyBase58)
            let plain = try DIDCommEnvelope.pack(Self.message, to: [Self.bob.verkeyBase58], from: sender)
            let reopened = try DIDCommEnvelope(parsing: plain).open(with: Self.bob, keyScope: scope)
            #expect(reopened.plaintext == Self.message)
            #expect(reopened.senderVerkey == sender?.verkeyBase58)
        }
        // A scoped open still refuses what is not for the key given.
        let forAlice = try DIDCommEnvelope.pack(Self.message, to: [Self.alice.verkeyBase58], from: sender, keyScope: scope)
        #expect(throws: CryptoError.self) { try DIDCommEnvelope(parsing: forAlice).open(with: Self.bob, keyScope: scope) }
    }

    @Test func anoncryptRoundTrip() throws {
        let packed = try DIDCommEnvelope.pack(Self.message, to: [Self.bob.verkeyBase58], from: nil)
        let unpacked = try DIDCommEnvelope.unpack(packed) { _ in Self.bob }
        #expect(unpacked.plaintext == Self.message)
        #expect(unpacked.senderVerkey == nil)
        #expect(unpacked.algorithm == .anoncrypt)
        #expect(try DIDCommEnvelope.pack([], to: [Self.bob.verkeyBase58], from: nil).isEmpty == false)
        #expect(
            try DIDCommEnvelope.unpack(DIDCommEnvelope.pack([], to: [Self.bob.verkeyBase58], from: nil)) { _ in Self.bob
            }.plaintext == [])
    }

    @Test(arguments: [true, false])
    func multipleRecipients(authcrypt: Bool) throws {
        let recipients = [Self.bob, Self.carol, Ed25519KeyPair.generate()]
        // did:key references are accepted and written as base58 kids.
        let references = try [
            recipients[0].verkeyBase58, DIDKey.keyReference(verkey: recipients[1].verkey),
            DIDKey.did(verkey: recipients[2].verkey),
        ]
        let packed = try DIDCommEnvelope.pack(Self.message, to: references, from: authcrypt ? Self.alice : nil)
        let parsed = try DIDCommEnvelope(parsing: packed)
        #expect(parsed.recipientKids == recipients.map(\.verkeyBase58))
        for recipient in recipients {
            let unpacked = try parsed.open(with: recipient)
            #expect(unpacked.plaintext == Self.message)
            #expect(unpacked.recipientVerkey == recipient.verkeyBase58)
            #expect(unpacked.senderVerkey == (authcrypt ? Self.alice.verkeyBase58 : nil))
        }
        #expect(throws: CryptoError.self) { try parsed.open(with: Self.alice) }
    }

    @Test func asyncLookupGetsAllKids() async throws {
        let packed = try DIDCommEnvelope.pack(
            Self.message, to: [Self.carol.verkeyBase58, Self.bob.verkeyBase58], from: Self.alice)
        let unpacked = try await DIDCommEnvelope.unpack(packed) { (kids: [String]) async throws -> Ed25519KeyPair? in
            #expect(kids == [Self.carol.verkeyBase58, Self.bob.verkeyBase58])
            await Task.yield()
            return Self.bob
        }
        #expect(unpacked.recipientVerkey == Self.bob.verkeyBase58)
        // A synchronous closure picks the synchronous overload, also in async code.
        let again = try DIDCommEnvelope.unpack(packed) { _ in Self.carol }
        #expect(again.recipientVerkey == Self.carol.verkeyBase58)
    }

    @Test func packRejectsBadInput() {
        #expect(throws: CryptoError.self) { try DIDCommEnvelope.pack(Self.message, to: [], from: nil) }
        #expect(throws: CryptoError.self) { try DIDCommEnvelope.pack(Self.message, to: ["not-base58-0OIl"], from: nil) }
        #expect(throws: CryptoError.self) {
            try DIDCommEnvelope.pack(Self.message, to: ["2NEpo7TZRRrLZSi2U"], from: nil)
        }
        #expect(throws: CryptoError.self) {
            try DIDCommEnvelope.pack(Self.message, to: [Self.bob.verkeyBase58, Self.bob.verkeyBase58], from: nil)
        }
    }

    // MARK: Failures

    @Test func unknownRecipient() throws {
        let packed = try DIDCommEnvelope.pack(Self.message, to: [Self.bob.verkeyBase58], from: Self.alice)
        let none = #expect(throws: CryptoError.self) { try DIDCommEnvelope.unpack(packed) { _ in nil } }
        #expect(none?.code == .unknownRecipient)
        let wrong = #expect(throws: CryptoError.self) { try DIDCommEnvelope.unpack(packed) { _ in Self.carol } }
        #expect(wrong?.code == .unknownRecipient)
    }

    /// A key claiming to be the recipient (same kid, other secret) cannot open it.
    @Test func wrongKeyForKid() throws {
        let packed = try DIDCommEnvelope.pack(Self.message, to: [Self.bob.verkeyBase58], from: Self.alice)
        var top = try json(packed)
        var header = try json(Base64.decode(top["protected"] as! String))
        var recipients = header["recipients"] as! [[String: Any]]
        var fields = recipients[0]["header"] as! [String: Any]
        fields["kid"] = Self.carol.verkeyBase58
        recipients[0]["header"] = fields
        header["recipients"] = recipients
        top["protected"] = Base64.encodeURL(try serialize(header))
        let error = #expect(throws: CryptoError.self) { try DIDCommEnvelope.unpack(serialize(top)) { _ in Self.carol } }
        #expect(error?.code == .decryptionFailed)
    }

    @Test(arguments: [true, false])
    func everyTamperedByteIsRejected(authcrypt: Bool) throws {
        let packed = try DIDCommEnvelope.pack(
            Array("short message".utf8), to: [Self.carol.verkeyBase58, Self.bob.verkeyBase58],
            from: authcrypt ? Self.alice : nil)
        let top = try json(packed)
        var attempts = 0
        // Top-level parts: flip each byte of the decoded value.
        for part in ["iv", "ciphertext", "tag"] {
            let bytes = try Base64.decode(top[part] as! String)
            for index in bytes.indices {
                var copy = top
                var flipped = bytes
                flipped[index] ^= 0x01
                copy[part] = Base64.encodeURL(flipped)
                try expectRejected(serialize(copy), "\(part)[\(index)]")
                attempts += 1
            }
        }
        // Protected header: flip each byte of its JSON (some flips break JSON, others only the AAD).
        let protectedJSON = try Base64.decode(top["protected"] as! String)
        for index in protectedJSON.indices {
            var copy = top
            var flipped = protectedJSON
            flipped[index] ^= 0x01
            copy["protected"] = Base64.encodeURL(flipped)
            try expectRejected(serialize(copy), "protected[\(index)]")
            attempts += 1
        }
        // Each recipient's encrypted_key, iv and sender, re-encoded so only that value changes.
        let header = try json(protectedJSON)
        let recipients = header["recipients"] as! [[String: Any]]
        for r in recipients.indices {
            let fields = recipients[r]["header"] as! [String: Any]
            var targets = [("encrypted_key", recipients[r]["encrypted_key"] as! String)]
            if authcrypt { targets += [("iv", fields["iv"] as! String), ("sender", fields["sender"] as! String)] }
            for (name, value) in targets {
                let bytes = try Base64.decode(value)
                for index in bytes.indices {
                    var flipped = bytes
                    flipped[index] ^= 0x01
                    var recipientsCopy = recipients
                    if name == "encrypted_key" {
                        recipientsCopy[r]["encrypted_key"] = Base64.encodeURL(flipped)
                    } else {
                        var f = fields
                        f[name] = Base64.encodeURL(flipped)
                        recipientsCopy[r]["header"] = f
                    }
                    var headerCopy = header
                    headerCopy["recipients"] = recipientsCopy
                    var copy = top
                    copy["protected"] = Base64.encodeURL(try serialize(headerCopy))
                    // Only the recipient whose entry was changed is asked to open it.
                    let key = r == 0 ? Self.carol : Self.bob
                    try expectRejected(serialize(copy), "recipient \(r) \(name)[\(index)]", key: key)
                    attempts += 1
                }
            }
        }
        #expect(attempts > 300)
    }

    @Test func wrongAlgorithms() throws {
        let anon = try DIDCommEnvelope.pack(Self.message, to: [Self.bob.verkeyBase58], from: nil)
        let auth = try DIDCommEnvelope.pack(Self.message, to: [Self.bob.verkeyBase58], from: Self.alice)
        let cases: [([UInt8], String, Any, CryptoError.Code)] = [
            (auth, "alg", "ECDH-1PU+A256KW", .unsupportedAlgorithm),
            (auth, "enc", "A256GCM", .unsupportedAlgorithm),
            (anon, "alg", "Authcrypt", .malformedEnvelope),  // authcrypt without sender
            (auth, "alg", "Anoncrypt", .malformedEnvelope),  // anoncrypt with a sender
            (auth, "alg", 1, .malformedEnvelope),
            (auth, "recipients", [Any](), .malformedEnvelope),
            (auth, "recipients", "x", .malformedEnvelope),
        ]
        for (envelope, field, value, code) in cases {
            var top = try json(envelope)
            var header = try json(Base64.decode(top["protected"] as! String))
            header[field] = value
            top["protected"] = Base64.encodeURL(try serialize(header))
            let error = #expect(throws: CryptoError.self, "\(field)=\(value)") {
                try DIDCommEnvelope.unpack(serialize(top)) { _ in Self.bob }
            }
            #expect(error?.code == code, "\(field)=\(value)")
        }
    }

    @Test func truncatedAndGarbage() throws {
        let packed = try DIDCommEnvelope.pack(Self.message, to: [Self.bob.verkeyBase58], from: Self.alice)
        for length in stride(from: 0, to: packed.count, by: 7) {
            #expect(throws: CryptoError.self) {
                try DIDCommEnvelope.unpack(Array(packed.prefix(length))) { _ in Self.bob }
            }
        }
        let garbage: [String] = [
            "", "null", "[]", "{}", "\"x\"", "{\"protected\":1,\"iv\":\"\",\"ciphertext\":\"\",\"tag\":\"\"}",
            "{\"protected\":\"!!\",\"iv\":\"AAAAAAAAAAAAAAAA\",\"ciphertext\":\"\",\"tag\":\"AAAAAAAAAAAAAAAAAAAAAA\"}",
            "{\"protected\":\"e30\",\"iv\":\"AAAAAAAAAAAAAAAA\",\"ciphertext\":\"\",\"tag\":\"AAAAAAAAAAAAAAAAAAAAAA\"}",
            "{\"protected\":\"e30\",\"iv\":\"AAAA\",\"ciphertext\":\"\",\"tag\":\"AAAAAAAAAAAAAAAAAAAAAA\"}",
            "{\"protected\":\"e30\",\"iv\":\"AAAAAAAAAAAAAAAA\",\"ciphertext\":\"\",\"tag\":\"AAAA\"}",
        ]
        for text in garbage {
            let error = #expect(throws: CryptoError.self, "\(text)") {
                try DIDCommEnvelope.unpack(Array(text.utf8)) { _ in Self.bob }
            }
            #expect(error?.code == .malformedEnvelope, "\(text)")
        }
        for _ in 0..<50 {
            #expect(throws: CryptoError.self) {
                try DIDCommEnvelope.unpack(Random.bytes(Int.random(in: 0..<300))) { _ in Self.bob }
            }
        }
        // Duplicate recipients and a recipient without kid.
        var top = try json(packed)
        var header = try json(Base64.decode(top["protected"] as! String))
        let recipients = header["recipients"] as! [[String: Any]]
        header["recipients"] = recipients + recipients
        top["protected"] = Base64.encodeURL(try serialize(header))
        #expect(throws: CryptoError.self) { try DIDCommEnvelope(parsing: serialize(top)) }
        header["recipients"] = [["encrypted_key": "AAAA"]]
        top["protected"] = Base64.encodeURL(try serialize(header))
        #expect(throws: CryptoError.self) { try DIDCommEnvelope(parsing: serialize(top)) }
    }

    /// Recipients in the unprotected JWE position are read too (ACA-Py's parser allows it).
    @Test func unprotectedRecipients() throws {
        let packed = try DIDCommEnvelope.pack(Self.message, to: [Self.bob.verkeyBase58], from: nil)
        var top = try json(packed)
        var header = try json(Base64.decode(top["protected"] as! String))
        top["recipients"] = header.removeValue(forKey: "recipients")
        top["protected"] = Base64.encodeURL(try serialize(header))
        // The AAD changed, so decryption fails, but parsing finds the recipient.
        let parsed = try DIDCommEnvelope(parsing: serialize(top))
        #expect(parsed.recipientKids == [Self.bob.verkeyBase58])
        #expect(throws: CryptoError.self) { try parsed.open(with: Self.bob) }
    }

    private func expectRejected(
        _ envelope: [UInt8], _ what: String, key: Ed25519KeyPair = EnvelopeTests.bob,
        sourceLocation: SourceLocation = #_sourceLocation
    ) throws {
        do {
            let unpacked = try DIDCommEnvelope.unpack(envelope) { _ in key }
            Issue.record(
                "tampered \(what) was accepted: \(unpacked.plaintext.count) bytes", sourceLocation: sourceLocation)
        } catch is CryptoError {
        } catch {
            Issue.record("tampered \(what) gave a non-CryptoError: \(error)", sourceLocation: sourceLocation)
        }
    }
}

func json(_ bytes: [UInt8]) throws -> [String: Any] {
    try #require(JSONSerialization.jsonObject(with: Data(bytes)) as? [String: Any])
}

func jsonStrings(_ bytes: [UInt8]) throws -> [String: String] {
    try #require(JSONSerialization.jsonObject(with: Data(bytes)) as? [String: String])
}

func serialize(_ object: Any) throws -> [UInt8] {
    [UInt8](try JSONSerialization.data(withJSONObject: object))
}
