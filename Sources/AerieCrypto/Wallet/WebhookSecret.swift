import CSodium

/// A backend webhook's signing secret (issue 14): 32 random bytes, shown once to the operator as
/// `whsec_` + base64url, stored only wrapped by the master key (like a tenant's data key, bound
/// to the backend and the webhook's generation). Each POST carries
/// `Aerie-Signature: t=<unix seconds>,v1=<hex HMAC-SHA256>` over `"<t>." + body`, keyed with the
/// UTF-8 of the secret as shown (the Stripe convention, so receivers need no decoding step).
public final class WebhookSecret: Sendable, CustomStringConvertible, CustomDebugStringConvertible, CustomReflectable {
    public static let prefix = "whsec_"
    static let byteCount = 32

    let secret: SecretBytes

    init(secret: SecretBytes) {
        precondition(secret.count == Self.byteCount)
        self.secret = secret
    }

    /// A new random secret.
    public static func generate() -> WebhookSecret { WebhookSecret(secret: .random(count: byteCount)) }

    /// The secret as shown once to the operator, and the receiver's HMAC key.
    public var text: String { Self.prefix + secret.withUnsafeBytes { Base64.encodeURL($0) } }

    /// The `v1` signature of `body` sent at `timestamp` (lowercase hex).
    public func signature(timestamp: Int64, body: [UInt8]) -> String {
        Sodium.ensureReady()
        var key = Array(text.utf8)
        defer { SecretBytes.wipe(&key) }
        var state = crypto_auth_hmacsha256_state()
        var mac = [UInt8](repeating: 0, count: Int(crypto_auth_hmacsha256_BYTES))
        let signed = Array("\(timestamp).".utf8)
        key.withUnsafeBufferPointer { _ = crypto_auth_hmacsha256_init(&state, $0.baseAddress!, $0.count) }
        for part in [signed, body] where !part.isEmpty {
            part.withUnsafeBufferPointer { _ = crypto_auth_hmacsha256_update(&state, $0.baseAddress!, UInt64($0.count)) }
        }
        mac.withUnsafeMutableBufferPointer { _ = crypto_auth_hmacsha256_final(&state, $0.baseAddress!) }
        withUnsafeMutableBytes(of: &state) { sodium_memzero($0.baseAddress!, $0.count) }
        return Hex.encode(mac)
    }

    /// The `Aerie-Signature` header value for `body` sent at `timestamp`.
    public func header(timestamp: Int64, body: [UInt8]) -> String {
        "t=\(timestamp),v1=\(signature(timestamp: timestamp, body: body))"
    }

    /// What the associated data of the wrapped form binds it to.
    static func binding(backendID: String, generation: String) -> String { "aerie/webhook/\(backendID)/\(generation)" }

    public var description: String { "WebhookSecret(redacted)" }
    public var debugDescription: String { description }
    public var customMirror: Mirror { Mirror(self, children: [:]) }
}

extension MasterKey {
    /// Wraps a webhook secret for storage; bound to the backend and the webhook's generation.
    public func wrap(_ secret: WebhookSecret, backendID: String, generation: String) -> [UInt8] {
        wrap(DataKey(secret: secret.secret), tenantID: WebhookSecret.binding(backendID: backendID, generation: generation))
    }

    /// Opens a secret wrapped by `wrap(_:backendID:generation:)`; `wrong_master_key` or
    /// `decryption_failed` as for data keys.
    public func unwrapWebhookSecret(_ wrapped: [UInt8], backendID: String, generation: String) throws -> WebhookSecret {
        let key = try unwrap(wrapped, tenantID: WebhookSecret.binding(backendID: backendID, generation: generation))
        return WebhookSecret(secret: key.secret)
    }
}

extension MasterKey {
    /// Master-key rotation for one webhook secret: opens it with this key and wraps it under
    /// `newKey` (same backend, same generation).
    public func rewrapWebhookSecret(_ wrapped: [UInt8], backendID: String, generation: String, to newKey: MasterKey) throws -> [UInt8] {
        let secret = try unwrapWebhookSecret(wrapped, backendID: backendID, generation: generation)
        return newKey.wrap(secret, backendID: backendID, generation: generation)
    }
}
