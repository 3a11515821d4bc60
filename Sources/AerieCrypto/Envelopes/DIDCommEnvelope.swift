import AerieCore

/// A DIDComm v1 envelope (Aries RFC 0019): JWE-like JSON whose protected header lists the
/// recipients; the content key is boxed per recipient (authcrypt: `crypto_box` from the
/// sender, sender verkey in a sealed box; anoncrypt: `crypto_box_seal`).
///
/// Unpacking is two steps so the caller can look keys up asynchronously: `init(parsing:)`
/// validates the structure and exposes `recipientKids`; `open(with:)` decrypts with the key the
/// caller holds. `unpack(_:keyLookup:)` does both.
///
/// Content cipher: askar-based peers (ACA-Py 1.x, Credo 0.5) write ChaCha20-Poly1305 with a
/// 12-byte IV under `"enc":"xchacha20poly1305_ietf"` and reject a 24-byte IV; libindy wrote
/// XChaCha20 with 24 bytes. We pack the former by default and open both, by IV length.
public struct DIDCommEnvelope: Sendable {
    public enum Algorithm: String, Sendable, Hashable {
        case authcrypt = "Authcrypt"
        case anoncrypt = "Anoncrypt"
    }

    struct Recipient: Sendable {
        let kid: String
        let encryptedKey: [UInt8]
        /// Authcrypt only: sealed box of the sender's base58 verkey, and the crypto_box nonce.
        let sender: [UInt8]?
        let nonce: [UInt8]?
    }

    public let algorithm: Algorithm
    let recipients: [Recipient]
    let aad: [UInt8]  // the protected header's base64url text, as ASCII
    let iv: [UInt8]
    let ciphertext: [UInt8]
    let tag: [UInt8]

    /// The recipients' verkeys (base58 `kid`s), in envelope order.
    public var recipientKids: [String] { recipients.map(\.kid) }

    static let encName = "xchacha20poly1305_ietf"
    static let acceptedEncs: Set<String> = ["xchacha20poly1305_ietf", "chacha20poly1305_ietf"]

    // MARK: - Pack

