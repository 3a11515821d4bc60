/// Why a stranger's message (`InboundSenders.areStrangers`) is refused: thrown by its handler
/// before anything of it is stored (a Request that cannot be answered, a used-up or expired
/// invitation, too many connections waiting), or decided by the inbound pipeline's rate limits.
/// The endpoint answers `reason.status` (400: do not send it again; 429: not now) and stores
/// nothing. `reason` is a stable name counted in metrics (and, by the handler, per invitation);
/// `message` is safe to log.
public struct InboundRefusal: Error, Sendable, Equatable {
    public enum Reason: String, Sendable, CaseIterable {
        /// The Request is not one the handler can answer (malformed, wrong sender, a handshake the
        /// invitation does not offer, an endpoint that may not be used).
        case malformed
        /// The invitation's `expiresAt` passed.
        case expired
        /// The invitation's `maxUses` Requests were answered.
        case usedUp = "used_up"
        /// The tenant has `AERIE_PENDING_CONNECTIONS_MAX` connections waiting for their peer.
        case pendingLimit = "pending_limit"
        /// Requests to this invitation came faster than `AERIE_INVITATION_REQUESTS_PER_MINUTE`.
        case invitationRate = "invitation_rate"
        /// Requests from this sender key came faster than `AERIE_SENDER_REQUESTS_PER_MINUTE`.
        case senderRate = "sender_rate"

        /// 429 for a limit that frees up with time, 400 for a Request that will never be answered.
        public var status: Int {
            switch self {
            case .pendingLimit, .invitationRate, .senderRate: 429
            case .malformed, .expired, .usedUp: 400
            }
        }
    }

    public var reason: Reason
    public var message: String

    public init(_ reason: Reason, _ message: String) {
        self.reason = reason
        self.message = message
    }
}
