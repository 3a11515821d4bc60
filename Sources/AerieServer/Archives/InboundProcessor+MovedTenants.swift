extension InboundProcessor {
    /// The longest `Retry-After` answered for a moved or moving tenant's keys: a peer retries
    /// within a minute (by then a shared endpoint routes it to the tenant's new server, or the
    /// peer has the rotated DID), and never after the grace period, when the old server no
    /// longer knows the key.
    static let movedRetryAfterSeconds = 60

    /// The answer for an envelope none of whose recipients is an active tenant's key here: 503
    /// with `Retry-After` when one is a key of a tenant being moved or moved away within
    /// `AERIE_MOVED_TENANT_GRACE_SECONDS`, so the peer (or a shared endpoint's proxy, retrying on
    /// the other server) delivers it again, to wherever the tenant is; else the 400 of an unknown
    /// key.
    func unknownRecipient(_ kids: [String]) async throws -> Outcome {
        if let seconds = try await database.archives.movedKeysRetryAfter(verkeys: kids, maxSeconds: Self.movedRetryAfterSeconds) {
            return .movedAway(retryAfterSeconds: seconds)
        }
        return .rejected(status: 400, reason: "no recipient of this message is known here")
    }
}
