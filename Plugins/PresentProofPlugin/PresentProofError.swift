import AerieCore

/// Why a verifier's request or a presentation is refused: an `AerieError` for the caller, and
/// the RFC 0454 problem-report code told to the peer.
enum PresentProofError {
    /// A message or definition that is not what RFC 0454/0510 describe, or over a bound.
    static func malformed(_ message: String, field: String) -> AerieError {
        AerieError(.invalidParams, message, field: field, data: ["problemCode": "malformed-message"])
    }

    /// No attachment in a format Aerie reads (only `dif/presentation-exchange/definitions@v1.0`).
    static func unsupportedFormat(_ message: String) -> AerieError {
        AerieError(.invalidParams, message, field: "formats", data: ["problemCode": "unsupported-format"])
    }

    /// The request cannot be answered from the tenant's credentials.
    static func unsatisfiable(_ message: String, data: [String: JSONValue] = [:]) -> AerieError {
        var data = data
        data["problemCode"] = "presentation-abandoned"
        return AerieError(.conflict, message, data: data)
    }

    /// The problem-report code for `error` (RFC 0454: `presentation-abandoned` when none fits).
    static func problemCode(_ error: any Error) -> String {
        (error as? AerieError)?.data["problemCode"]?.stringValue ?? "presentation-abandoned"
    }
}