    /// Packs `plaintext` for every verkey in `recipientVerkeys` (base58, did:key or did:key
    /// reference), authcrypted from `sender` or anoncrypted when `sender` is nil. With a
    /// `keyScope` (the tenant's id), the recipients' X25519 keys come from `X25519PublicKeys`.
    public static func pack(
        _ plaintext: [UInt8], to recipientVerkeys: [String], from sender: Ed25519KeyPair?,
        contentCipher: AEAD = .chacha20Poly1305, keyScope: String? = nil
    ) throws -> [UInt8] {
        guard !recipientVerkeys.isEmpty else {
            throw CryptoError(.invalidMessage, "a packed message needs at least one recipient")
        }
        let cek = SecretBytes.random(count: AEAD.keyByteCount)
        let senderVerkey = sender.map { Array($0.verkeyBase58.utf8) }

        var header: [UInt8] = []
        header.reserveCapacity(120 + recipientVerkeys.count * (sender == nil ? 160 : 280))
        header.append(contentsOf: #"{"enc":"\#(encName)","typ":"JWM/1.0","alg":""#.utf8)
        header.append(contentsOf: (sender == nil ? Algorithm.anoncrypt : .authcrypt).rawValue.utf8)
        header.append(contentsOf: #"","recipients":["#.utf8)
        var seen = Set<String>()
        for (index, reference) in recipientVerkeys.enumerated() {
            let verkey = try KeyReference.verkey(from: reference)
            let kid = Base58.encode(verkey)
            guard seen.insert(kid).inserted else {
                throw CryptoError(.invalidMessage, "recipient \(kid) is listed twice")
            }
            let targetX = try Self.x25519PublicKey(ofVerkey: verkey, scope: keyScope)
            if index > 0 { header.append(UInt8(ascii: ",")) }
            header.append(contentsOf: #"{"encrypted_key":""#.utf8)
            if let sender, let senderVerkey {
                let nonce = Random.bytes(Box.nonceByteCount)
                let shared = try Self.boxSharedKey(of: sender, and: targetX, scope: keyScope)
                let encryptedKey = try cek.withUnsafeBytes { try Box.seal($0, nonce: nonce, sharedKey: shared) }
                let encryptedSender = try senderVerkey.withUnsafeBytes { try SealedBox.seal($0, to: targetX) }
                header.append(contentsOf: Base64.encodeURL(encryptedKey).utf8)
                header.append(contentsOf: #"","header":{"kid":""#.utf8)
                header.append(contentsOf: kid.utf8)
                header.append(contentsOf: #"","sender":""#.utf8)
                header.append(contentsOf: Base64.encodeURL(encryptedSender).utf8)
                header.append(contentsOf: #"","iv":""#.utf8)
                header.append(contentsOf: Base64.encodeURL(nonce).utf8)
            } else {
                let encryptedKey = try cek.withUnsafeBytes { try SealedBox.seal($0, to: targetX) }
                header.append(contentsOf: Base64.encodeURL(encryptedKey).utf8)
                header.append(contentsOf: #"","header":{"kid":""#.utf8)
                header.append(contentsOf: kid.utf8)
            }
            header.append(contentsOf: #""}}"#.utf8)
        }
        header.append(contentsOf: "]}".utf8)

        let protected = Base64.encodeURL(header)
        let aad = Array(protected.utf8)
        let iv = contentCipher.randomNonce()
        let (ciphertext, tag) = plaintext.withUnsafeBytes { m in
            cek.withUnsafeBytes { k in
                iv.withUnsafeBytes { n in
                    aad.withUnsafeBytes { contentCipher.sealDetached(m, key: k, nonce: n, aad: $0) }
                }
            }
        }

        var out: [UInt8] = []
        out.reserveCapacity(aad.count + ciphertext.count * 4 / 3 + 120)
        out.append(contentsOf: #"{"protected":""#.utf8)
        out.append(contentsOf: aad)
        out.append(contentsOf: #"","iv":""#.utf8)
        out.append(contentsOf: Base64.encodeURL(iv).utf8)
        out.append(contentsOf: #"","ciphertext":""#.utf8)
        out.append(contentsOf: Base64.encodeURL(ciphertext).utf8)
        out.append(contentsOf: #"","tag":""#.utf8)
        out.append(contentsOf: Base64.encodeURL(tag).utf8)
        out.append(contentsOf: #""}"#.utf8)
        return out
    }

    // MARK: - Unpack

    /// Parses and checks an envelope's structure; nothing is decrypted yet.
    ///
    /// The envelope comes from anyone, before any authentication, so every size and count is
    /// checked against `Limits` before the text behind it is decoded, and the work is linear in
    /// the input: a hostile 1 MiB body costs about as much as reading it once.
    public init(parsing envelope: [UInt8]) throws {
        let top = try Self.jsonObject(envelope, maxValues: Limits.maxEnvelopeValues, what: "envelope")
        guard let protected = top["protected"]?.stringValue,
            let iv = top["iv"]?.stringValue,
            let ciphertext = top["ciphertext"]?.stringValue,
            let tag = top["tag"]?.stringValue
        else {
            throw CryptoError(.malformedEnvelope, "envelope needs protected, iv, ciphertext and tag strings")
        }
        try Self.checkLength(protected, max: Limits.maxProtectedLength, "protected")
        try Self.checkLength(iv, max: Limits.maxIVLength, "iv")
        try Self.checkLength(tag, max: Limits.maxTagLength, "tag")
        self.aad = Array(protected.utf8)
        self.iv = try Self.base64(iv, "iv")
        self.tag = try Self.base64(tag, "tag")
        guard AEAD(nonceByteCount: self.iv.count) != nil else {
            throw CryptoError(
                .malformedEnvelope, "envelope iv must be 12 or 24 bytes", details: "\(self.iv.count) bytes")
        }
        guard self.tag.count == AEAD.tagByteCount else {
            throw CryptoError(.malformedEnvelope, "envelope tag must be 16 bytes", details: "\(self.tag.count) bytes")
        }

        let header = try Self.jsonObject(
            try Self.base64(protected, "protected"), maxValues: Limits.maxHeaderValues, what: "protected header")
        guard let alg = header["alg"]?.stringValue else {
            throw CryptoError(.malformedEnvelope, "protected header has no alg")
        }
        guard let algorithm = Algorithm(rawValue: alg) else {
            throw CryptoError(.unsupportedAlgorithm, "unsupported pack algorithm", details: String(alg.prefix(64)))
        }
        self.algorithm = algorithm
        guard let enc = header["enc"]?.stringValue else {
            throw CryptoError(.malformedEnvelope, "protected header has no enc")
        }
        guard Self.acceptedEncs.contains(enc) else {
            throw CryptoError(.unsupportedAlgorithm, "unsupported content encryption", details: String(enc.prefix(64)))
        }

        // RFC 0019 puts recipients in the protected header; accept the unprotected JWE place too.
        let list: JSONValue?
        switch (header["recipients"], top["recipients"]) {
        case (let inHeader?, nil): list = inHeader
        case (nil, let outside?): list = outside
        case (nil, nil): list = nil
        default: throw CryptoError(.malformedEnvelope, "envelope has two recipients blocks")
        }
        guard case .array(let entries)? = list, !entries.isEmpty else {
            throw CryptoError(.malformedEnvelope, "envelope has no recipients")
        }
        guard entries.count <= Limits.maxRecipients else {
            throw CryptoError(
                .malformedEnvelope, "envelope has more than \(Limits.maxRecipients) recipients",
                details: "\(entries.count) recipients")
        }
        var recipients: [Recipient] = []
        recipients.reserveCapacity(entries.count)
        var seen = Set<String>()
        for entry in entries {
            guard let encryptedKey = entry["encrypted_key"]?.stringValue, let fields = entry["header"],
                case .object = fields, let kid = fields["kid"]?.stringValue, !kid.isEmpty
            else {
                throw CryptoError(.malformedEnvelope, "recipient needs encrypted_key and header.kid")
            }
            guard kid.utf8.count <= Limits.maxKidLength else {
                throw CryptoError(
                    .malformedEnvelope, "recipient kid is longer than \(Limits.maxKidLength) characters",
                    details: "\(kid.utf8.count) characters")
            }
            try Self.checkLength(encryptedKey, max: Limits.maxEncryptedKeyLength, "encrypted_key")
            guard seen.insert(kid).inserted else {
                throw CryptoError(.malformedEnvelope, "recipient \(kid) is listed twice")
            }
            let sender = try fields["sender"].map { try Self.base64String($0, "sender", max: Limits.maxSenderLength) }
            let nonce = try fields["iv"].map { try Self.base64String($0, "recipient iv", max: Limits.maxIVLength) }
            switch algorithm {
            case .authcrypt:
                guard sender != nil, let nonce else {
                    throw CryptoError(.malformedEnvelope, "Authcrypt recipient \(kid) lacks sender or iv")
                }
                guard nonce.count == Box.nonceByteCount else {
                    throw CryptoError(
                        .malformedEnvelope, "recipient iv must be 24 bytes", details: "\(nonce.count) bytes")
                }
            case .anoncrypt:
                guard sender == nil, nonce == nil else {
                    throw CryptoError(.malformedEnvelope, "Anoncrypt recipient \(kid) carries a sender")
                }
            }
            recipients.append(
                Recipient(
                    kid: kid, encryptedKey: try Self.base64(encryptedKey, "encrypted_key"), sender: sender, nonce: nonce
                ))
        }
        self.recipients = recipients
        // Last: the one field as large as the body, decoded only once everything else is sound.
        self.ciphertext = try Self.base64(ciphertext, "ciphertext")
    }

    /// Decrypts with `recipient`, which must be one of `recipientKids`. With a `keyScope` (the
    /// tenant's id), the X25519 public keys (the recipient's, the sender's) come from
    /// `X25519PublicKeys`.
    public func open(with recipient: Ed25519KeyPair, keyScope: String? = nil) throws -> UnpackedMessage {
        let kid = recipient.verkeyBase58
        guard let entry = recipients.first(where: { $0.kid == kid }) else {
            throw CryptoError(.unknownRecipient, "the key given is not a recipient of this message", details: kid)
        }
        let x = X25519KeyPair(
            publicKey: keyScope.map { X25519PublicKeys.shared.publicKey(of: recipient, scope: $0) } ?? recipient.x25519PublicKey(),
            secret: recipient.x25519Secret())
        let cek: SecretBytes
        var senderVerkey: String?
        switch algorithm {
        case .authcrypt:
            guard let sealedSender = entry.sender, let nonce = entry.nonce else {
                throw CryptoError(.malformedEnvelope, "Authcrypt recipient lacks sender or iv")  // init checks; never reached
            }
            let senderText = try SealedBox.open(sealedSender, with: x)
            let senderBase58 = senderText.withUnsafeBytes { String(decoding: $0, as: UTF8.self) }
            guard let verkey = try? Base58.decode(senderBase58), verkey.count == Ed25519.publicKeyByteCount,
                let senderX = try? Self.x25519PublicKey(ofVerkey: verkey, scope: keyScope)
            else {
                throw CryptoError(.malformedEnvelope, "sender is not a valid verkey")
            }
            senderVerkey = senderBase58
            if let keyScope {
                cek = try Self.openBox(entry.encryptedKey, nonce: nonce, from: senderX, to: x, verkey: recipient.verkey, scope: keyScope)
            } else {
                cek = try Box.open(entry.encryptedKey, nonce: nonce, from: senderX, to: x)
            }
        case .anoncrypt:
            cek = try SealedBox.open(entry.encryptedKey, with: x)
        }
        guard cek.count == AEAD.keyByteCount else {
            throw CryptoError(.malformedEnvelope, "content key must be 32 bytes", details: "\(cek.count) bytes")
        }
        guard let cipher = AEAD(nonceByteCount: iv.count) else {  // init checks; never reached
            throw CryptoError(.malformedEnvelope, "envelope iv must be 12 or 24 bytes")
        }
        let plaintext = try ciphertext.withUnsafeBytes { c in
            try tag.withUnsafeBytes { t in
                try cek.withUnsafeBytes { k in
                    try iv.withUnsafeBytes { n in
                        try aad.withUnsafeBytes { try cipher.openDetached(c, tag: t, key: k, nonce: n, aad: $0) }
                    }
                }
            }
        }
        return UnpackedMessage(
            plaintext: plaintext, senderVerkey: senderVerkey, recipientVerkey: kid, algorithm: algorithm)
    }

    /// Parses `envelope`, asks `keyLookup` for the key of one of its recipient kids (nil: none
    /// held here) and decrypts.
    public static func unpack(_ envelope: [UInt8], keyLookup: ([String]) throws -> Ed25519KeyPair?) throws
        -> UnpackedMessage
    {
        let parsed = try DIDCommEnvelope(parsing: envelope)
        guard let key = try keyLookup(parsed.recipientKids) else {
            throw CryptoError(
                .unknownRecipient, "no key held for any recipient of this message",
                details: parsed.recipientKids.joined(separator: ","))
        }
        return try parsed.open(with: key)
    }

    /// `unpack` with an asynchronous lookup (a key wallet in the database).
    public static func unpack(_ envelope: [UInt8], keyLookup: ([String]) async throws -> Ed25519KeyPair?) async throws
        -> UnpackedMessage
    {
        let parsed = try DIDCommEnvelope(parsing: envelope)
        guard let key = try await keyLookup(parsed.recipientKids) else {
            throw CryptoError(
                .unknownRecipient, "no key held for any recipient of this message",
                details: parsed.recipientKids.joined(separator: ","))
        }
        return try parsed.open(with: key)
    }

    // MARK: - Helpers

    /// The `crypto_box` shared key of our `sender` and a recipient's X25519 key: kept per tenant
    /// by `BoxSharedKeys` with a scope (our secret derived only on a miss), else computed.
    private static func boxSharedKey(of sender: Ed25519KeyPair, and theirs: [UInt8], scope: String?) throws -> SecretBytes {
        guard let scope else { return try Box.sharedKey(publicKey: theirs, secret: sender.x25519Secret()) }
        return try BoxSharedKeys.shared.sharedKey(
            scope: scope, ourVerkey: sender.verkey, ourSecret: { sender.x25519Secret() }, theirPublicKey: theirs)
    }

    /// `Box.open` through `BoxSharedKeys`: a kept shared key of (`verkey`, `senderX`) in `scope`,
    /// else one computed and kept only once the box authenticated with it. Errors as `Box.open`.
    private static func openBox(
        _ sealed: [UInt8], nonce: [UInt8], from senderX: [UInt8], to x: X25519KeyPair, verkey: [UInt8], scope: String
    ) throws -> SecretBytes {
        let keys = BoxSharedKeys.shared
        if let known = keys.lookup(scope: scope, ourVerkey: verkey, theirPublicKey: senderX) {
            return try Box.open(sealed, nonce: nonce, sharedKey: known)
        }
        guard let shared = try? Box.sharedKey(publicKey: senderX, secret: x.secret) else {
            throw CryptoError(.decryptionFailed, "crypto_box authentication failed")  // a low-order key, as Box.open
        }
        let opened = try Box.open(sealed, nonce: nonce, sharedKey: shared)
        keys.remember(shared, scope: scope, ourVerkey: verkey, theirPublicKey: senderX)
        return opened
    }

    private static func x25519PublicKey(ofVerkey verkey: [UInt8], scope: String?) throws -> [UInt8] {
        guard let scope else { return try Ed25519.x25519PublicKey(fromVerkey: verkey) }
        return try X25519PublicKeys.shared.publicKey(ofVerkey: verkey, scope: scope)
    }

    static func jsonObject(_ bytes: [UInt8], maxValues: Int, what: String) throws -> JSONValue {
        let value: JSONValue
        do {
            value = try JSONValue(parsing: bytes, maxValues: maxValues)
        } catch {
            throw CryptoError(.malformedEnvelope, "\(what) is not JSON of the expected size")
        }
        guard case .object = value else {
            throw CryptoError(.malformedEnvelope, "\(what) is not a JSON object")
        }
        return value
    }

    private static func checkLength(_ text: String, max: Int, _ field: String) throws {
        guard text.utf8.count <= max else {
            throw CryptoError(
                .malformedEnvelope, "\(field) is longer than \(max) characters", details: "\(text.utf8.count) characters")
        }
    }

    private static func base64(_ text: String, _ field: String) throws -> [UInt8] {
        do {
            return try Base64.decode(text)
        } catch {
            throw CryptoError(.malformedEnvelope, "\(field) is not base64url")
        }
    }

    private static func base64String(_ value: JSONValue, _ field: String, max: Int) throws -> [UInt8] {
        guard let text = value.stringValue else { throw CryptoError(.malformedEnvelope, "\(field) is not a string") }
        try checkLength(text, max: max, field)
        return try base64(text, field)
    }
}
