import AerieCore

/// A failure reported by libpq or the server, kept with enough detail for logs.
///
/// It never leaves AerieStore: `aerieError` maps it onto the stable codes clients see, and the
/// SQL text and server message survive only in `AerieError.details`.
struct PostgresError: Error, CustomStringConvertible {
    /// Five-character SQLSTATE, nil when libpq failed without a server error (e.g. lost socket).
    var sqlState: String?
    var message: String
    /// The server's primary message alone (no severity, detail or context), for errors whose
    /// text Aerie wrote itself (the quota triggers).
    var primaryMessage: String?
    /// The statement that failed, for logs.
    var statement: String?
    /// Whether the connection is unusable afterwards.
    var isConnectionFailure: Bool
    /// In a pipeline, the index of the statement that failed.
    var statementIndex: Int? = nil

    var description: String {
        var text = "PostgreSQL error"
        if let sqlState { text += " \(sqlState)" }
        text += ": \(message)"
        if let statement { text += " [statement: \(statement)]" }
        return text
    }

    /// SQLSTATEs after which the session is gone: class 08 (connection exception) and the
    /// shutdown / termination family 57P01-57P03.
    static func isConnectionState(_ state: String?) -> Bool {
        guard let state else { return false }
        return state.hasPrefix("08") || state == "57P01" || state == "57P02" || state == "57P03"
    }

    /// What a call that would queue one message too many is told (schema/0034).
    static let outboxFullMessage =
        "too many of the tenant's messages wait to be sent: the limit is AERIE_OUTBOX_MAX_PENDING"

    var aerieError: AerieError {
        if isConnectionFailure {
            return AerieError(.unavailable, "database unavailable", details: description)
        }
        switch sqlState {
        case "23505":
            return AerieError(.conflict, "already exists", details: description)
        case "40001", "40P01", "55P03":
            return AerieError(.busy, "database busy, try again", details: description)
        case "57014":
            return AerieError(.timeout, "database operation timed out", details: description)
        case "53300":
            return AerieError(.unavailable, "database unavailable", details: description)
        case "AEQ01":
            // Raised by the mailbox's quota trigger (schema/0020, now `aerie.mailbox_inserted`)
            // with a message written for the client. (AEQ02 was the outbox's, until schema/0034.)
            return AerieError(.quotaExceeded, primaryMessage ?? "a tenant quota is exceeded", details: description)
        case "23514" where message.contains("\"no_matching_connection_check\""):
            // The tenant has a connection for the invitation (schema/0036: `requireNoMatch`).
            return MatchingConnection.exists
        case "23514" where message.contains("\"connection_as_read_check\""):
            // The connection changed since it was read (schema/0037: `lockAsRead`).
            return ConnectionAsRead.changed
        case "23514" where message.contains("\"outbox_room_check\""):
            // The outbox insert found no room (schema/0034: its check fails on this domain).
            return AerieError(.quotaExceeded, Self.outboxFullMessage, details: description)
        default:
            return AerieError.internalError(details: description)
        }
    }
}
