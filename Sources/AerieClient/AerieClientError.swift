import AerieCore

/// An error answered by the server, or a failure of the connection itself.
public struct AerieClientError: Error, Sendable, CustomStringConvertible {
    /// The JSON-RPC error code (e.g. -32001), or 0 for a connection failure.
    public let code: Int
    public let message: String
    /// `error.data` as sent by the server; `data.code` is Aerie's stable string code.
    public let data: JSONValue?

    public init(code: Int, message: String, data: JSONValue?) {
        self.code = code
        self.message = message
        self.data = data
    }

    /// Aerie's stable code string (`unauthenticated`, `not_found`, ...), when the server sent one.
    public var stableCode: String? { data?["code"]?.stringValue }
    /// The params field at fault, for -32602.
    public var field: String? { data?["field"]?.stringValue }

    public var description: String {
        if let stableCode { return "\(message) (\(stableCode), \(code))" }
        return "\(message) (\(code))"
    }

    static func connection(_ message: String) -> AerieClientError {
        AerieClientError(code: 0, message: message, data: ["code": "connection"])
    }
}
