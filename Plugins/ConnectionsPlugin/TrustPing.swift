import AerieCore
import Foundation

/// Trust ping 1.0 (RFC 0048) messages, pure.
enum TrustPing {
    static let pingType = ConnectionMessages.trustPingType
    static let responseType = ConnectionMessages.trustPingResponseType
    static let maxCommentBytes = 1024

    /// A ping that asks for a response.
    static func ping(id: String = UUID.random().lowercasedString, comment: String? = nil) -> JSONValue {
        var fields: [String: JSONValue] = ["@type": .string(pingType), "@id": .string(id), "response_requested": true]
        if let comment { fields["comment"] = .string(String(comment.prefix(maxCommentBytes))) }
        return .object(fields)
    }

    /// Whether a ping asks for a response: RFC 0048's default is true, so only an explicit
    /// `false` means no.
    static func responseRequested(_ ping: JSONValue) -> Bool {
        ping["response_requested"] != .bool(false)
    }

    /// The answer to the ping `pingId`: `~thread.thid` names it.
    static func response(to pingId: String, id: String = UUID.random().lowercasedString) -> JSONValue {
        ["@type": .string(responseType), "@id": .string(id), "~thread": ["thid": .string(pingId)]]
    }
}

/// What `connections.ping` answers.
public struct PingResult: Encodable, Sendable, Hashable {
    public var connectionId: String
    /// The ping as recorded among the connection's sent messages.
    public var uid: String
    public var messageId: String
    /// The peer's `ping_response` in the mailbox.
    public var responseUid: String
    /// From queuing the ping to storing the response, by the database's clock (whichever server
    /// stored the response).
    public var roundTripMs: Double

    enum CodingKeys: String, CodingKey {
        case connectionId, uid, messageId = "@id", responseUid, roundTripMs
    }
}

struct PingParams: Decodable, Sendable, DocumentedParams {
    static let defaultTimeout = 10
    static let maxTimeout = 60

    var connectionId: String
    var timeoutSeconds: Int?

    static let documentation = [
        ParamDoc("connectionId", "string", "an established connection (state 4 accepted or 5 reused)"),
        ParamDoc("timeoutSeconds", "integer", required: false, "how long to wait for the response, 1...60 (10); then timeout"),
    ]

    func validated() throws -> (id: UUID, timeout: Duration) {
        let id = try ConnectionIdParams(connectionId: connectionId).id()
        let seconds = timeoutSeconds ?? Self.defaultTimeout
        guard (1...Self.maxTimeout).contains(seconds) else {
            throw AerieError.invalidParams("timeoutSeconds must be between 1 and \(Self.maxTimeout)", field: "timeoutSeconds")
        }
        return (id, .seconds(seconds))
    }
}
