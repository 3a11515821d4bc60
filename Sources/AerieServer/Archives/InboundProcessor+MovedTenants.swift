extension InboundProcessor {
    /// The answer for an envelope none of whose recipients is an active tenant's key here: 503
    /// (retry later) when one is a key of a tenant being moved or moved away within
    /// `AERIE_MOVED_TENANT_GRACE_SECONDS`, so the peer (or a shared endpoint's proxy, retrying on
    /// the other server) delivers it again, to wherever the tenant is; else the 400 of an unknown
    /// key.
    func unknownRecipient(_ kids: [String]) async throws -> Outcome {
        if try await database.archives.movedOrMoving(verkeys: kids) {
            return .rejected(status: 503, reason: "the recipient's tenant is moving or moved to another server")
        }
        return .rejected(status: 400, reason: "no recipient of this message is known here")
    }
}
