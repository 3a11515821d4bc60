import AerieCore
import Foundation

/// The notice sent to the peer of a deleted connection: a generic problem report (RFC 0035)
/// with the code `connection_closed`, threaded to the connection's Request.
public enum ClosedNotice {
    public static let type = "https://didcomm.org/notification/1.0/problem-report"
    public static let code = "connection_closed"

    public static func message(threadId: String?, id: String = UUID.random().lowercasedString) -> JSONValue {
        var fields: [String: JSONValue] = [
            "@type": .string(type),
            "@id": .string(id),
            "description": .object([
                "code": .string(code), "en": .string("The other party deleted this connection; messages to it are not received."),
            ]),
            "who_retries": .string("none"),
            "impact": .string("connection"),
        ]
        if let threadId { fields["~thread"] = .object(["thid": .string(threadId)]) }
        return .object(fields)
    }
}
