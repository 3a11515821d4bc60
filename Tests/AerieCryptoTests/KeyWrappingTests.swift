import Testing

@testable import AerieCrypto

@Suite(.timeLimit(.minutes(5))) struct KeyWrappingTests {
    let tenant = "5f0c8e3e-9a0b-4c61-8d51-2b1c7f0e4a11"
    let otherTenant = "0b7a9d1e-3f55-4e2a-9c6d-8a4b2e1f0c99"

    @Test func tokens() {
        let token = TokenHasher.generate(prefix: "aerie_t_")
        #expect(token.hasPrefix("aerie_t_"))
        let body = token.dropFirst("aerie_t_".count)
        #expect(body.count == 43)  // 32 bytes, unpadded base64url
        #expect(body.allSatisfy { $0.isLetter || $0.isNumber || $0 == "-" || $0 == "_" })
        #expect(token != TokenHasher.generate(prefix: "aerie_t_"))
        let hash = TokenHasher.hash(token)
        #expect(hash.count == 32)
        #expect(TokenHasher.equal(hash, TokenHasher.hash(token)))
        #expect(!TokenHasher.equal(hash, TokenHasher.hash(token + "x")))
        #expect(!TokenHasher.equal(hash, Array(hash.prefix(31))))
        // BLAKE2b-256 of the UTF-8 text (value from Python's hashlib.blake2b(digest_size=32)).
        #expect(
            TokenHasher.hex(TokenHasher.hash("aerie_t_abc")) == TokenHasher.hex(BLAKE2b.hash(Array("aerie_t_abc".utf8)))
        )
        #expect(
            TokenHasher.hex(TokenHasher.hash("abc"))
                == "bddd813c634239723171ef3fee98579b94964e3bb1cb3e427262c8c068d52319")
    }

    @Test func masterKeyEncodings() throws {
        let key = MasterKey.generate()
        let text = key.base64
        #expect(text.count == 44 && text.hasSuffix("="))
        let again = try MasterKey(base64: text)
        #expect(again.fingerprint == key.fingerprint)
        #expect(key.fingerprint.count == 16)
        let url = text.replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
            .replacingOccurrences(of: "=", with: "")
        #expect(try MasterKey(base64: url + "\n").fingerprint == key.fingerprint)
        #expect(MasterKey.generate().fingerprint != key.fingerprint)
        #expect(throws: CryptoError.self) { try MasterKey(base64: "c2hvcnQ=") }
        #expect(throws: CryptoError.self) { try MasterKey(base64: "not base64 !!") }
        #expect(throws: CryptoError.self) { try MasterKey(bytes: [UInt8](repeating: 7, count: 31)) }
        // Fingerprint is a fixed function of the key.
        let fixed = try MasterKey(bytes: [UInt8](repeating: 7, count: 32))
        #expect(fixed.fingerprint == (try MasterKey(bytes: [UInt8](repeating: 7, count: 32))).fingerprint)
    }

    @Test func wrapAndUnwrapDataKey() throws {
        let master = MasterKey.generate()
        let dataKey = DataKey.generate()
        let wrapped = master.wrap(dataKey, tenantID: tenant)
        #expect(wrapped.count == MasterKey.wrappedByteCount)
        #expect(MasterKey.fingerprint(ofWrapped: wrapped) == master.fingerprint)
        let unwrapped = try master.unwrap(wrapped, tenantID: tenant)
        #expect(unwrapped.secret.isEqual(to: dataKey.secret))

        // Another tenant's id: the AD differs.
        #expect(throws: CryptoError.self) { try master.unwrap(wrapped, tenantID: otherTenant) }
        // Another master key: a clear wrong_master_key naming both fingerprints.
        let other = MasterKey.generate()
        let error = #expect(throws: CryptoError.self) { try other.unwrap(wrapped, tenantID: tenant) }
        #expect(error?.code == .wrongMasterKey)
        #expect(error?.message.contains(master.fingerprint) == true)
        #expect(error?.message.contains(other.fingerprint) == true)
        // Every byte after the header is authenticated.
        for index in (1 + 8)..<wrapped.count {
            var tampered = wrapped
            tampered[index] ^= 0x01
            let e = #expect(throws: CryptoError.self) { try master.unwrap(tampered, tenantID: tenant) }
            #expect(e?.code == .decryptionFailed)
        }
        #expect(throws: CryptoError.self) { try master.unwrap(Array(wrapped.dropLast()), tenantID: tenant) }
        #expect(throws: CryptoError.self) { try master.unwrap([], tenantID: tenant) }
    }

    @Test func sealAndOpenPrivateKey() throws {
        let dataKey = DataKey.generate()
        let pair = Ed25519KeyPair.generate()
        let sealed = dataKey.seal(pair, tenantID: tenant)
        let reopened = try dataKey.openKeyPair(sealed: sealed, tenantID: tenant, verkey: pair.verkey)
        #expect(reopened.verkey == pair.verkey)
        #expect(try dataKey.open(sealed: sealed, tenantID: tenant, verkey: pair.verkey).isEqual(to: pair.seed))

        // The raw [UInt8] API too.
        let raw = dataKey.seal(privateKey: [1, 2, 3], tenantID: tenant, verkey: pair.verkey)
        #expect(
            try dataKey.open(sealed: raw, tenantID: tenant, verkey: pair.verkey).withUnsafeBytes { Array($0) } == [
                1, 2, 3,
            ])

        let stranger = Ed25519KeyPair.generate()
        #expect(throws: CryptoError.self) {
            try dataKey.open(sealed: sealed, tenantID: otherTenant, verkey: pair.verkey)
        }
        #expect(throws: CryptoError.self) {
            try dataKey.open(sealed: sealed, tenantID: tenant, verkey: stranger.verkey)
        }
        #expect(throws: CryptoError.self) {
            try DataKey.generate().open(sealed: sealed, tenantID: tenant, verkey: pair.verkey)
        }
        for index in sealed.indices {
            var tampered = sealed
            tampered[index] ^= 0x40
            #expect(throws: CryptoError.self) {
                try dataKey.open(sealed: tampered, tenantID: tenant, verkey: pair.verkey)
            }
        }
        #expect(throws: CryptoError.self) {
            try dataKey.open(sealed: Array(sealed.prefix(20)), tenantID: tenant, verkey: pair.verkey)
        }
        // A sealed key stored under the wrong verkey is caught when rebuilding the pair.
        let misfiled = dataKey.seal(
            privateKey: stranger.seed.withUnsafeBytes { Array($0) }, tenantID: tenant, verkey: pair.verkey)
        #expect(throws: CryptoError.self) {
            try dataKey.openKeyPair(sealed: misfiled, tenantID: tenant, verkey: pair.verkey)
        }
    }

    @Test func errorCodesAreStable() {
        #expect(CryptoError.Code.decryptionFailed.name == "decryption_failed")
        #expect(CryptoError.Code.wrongMasterKey.name == "wrong_master_key")
        #expect(CryptoError.Code.malformedEnvelope.name == "malformed_envelope")
        #expect(CryptoError.Code.unknownRecipient.name == "unknown_recipient")
        let error = CryptoError(.invalidKey, "bad", details: "for logs")
        #expect("\(error)" == "invalid_key: bad")
        #expect(String(reflecting: error).contains("for logs"))
    }
}
