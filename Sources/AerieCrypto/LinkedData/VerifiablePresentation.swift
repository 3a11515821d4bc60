import AerieCore

/// The unsigned Verifiable Presentation a prover wraps its credentials in before signing it
/// with `LinkedDataProofs.sign(…, purpose: .authentication(…))`.
public enum VerifiablePresentation {
    /// The W3C credentials v1 context, first of every presentation.
    public static let credentialsContext = "https://www.w3.org/2018/credentials/v1"
    /// The DIF presentation-exchange submission context (for `presentation_submission`).
    public static let submissionContext = "https://identity.foundation/presentation-exchange/submission/v1"

    /// `{"@context": [credentials v1], "type": ["VerifiablePresentation"], "holder", "verifiableCredential"}`,
    /// as ACA-Py's `create_presentation` makes it. With a `submission` (the DIF
    /// `presentation_submission` object), the submission context and the `PresentationSubmission`
    /// type are added too, as ACA-Py's DIF prover does.
    public static func make(
        credentials: [JSONValue], holder: String?, id: String? = nil, submission: JSONValue? = nil
    ) -> JSONValue {
        var context: [JSONValue] = [.string(credentialsContext)]
        var types: [JSONValue] = ["VerifiablePresentation"]
        var fields: [String: JSONValue] = [:]
        if let submission {
            context.append(.string(submissionContext))
            types.append("PresentationSubmission")
            fields["presentation_submission"] = submission
        }
        fields["@context"] = .array(context)
        fields["type"] = .array(types)
        fields["verifiableCredential"] = .array(credentials)
        if let holder { fields["holder"] = .string(holder) }
        if let id { fields["id"] = .string(id) }
        return .object(fields)
    }
}
