import AerieCore
import AerieCrypto
import Foundation

/// Present-proof 2.0 (RFC 0454) messages with DIF Presentation Exchange attachments (RFC 0510):
/// the verifier's request read with bounds, and the prover's presentation, ack and problem report.
enum PresentProofMessages {
    /// What present-proof shares with the other exchange protocols.
    static let exchangeProtocol = ExchangeProtocol(name: "present-proof", version: "2.0", abandonedCode: "presentation-abandoned")
    static let family = exchangeProtocol.family
    static let requestType = family + "request-presentation"
    static let presentationType = family + "presentation"
    static let ackType = family + "ack"
    static let problemReportType = exchangeProtocol.problemReportType

    static let definitionsFormat = "dif/presentation-exchange/definitions@v1.0"
    static let submissionFormat = "dif/presentation-exchange/submission@v1.0"

    /// A verifier's `request-presentation`.
    struct Request: Sendable {
        var id: String
        var threadId: String
        var parentThreadId: String?
        var comment: String?
        var definition: PresentationDefinition
        /// The definition as received, shown by `proofs.get`.
        var definitionJSON: JSONValue
        var challenge: String
        var domain: String?
        /// The suite the verifier asks for (`format.ldp_vp.proof_type`), Ed25519Signature2018 by default.
        var suite: ProofSuite
    }

    /// Whether the request carries a DIF definition: others (Indy, AnonCreds) are not this
    /// plugin's and stay in the mailbox for the application, as before it.
    static func isDIF(_ message: JSONValue) -> Bool {
        guard case .array(let formats)? = message["formats"] else { return false }
        return formats.contains { $0["format"]?.stringValue == definitionsFormat }
    }

    static func readRequest(_ message: JSONValue) throws -> Request {
        let id = try ExchangeProtocol.id(of: message)
        let thread = try ExchangeProtocol.threadIds(of: message)
        let attached = try FormattedAttachment.document(of: message, list: "request_presentations~attach", format: definitionsFormat)
        guard let definitionJSON = attached["presentation_definition"], case .object = definitionJSON else {
            throw ExchangeProtocol.malformed(
                "the definitions attachment has no presentation_definition object", field: "request_presentations~attach")
        }
        let definition = try PresentationDefinition(parsing: definitionJSON)
        let options = attached["options"]
        // ACA-Py always sends a challenge; without one a presentation could be replayed, so the
        // request's own @id binds it, as the DIF spec suggests for a missing nonce.
        let challenge = try options?["challenge"].flatMap { try ExchangeProtocol.text($0, field: "options.challenge", limits: .id) } ?? id
        let domain = try options?["domain"].flatMap { try ExchangeProtocol.text($0, field: "options.domain", limits: .url) }
        return Request(
            id: id, threadId: thread.thid ?? id, parentThreadId: thread.pthid,
            comment: try message["comment"].flatMap { try ExchangeProtocol.text($0, field: "comment") }, definition: definition,
            definitionJSON: definitionJSON, challenge: challenge, domain: domain, suite: try suite(asked: definitionJSON["format"]))
    }

    /// Ed25519Signature2018 unless the definition's `format.ldp_vp.proof_type` names only 2020;
    /// a format that names neither (BBS+, JWT) is refused.
    static func suite(asked format: JSONValue?) throws -> ProofSuite {
        guard let format, case .object(let formats) = format else { return .ed25519Signature2018 }
        guard let ldp = formats["ldp_vp"] ?? formats["ldp"] else {
            let named = formats.keys.sorted().prefix(4).joined(separator: ", ")
            throw ExchangeProtocol.unsupportedFormat("the definition asks for \(named); Aerie presents ldp_vp only")
        }
        guard case .array(let types)? = ldp["proof_type"] else { return .ed25519Signature2018 }
        let names = types.compactMap(\.stringValue)
        if names.contains(ProofSuite.ed25519Signature2018.type) { return .ed25519Signature2018 }
        if names.contains(ProofSuite.ed25519Signature2020.type) { return .ed25519Signature2020 }
        throw ExchangeProtocol.unsupportedFormat(
            "the definition asks for \(names.prefix(4).joined(separator: ", ")); Aerie signs with Ed25519Signature2018 or 2020")
    }

    /// The signed presentation, as a `presentation` on the request's thread.
    static func presentation(_ signed: JSONValue, threadId: String, parentThreadId: String?, id: String = newId()) -> JSONValue {
        let attachId = newId()
        var thread: [String: JSONValue] = ["thid": .string(threadId)]
        if let parentThreadId { thread["pthid"] = .string(parentThreadId) }
        return [
            "@type": .string(presentationType), "@id": .string(id), "~thread": .object(thread),
            "formats": [["attach_id": .string(attachId), "format": .string(submissionFormat)]],
            "presentations~attach": [["@id": .string(attachId), "mime-type": "application/json", "data": ["json": signed]]],
        ]
    }

    /// RFC 0454's problem report; `code` one of its codes (`presentation-abandoned`...).
    static func problemReport(threadId: String, code: String, description: String, id: String = newId()) -> JSONValue {
        exchangeProtocol.problemReport(threadId: threadId, code: code, description: description, id: id)
    }

    /// A peer's problem report: its code and text, bounded.
    static func readProblemReport(_ message: JSONValue) throws -> (threadId: String, code: String, description: String) {
        let read = try ExchangeProtocol.readProblemReport(message, codeLimits: .id, noThread: "the problem report names no thread")
        return (read.threadId, read.code ?? "unspecified", read.english ?? "")
    }

    static func newId() -> String { ExchangeProtocol.newId() }
}
