import AerieCore

/// Why a peer's issue-credential message or a credential is refused: an `AerieError` for the
/// caller, and the RFC 0453 problem-report code told to the peer.
public enum IssueCredentialError {
    /// A message or attachment that is not what RFC 0453/0593 describe, or over a bound.
    public static func malformed(_ message: String, field: String) -> AerieError {
        AerieError(.invalidParams, message, field: field, data: ["problemCode": "malformed-message"])
    }

    /// No attachment in a format Aerie reads (only JSON-LD credentials, RFC 0593).
    public static func unsupportedFormat(_ message: String) -> AerieError {
        AerieError(.invalidParams, message, field: "formats", data: ["problemCode": "unsupported-format"])
    }

    /// A credential that is not the one requested, or whose proof does not verify.
    public static func rejected(_ message: String, details: String? = nil) -> AerieError {
        AerieError(.invalidParams, message, field: "credentials~attach", data: ["problemCode": "credential-rejected"], details: details)
    }

    /// The problem-report code for `error` (RFC 0453: `issuance-abandoned` when none fits).
    static func problemCode(_ error: any Error) -> String {
        (error as? AerieError)?.data["problemCode"]?.stringValue ?? "issuance-abandoned"
    }
}
