import AerieCore
import AerieCrypto
import Foundation

/// The issue-credential 2.0 messages (Aries RFC 0453) the holder reads and writes, with the
/// JSON-LD attachment formats of RFC 0593: `aries/ld-proof-vc-detail@v1.0` in proposals, offers
/// and requests, `aries/ld-proof-vc@v1.0` in the credential. Reading is bounded and refuses with
/// `IssueCredentialError`; nothing here does I/O.
public enum IssueCredentialMessages {
    /// What issue-credential shares with the other exchange protocols.
    package static let exchangeProtocol = ExchangeProtocol(name: "issue-credential", version: "2.0", abandonedCode: "issuance-abandoned")
    public static let family = exchangeProtocol.family
    public static let proposeType = family + "propose-credential"
    public static let offerType = family + "offer-credential"
    public static let requestType = family + "request-credential"
    public static let issueType = family + "issue-credential"
    public static let ackType = family + "ack"
    public static let problemReportType = exchangeProtocol.problemReportType
    public static let previewType = family + "credential-preview"

    public static let detailFormat = "aries/ld-proof-vc-detail@v1.0"
    public static let credentialFormat = "aries/ld-proof-vc@v1.0"

    /// Largest attached document (a credential or a credential detail), decoded.
    public static let maxAttachmentBytes = FormattedAttachment.maxBytes

    /// RFC 0593's credential detail: the credential to issue (no proof) and the proof options.
    public struct CredentialDetail: Sendable, Hashable {
        public var credential: JSONValue
        public var options: JSONValue

        public init(credential: JSONValue, options: JSONValue) {
            self.credential = credential
            self.options = options
        }

        /// `options.proofType`.
        public var proofType: String? { options["proofType"]?.stringValue }

        public var json: JSONValue { ["credential": credential, "options": options] }

        /// Reads a detail (from an attachment or a caller): an object with a credential object
        /// that names an issuer, and options with a proof type Aerie verifies.
        public static func read(_ value: JSONValue, field: String) throws -> CredentialDetail {
            guard case .object = value, let credential = value["credential"], case .object = credential else {
                throw ExchangeProtocol.malformed("\(field) must hold a credential object", field: field)
            }
            guard let options = value["options"], case .object = options else {
                throw ExchangeProtocol.malformed("\(field) must hold an options object", field: field)
            }
            guard let proofType = options["proofType"]?.stringValue, ProofSuite(rawValue: proofType) != nil else {
                throw ExchangeProtocol.malformed(
                    "\(field).options.proofType must be one of \(ProofSuite.allCases.map(\.type).joined(separator: ", "))",
                    field: "\(field).options.proofType")
            }
            guard credential["proof"] == nil else {
                throw ExchangeProtocol.malformed("\(field).credential must not carry a proof", field: field)
            }
            _ = try CredentialContent.issuer(of: credential, field: "\(field).credential")
            // A credential whose contexts Aerie lacks could never be verified once issued.
            do {
                try LinkedDataProofs.checkSignable(credential)
            } catch let error as CryptoError {
                throw ExchangeProtocol.malformed(
                    "\(field).credential could not be verified once issued: \(error.message)", field: "\(field).credential")
            }
            return CredentialDetail(credential: credential, options: options)
        }
    }

    /// A received offer: its thread and detail.
    public struct Offer: Sendable, Hashable {
        public var messageId: String
        /// The thread the exchange runs on: `~thread.thid` when the offer answers a proposal,
        /// else the offer's `@id`.
        public var threadId: String
        /// `~thread.pthid`: the out-of-band invitation the offer came in, if any.
        public var parentThreadId: String?
        public var comment: String?
        public var detail: CredentialDetail
    }

    /// A received credential: its thread and the verifiable credential (unverified here).
    public struct Issued: Sendable, Hashable {
        public var threadId: String
        public var credential: JSONValue
    }

