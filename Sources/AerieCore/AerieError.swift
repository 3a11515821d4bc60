extension AerieError {
    /// Whether a failure can pass (the database, an internal error, a timeout, a full quota that
    /// frees up as messages are sent): worth trying again later. Anything but an `AerieError` is.
    public static func isTransient(_ error: any Error) -> Bool {
        guard let error = error as? AerieError else { return true }
        return [.internalError, .unavailable, .busy, .timeout, .quotaExceeded].contains(error.code)
    }
}

/// An error a handler may throw; its code is stable and its message safe to show a client.
///
/// Internals (SQL text, file paths, peer responses) belong in `details`, which only
/// `String(reflecting:)` prints and which never reaches the wire.
public struct AerieError: Error, Sendable, CustomStringConvertible, CustomDebugStringConvertible {
    public struct Code: Sendable, Hashable, CustomStringConvertible {
        private enum Base: String, Sendable {
            case parseError = "parse_error"
            case invalidRequest = "invalid_request"
            case methodNotFound = "method_not_found"
            case invalidParams = "invalid_params"
            case internalError = "internal_error"
            case unauthenticated
            case forbidden
            case notFound = "not_found"
            case conflict
            case invalidInvitation = "invalid_invitation"
            case unsupportedInvitation = "unsupported_invitation"
            case peerUnreachable = "peer_unreachable"
            case timeout
            case busy
            case unavailable
            case quotaExceeded = "quota_exceeded"
            case invalidArchive = "invalid_archive"
        }

        private let base: Base
        private init(_ base: Base) { self.base = base }

        public static let parseError = Code(.parseError)
        public static let invalidRequest = Code(.invalidRequest)
        public static let methodNotFound = Code(.methodNotFound)
        public static let invalidParams = Code(.invalidParams)
        public static let internalError = Code(.internalError)
        public static let unauthenticated = Code(.unauthenticated)
        public static let forbidden = Code(.forbidden)
        public static let notFound = Code(.notFound)
        public static let conflict = Code(.conflict)
        public static let invalidInvitation = Code(.invalidInvitation)
        public static let unsupportedInvitation = Code(.unsupportedInvitation)
        public static let peerUnreachable = Code(.peerUnreachable)
        public static let timeout = Code(.timeout)
        public static let busy = Code(.busy)
        public static let unavailable = Code(.unavailable)
        /// A per-tenant limit (mailbox messages or bytes, messages waiting to be sent) would be
        /// passed; nothing was stored. Frees up as the tenant's messages are handled or sent.
        public static let quotaExceeded = Code(.quotaExceeded)
        /// A tenant archive that is not one, of another format version, cut short, altered, or
        /// not opened by the passphrase or key given; nothing was imported.
        public static let invalidArchive = Code(.invalidArchive)

        /// The stable string sent as `error.data.code`.
        public var name: String { base.rawValue }
        public var description: String { base.rawValue }

        /// The JSON-RPC error code this maps onto (DESIGN.md: standard codes, then -32000..-32099).
        public var rpcCode: Int {
            switch base {
            case .parseError: -32700
            case .invalidRequest: -32600
            case .methodNotFound: -32601
            case .invalidParams: -32602
            case .internalError: -32603
            case .unauthenticated: -32001
            case .forbidden: -32002
            case .notFound: -32004
            case .conflict: -32009
            case .invalidInvitation: -32010
            case .unsupportedInvitation: -32011
            case .peerUnreachable: -32020
            case .timeout: -32021
            case .busy: -32029
            case .unavailable: -32030
            case .quotaExceeded: -32031
            case .invalidArchive: -32040
            }
        }
    }

    public var code: Code
    /// Safe to show to the caller.
    public var message: String
    /// The params field at fault, for `invalid_params`.
    public var field: String?
    /// Extra data for the caller (merged into `error.data`); must be safe to show.
    public var data: [String: JSONValue]
    /// For logs only.
    public var details: String?

    public init(
        _ code: Code, _ message: String, field: String? = nil, data: [String: JSONValue] = [:],
        details: String? = nil
    ) {
        self.code = code
        self.message = message
        self.field = field
        self.data = data
        self.details = details
    }

    public var description: String { "\(code): \(message)" }
    public var debugDescription: String {
        var s = "AerieError(\(code): \(message)"
        if let field { s += ", field: \(field)" }
        if let details { s += ", details: \(details)" }
        return s + ")"
    }

    public static func invalidParams(_ message: String, field: String) -> AerieError {
        AerieError(.invalidParams, message, field: field)
    }
    public static func notFound(_ message: String) -> AerieError { AerieError(.notFound, message) }
    public static func internalError(details: String) -> AerieError {
        AerieError(.internalError, "internal error", details: details)
    }
}
