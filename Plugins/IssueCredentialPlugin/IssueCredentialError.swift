import AerieCore

/// Why a credential is refused: an `AerieError` for the caller, with the RFC 0453 problem-report
/// code told to the issuer. (Malformed messages and formats are refused as every exchange
/// protocol refuses them: `ExchangeProtocol`.)
public enum IssueCredentialError {
    /// A credential that is not the one requested, or whose proof does not verify.
    public static func rejected(_ message: String, details: String? = nil) -> AerieError {
        AerieError(.invalidParams, message, field: "credentials~attach", data: ["problemCode": "credential-rejected"], details: details)
    }
}