    /// A received problem report: its thread and what it says.
    public struct ProblemReport: Sendable, Hashable {
        public var threadId: String
        public var code: String?
        public var description: String
    }

    // MARK: - Reading

    public static func readOffer(_ message: JSONValue) throws -> Offer {
        let messageId = try ExchangeProtocol.id(of: message)
        let thread = try ExchangeProtocol.threadIds(of: message)
        let attachment = try FormattedAttachment.document(of: message, list: "offers~attach", format: detailFormat)
        let detail = try CredentialDetail.read(attachment, field: "offers~attach")
        let comment = try message["comment"].flatMap { try ExchangeProtocol.text($0, field: "comment") }
        return Offer(
            messageId: messageId, threadId: thread.thid ?? messageId, parentThreadId: thread.pthid, comment: comment, detail: detail)
    }

    public static func readIssued(_ message: JSONValue) throws -> Issued {
        _ = try ExchangeProtocol.id(of: message)
        guard let thid = try ExchangeProtocol.threadIds(of: message).thid else {
            throw ExchangeProtocol.malformed("issue-credential must name its thread (~thread.thid)", field: "~thread.thid")
        }
        let credential = try FormattedAttachment.document(of: message, list: "credentials~attach", format: credentialFormat)
        guard case .object = credential, credential["proof"] != nil else {
            throw ExchangeProtocol.malformed("the attached credential must be an object with a proof", field: "credentials~attach")
        }
        return Issued(threadId: thid, credential: credential)
    }

    public static func readProblemReport(_ message: JSONValue) throws -> ProblemReport {
        let read = try ExchangeProtocol.readProblemReport(
            message, codeLimits: .name, noThread: "a problem report must name its thread (~thread.thid)")
        return ProblemReport(threadId: read.threadId, code: read.code, description: read.english ?? read.code ?? "no description")
    }

    // MARK: - Writing

    /// The request for `detail` (its `credentialSubject.id` already bound), on `threadId`.
    public static func request(detail: CredentialDetail, threadId: String, parentThreadId: String?, id: String = newId()) -> JSONValue {
        let attachId = newId()
        var thread: [String: JSONValue] = ["thid": .string(threadId)]
        if let parentThreadId { thread["pthid"] = .string(parentThreadId) }
        return [
            "@type": .string(requestType), "@id": .string(id), "~thread": .object(thread),
            "formats": [["attach_id": .string(attachId), "format": .string(detailFormat)]],
            "requests~attach": [base64Attachment(detail.json, id: attachId)],
        ]
    }

    /// A proposal of `detail`; its `@id` starts the thread.
    public static func proposal(detail: CredentialDetail, comment: String?, id: String = newId()) -> JSONValue {
        let attachId = newId()
        var message: [String: JSONValue] = [
            "@type": .string(proposeType), "@id": .string(id),
            "formats": [["attach_id": .string(attachId), "format": .string(detailFormat)]],
            "filters~attach": [base64Attachment(detail.json, id: attachId)],
        ]
        if let comment { message["comment"] = .string(comment) }
        return .object(message)
    }

    public static func ack(threadId: String, id: String = newId()) -> JSONValue {
        ["@type": .string(ackType), "@id": .string(id), "status": "OK", "~thread": ["thid": .string(threadId)]]
    }

    /// RFC 0453's problem report; `code` one of RFC 0453's (`issuance-abandoned`...).
    public static func problemReport(threadId: String, code: String, description: String, id: String = newId()) -> JSONValue {
        exchangeProtocol.problemReport(threadId: threadId, code: code, description: description, id: id)
    }

    public static func newId() -> String { ExchangeProtocol.newId() }
    // MARK: - Pieces

    static func base64Attachment(_ value: JSONValue, id: String) -> JSONValue {
        ["@id": .string(id), "mime-type": "application/json", "data": ["base64": .string(Base64.encode(value.serialized()))]]
    }
}
