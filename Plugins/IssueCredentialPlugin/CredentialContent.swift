import AerieCore
import AerieCrypto
import Foundation

/// What Aerie reads from a JSON-LD credential, and the check that an issued credential is the one
/// requested: the one place a received credential is judged before it is stored.
public enum CredentialContent {
    /// Members an issuer may add to what was requested: the proof, and the issuance date when the
    /// request left it to the issuer. Anything else added, removed or changed is a different
    /// credential.
    static let addedByIssuer: Set<String> = ["proof", "issuanceDate", "validFrom"]

    /// The issuer's DID: `issuer`, or `issuer.id`.
    public static func issuer(of credential: JSONValue, field: String = "credential") throws -> String {
        let value = credential["issuer"]?.stringValue ?? credential["issuer"]?["id"]?.stringValue
        guard let value, !value.isEmpty else {
            throw ExchangeProtocol.malformed("\(field).issuer must be a DID or an object with an id", field: "\(field).issuer")
        }
        if let violation = PeerFieldLimits.did.violation(value, name: "\(field).issuer") {
            throw ExchangeProtocol.malformed(violation, field: "\(field).issuer")
        }
        return value
    }

    public static func types(of credential: JSONValue) -> [String] {
        switch credential["type"] {
        case .string(let type)?: [type]
        case .array(let items)?: items.compactMap(\.stringValue)
        default: []
        }
    }

    /// `credentialSubject.id` (of the first subject when there are several).
    public static func subjectId(of credential: JSONValue) -> String? {
        switch credential["credentialSubject"] {
        case .array(let subjects)?: subjects.first?["id"]?.stringValue
        case let subject?: subject["id"]?.stringValue
        case nil: nil
        }
    }

    /// Whether the credential names a subject (`credentialSubject.id`, of any of its subjects).
    static func hasSubjectId(_ credential: JSONValue) -> Bool {
        switch credential["credentialSubject"] {
        case .array(let subjects)?: subjects.contains { $0["id"] != nil }
        case let subject?: subject["id"] != nil
        case nil: false
        }
    }

    /// The credential with `credentialSubject.id` set to `holder` (every subject's, when it
    /// lists several). Refuses a subject already bound to another DID.
    static func binding(_ credential: JSONValue, to holder: String) throws -> JSONValue {
        func bind(_ subject: JSONValue) throws -> JSONValue {
            guard case .object(var fields) = subject else {
                throw ExchangeProtocol.malformed("credentialSubject must be an object", field: "credential.credentialSubject")
            }
            if let existing = fields["id"]?.stringValue, existing != holder {
                throw AerieError(
                    .conflict, "the offer binds the credential to another subject (\(existing.prefix(128))), not to a DID of this wallet",
                    field: "credential.credentialSubject.id")
            }
            fields["id"] = .string(holder)
            return .object(fields)
        }
        guard case .object(var fields) = credential else { return credential }
        switch fields["credentialSubject"] {
        case .array(let subjects)?: fields["credentialSubject"] = .array(try subjects.map(bind))
        case let subject?: fields["credentialSubject"] = try bind(subject)
        case nil: fields["credentialSubject"] = ["id": .string(holder)]
        }
        return .object(fields)
    }

    /// Checks that `issued` is `requested` as issued: every requested member unchanged (the
    /// issuer may append to `@context`, e.g. the Ed25519Signature2020 suite's), only
    /// `addedByIssuer` added, subject bound to `holder`, a proof of the requested type; then
    /// verifies the proof (`LinkedDataProofs`, contexts from the bundled set only) and that its
    /// key is the issuer's. Answers what the store keeps.
    static func verifyIssued(_ issued: JSONValue, requested: IssueCredentialMessages.CredentialDetail, holder: String) throws
        -> VerifiedProof
    {
        guard case .object(let issuedFields) = issued, case .object(let requestedFields) = requested.credential else {
            throw IssueCredentialError.rejected("the credential is not an object")
        }
        for (name, value) in requestedFields {
            if name == "@context" {
                guard contextExtends(issuedFields[name], value) else {
                    throw IssueCredentialError.rejected("the credential's @context is not the one requested")
                }
                continue
            }
            guard issuedFields[name] == value else {
                throw IssueCredentialError.rejected("the credential's \(name.prefix(64)) differs from what was requested")
            }
        }
        for name in issuedFields.keys where requestedFields[name] == nil && !addedByIssuer.contains(name) {
            throw IssueCredentialError.rejected("the credential adds \(name.prefix(64)), which was not requested")
        }
        guard subjectId(of: issued) == holder else {
            throw IssueCredentialError.rejected("the credential is not bound to the holder DID of the request")
        }
        let issuer = try issuer(of: issued)
        let proof: VerifiedProof
        do {
            proof = try LinkedDataProofs.verify(issued, purpose: .assertionMethod)
        } catch let error as CryptoError {
            throw IssueCredentialError.rejected("the credential's proof does not verify: \(error.message)", details: String(reflecting: error))
        }
        guard proof.controller == issuer else {
            throw IssueCredentialError.rejected("the credential is signed by \(proof.controller.prefix(128)), not by its issuer")
        }
        if let wanted = requested.proofType, proof.suite.type != wanted {
            throw IssueCredentialError.rejected("the credential's proof is \(proof.suite.type), not the \(wanted) requested")
        }
        return proof
    }

    /// Whether `issued` is `requested`, possibly with contexts appended.
    static func contextExtends(_ issued: JSONValue?, _ requested: JSONValue) -> Bool {
        func list(_ value: JSONValue?) -> [JSONValue] {
            switch value {
            case .array(let items)?: items
            case let single?: [single]
            case nil: []
            }
        }
        let issuedList = list(issued)
        let requestedList = list(requested)
        return issuedList.count >= requestedList.count && Array(issuedList.prefix(requestedList.count)) == requestedList
    }

    /// An ISO 8601 date of the credential (`issuanceDate`, `expirationDate`...), nil when absent
    /// or unreadable.
    static func date(_ credential: JSONValue, _ name: String) -> Date? {
        guard let text = credential[name]?.stringValue else { return nil }
        let formatter = ISO8601DateFormatter()
        if let date = formatter.date(from: text) { return date }
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        return formatter.date(from: text)
    }
}
