import AerieCore

/// One tenant's Ed25519 keys: created here, stored sealed by the tenant's data key
/// (`DataKey.seal`: XChaCha20-Poly1305, associated data = tenant id || verkey), and opened only
/// for the moment an operation needs them. A private key never leaves this type: callers get
/// verkeys, signatures, envelopes and plaintexts. Reach it as `tenant.keys`.
///
/// Each operation is one short database transaction; the decrypted key lives in zeroing
/// storage (`SecretBytes`) and is dropped when the operation returns. What outlives it: the
/// `crypto_box` shared keys of (our key, a peer's key) that its packs and unpacks computed, kept
/// per tenant in `BoxSharedKeys` (bounded, zeroing, dropped on the tenant's credential events
/// and when the key is deleted here), usable only by a call that opened the key pair again.
public struct KeyWallet: Sendable {
    public let tenantID: TenantID
    let database: any TenantDatabase
    let keyring: any TenantKeyring

    /// Most keys `list` returns at once.
    public static let maxPage = 500

    public init(tenant: TenantContext) {
        self.tenantID = tenant.tenantID
        self.database = tenant.database
        self.keyring = tenant.keyring
    }

    /// Creates and stores a key; returns its base58 verkey. A 32-byte `seed` makes the key
    /// deterministic (interop tests, imported keys); without one the key is random. Throws
    /// `conflict` when the key already exists.
    @discardableResult
    public func createKey(seed: [UInt8]? = nil) async throws -> String {
        let key = try await makeKey(seed: seed)
        try await database.transaction { try key.store(in: $0) }
        return key.verkey
    }

    /// Makes and seals a key without storing it: the caller stores it with `PendingKey.store(in:)`
    /// in the same transaction as the records that name it, so both commit or neither does.
    /// Until then it can pack (`pack(_:to:from:)`) without a round trip to read it back.
    public func makeKey(seed: [UInt8]? = nil) async throws -> PendingKey {
        let pair = try seed.map { try Ed25519KeyPair(seed: $0) } ?? .generate()
        let sealed = try await dataKey().seal(pair, tenantID: tenantID.rawValue)
        return PendingKey(pair: pair, sealed: sealed)
    }

    /// Packs like `pack(_:to:from:)` with the sender's sealed key as the caller's transaction
    /// read it (`keys.sealedSecret(verkey:)`), which saves a transaction of its own. It opens only
    /// for this tenant and `senderVerkey`.
    public func pack(_ plaintext: [UInt8], to recipientKeys: [String], from senderVerkey: String, sealedSecret: [UInt8])
        async throws -> [UInt8]
    {
        let sender = try await open(sealedSecret, verkey: try KeyReference.verkeyBase58(from: senderVerkey))
        return try DIDCommEnvelope.pack(plaintext, to: recipientKeys, from: sender, keyScope: tenantID.rawValue)
    }

    /// Packs like `pack(_:to:from:)` with the sender key `sender`, made by `makeKey`.
    public func pack(_ plaintext: [UInt8], to recipientKeys: [String], from sender: PendingKey) throws -> [UInt8] {
        try DIDCommEnvelope.pack(plaintext, to: recipientKeys, from: sender.pair, keyScope: tenantID.rawValue)
    }

    /// The tenant's keys (public parts), in verkey order after `afterVerkey`; `limit` 1...500.
    public func list(after afterVerkey: String? = nil, limit: Int = 100) async throws -> [StoredKey] {
        let limit = min(max(limit, 1), Self.maxPage)
        return try await database.read { try $0.keys.list(after: afterVerkey, limit: limit) }
    }

    /// Whether this tenant holds the private key of `verkey` (base58 or did:key).
    public func holds(_ verkey: String) async throws -> Bool {
        let kid = try KeyReference.verkeyBase58(from: verkey)
        return try await database.read { try $0.keys.sealedSecret(verkey: kid) } != nil
    }

    /// Deletes a key for good. Returns false when the tenant did not hold it.
    @discardableResult
    public func deleteKey(_ verkey: String) async throws -> Bool {
        let kid = try KeyReference.verkeyBase58(from: verkey)
        let removed = try await database.transaction { try $0.keys.remove(verkey: kid) }
        if let bytes = try? Base58.decode(kid) { BoxSharedKeys.shared.invalidate(scope: tenantID.rawValue, ourVerkey: bytes) }
        return removed
    }

    /// A detached Ed25519 signature of `data` by the tenant's key `verkey`.
    public func sign(_ data: [UInt8], with verkey: String) async throws -> [UInt8] {
        try await keyPair(verkey).sign(data)
    }

    /// A `~sig` decorator (`ed25519Sha512_single`) of `value` by the tenant's key `verkey`, as the
    /// inviter signs a Connection Response's `connection` with the invitation key.
    public func signDecorator(_ value: JSONValue, with verkey: String) async throws -> SignatureDecorator {
        try SignatureDecorator.sign(value, with: try await keyPair(verkey))
    }

