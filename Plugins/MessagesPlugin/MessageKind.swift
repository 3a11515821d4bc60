import AerieCore

/// The short kind the SDK's `type` field uses for a DIDComm `@type` (seed 002); the full `@type`
/// for anything else. Both prefixes (`https://didcomm.org/` and `did:sov:...;spec/`) classify alike.
public enum MessageKind {
    /// Message types the mailbox accepts from peers and keeps for the application (the
    /// connections plugin routes its own: responses, problem reports, trust pings; the
    /// out-of-band plugin its handshake-reuse-accepted and problem reports).
    public static let mailboxTypes: [String] = [
        "issue-credential/1.0/offer-credential", "issue-credential/2.0/offer-credential",
        "issue-credential/1.0/issue-credential", "issue-credential/2.0/issue-credential",
        "issue-credential/1.0/ack", "issue-credential/2.0/ack",
        "present-proof/1.0/request-presentation", "present-proof/2.0/request-presentation",
        "present-proof/1.0/ack", "present-proof/2.0/ack",
        "questionanswer/1.0/question", "committedanswer/1.0/question",
        "notification/1.0/ack",
        "basicmessage/1.0/message",
    ].map { InboundMessage.didcommPrefix + $0 }

    /// The kind of `type` (as received or normalised).
    public static func classify(_ type: String) -> String {
        let normalized = InboundMessage.normalizedType(type)
        guard normalized.hasPrefix(InboundMessage.didcommPrefix) else { return type }
        let parts = normalized.dropFirst(InboundMessage.didcommPrefix.count).split(separator: "/", omittingEmptySubsequences: false)
        guard parts.count == 3 else { return type }
        let (family, name) = (parts[0], parts[2])
        switch (family, name) {
        case ("connections", "response"): return "connectionResponse"
        case ("connections", "invitation"), ("out-of-band", "invitation"): return "connectionInvitation"
        case ("issue-credential", "offer-credential"): return "credOffer"
        case ("issue-credential", "issue-credential"): return "credential"
        case ("present-proof", "request-presentation"): return "proofReq"
        case ("questionanswer", "question"), ("committedanswer", "question"): return "question"
        case ("out-of-band", "handshake-reuse-accepted"): return "handshakeReuseAccepted"
        case ("trust_ping", "ping"), ("trust_ping", "ping_response"): return "trustPing"
        case ("basicmessage", "message"): return "basicMessage"
        case (_, "ack"): return "ack"
        case (_, "problem_report"), (_, "problem-report"): return "problemReport"
        default: return type
        }
    }
}
