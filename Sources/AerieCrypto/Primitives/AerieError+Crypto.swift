import AerieCore

extension AerieError {
    /// The one mapping of a `CryptoError` onto the RPC error space: bad keys, DIDs and encodings
    /// come from an invitation, bad signatures and envelopes from a message; anything else
    /// (a wrong master key, a failed decryption of our own data) is internal.
    public init(crypto error: CryptoError) {
        switch error.code {
        case .invalidKey, .invalidDID, .invalidEncoding:
            self.init(.invalidInvitation, error.message, details: String(reflecting: error))
        case .invalidSignature, .malformedSignature, .invalidMessage, .malformedEnvelope, .unknownContext,
            .invalidJSONLD, .limitExceeded, .invalidProof, .proofPurposeMismatch:
            self.init(.invalidParams, error.message, field: "message", details: String(reflecting: error))
        default:
            self = .internalError(details: String(reflecting: error))
        }
    }

    /// Runs `body`, rethrowing a `CryptoError` as `AerieError(crypto:)`.
    public static func mappingCrypto<T>(_ body: () throws -> T) throws -> T {
        do {
            return try body()
        } catch let error as CryptoError {
            throw AerieError(crypto: error)
        }
    }

    /// Runs `body`, rethrowing a `CryptoError` as `AerieError(crypto:)`.
    public static func mappingCrypto<T>(_ body: () async throws -> T) async throws -> T {
        do {
            return try await body()
        } catch let error as CryptoError {
            throw AerieError(crypto: error)
        }
    }
}