    /// Whether `signature` is `verkey`'s signature of `data` (any verkey; no wallet needed).
    public static func verify(signature: [UInt8], of data: [UInt8], by verkey: String) -> Bool {
        guard let key = try? KeyReference.verkey(from: verkey) else { return false }
        return Ed25519.verify(signature: signature, message: data, verkey: key)
    }

    /// Packs a DIDComm v1 envelope for `recipientKeys` (base58 or did:key), authcrypted from the
    /// tenant's key `senderVerkey`, or anoncrypted when it is nil.
    public func pack(_ plaintext: [UInt8], to recipientKeys: [String], from senderVerkey: String?) async throws
        -> [UInt8]
    {
        let sender: Ed25519KeyPair? = if let senderVerkey { try await keyPair(senderVerkey) } else { nil }
        return try DIDCommEnvelope.pack(plaintext, to: recipientKeys, from: sender, keyScope: tenantID.rawValue)
    }

    /// Unpacks a DIDComm v1 envelope addressed to one of this tenant's keys (the first of its
    /// recipients the tenant holds). Throws `unknown_recipient` when it holds none of them.
    public func unpack(_ envelope: [UInt8]) async throws -> UnpackedMessage {
        let parsed = try DIDCommEnvelope(parsing: envelope)
        // Only canonical base58 verkeys are looked up: the recipient list is the sender's to write.
        let wellFormed = parsed.recipientKids.filter { (try? KeyReference.verkeyBase58(from: $0)) == $0 }
        let lookup = Array(wellFormed.prefix(Self.maxRecipientLookup))
        let held = lookup.isEmpty ? [:] : try await database.read { try $0.keys.sealedSecrets(verkeys: lookup) }
        guard let recipient = lookup.first(where: { held[$0] != nil }), let sealed = held[recipient] else {
            throw CryptoError(
                .unknownRecipient, "no key held for any recipient of this message",
                details: parsed.recipientKids.prefix(10).joined(separator: ","))
        }
        return try await unpack(parsed, as: recipient, sealedSecret: sealed)
    }

    /// Recipients of one envelope looked up in the wallet at most.
    static let maxRecipientLookup = 100

    /// Opens a parsed DIDComm v1 envelope with the tenant's key `recipient` (one of its
    /// recipients), whose sealed secret the caller read (`ConnectionRepository.inboundRecipient`):
    /// no round trip. It opens only for this tenant and `recipient`.
    public func unpack(_ envelope: DIDCommEnvelope, as recipient: String, sealedSecret: [UInt8]) async throws -> UnpackedMessage {
        try envelope.open(
            with: try await open(sealedSecret, verkey: try KeyReference.verkeyBase58(from: recipient)), keyScope: tenantID.rawValue)
    }

    // MARK: - Private keys, briefly

    func keyPair(_ verkey: String) async throws -> Ed25519KeyPair {
        let kid = try KeyReference.verkeyBase58(from: verkey)
        guard let sealed = try await database.read({ try $0.keys.sealedSecret(verkey: kid) }) else {
            throw AerieError.notFound("this tenant holds no key \(kid)")
        }
        return try await open(sealed, verkey: kid)
    }

    private func open(_ sealed: [UInt8], verkey kid: String) async throws -> Ed25519KeyPair {
        let key = try await dataKey()
        do {
            return try key.openKeyPair(sealed: sealed, tenantID: tenantID.rawValue, verkey: try Base58.decode(kid))
        } catch let error as CryptoError {
            throw CryptoError(
                .decryptionFailed,
                "the stored private key of \(kid) does not open for this tenant (sealed for another tenant or key, or altered)",
                details: String(reflecting: error))
        }
    }

    private func dataKey() async throws -> DataKey {
        let opaque = try await keyring.dataKey()
        guard let key = opaque as? DataKey else {
            throw AerieError.internalError(details: "the tenant keyring returned \(type(of: opaque)), not a DataKey")
        }
        return key
    }
}

/// A key `KeyWallet.makeKey` made and sealed, not yet stored. Its private half never leaves
/// AerieCrypto and it prints only its verkey.
public struct PendingKey: Sendable, CustomStringConvertible, CustomDebugStringConvertible, CustomReflectable {
    /// The base58 Ed25519 public key.
    public let verkey: String
    let pair: Ed25519KeyPair
    let sealed: [UInt8]

    init(pair: Ed25519KeyPair, sealed: [UInt8]) {
        self.verkey = pair.verkeyBase58
        self.pair = pair
        self.sealed = sealed
    }

    /// Stores the sealed key in `transaction`. Throws `conflict` when the verkey is already held.
    public func store(in transaction: any TenantTransaction) throws {
        try transaction.keys.insert(verkey: verkey, sealedSecret: sealed)
    }

    public var description: String { "PendingKey(\(verkey))" }
    public var debugDescription: String { description }
    public var customMirror: Mirror { Mirror(self, children: ["verkey": verkey]) }
}
