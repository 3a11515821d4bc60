import AerieCore
import AerieCrypto
import Testing

@testable import IssueCredentialPlugin

/// Reading and writing issue-credential 2.0 messages with RFC 0593 attachments, in the shapes
/// ACA-Py 1.2.7 sends (its `formats/ld_proof` handler: base64 attachments, `formats` naming them).
@Suite(.timeLimit(.minutes(10))) struct IssueCredentialMessagesTests {
    static let issuer = "did:key:z6MkhaXgBZDvotDkL5257faiztiGiC2QtKLGpbnnEGta2doK"

    static let credential: JSONValue = [
        "@context": ["https://www.w3.org/2018/credentials/v1", "https://www.w3.org/2018/credentials/examples/v1"],
        "type": ["VerifiableCredential", "UniversityDegreeCredential"],
        "issuer": .string(issuer), "issuanceDate": "2020-01-01T12:00:00Z",
        "credentialSubject": ["degree": ["type": "BachelorDegree", "name": "Bachelor of Science and Arts"]],
    ]
    static let detail: JSONValue = ["credential": credential, "options": ["proofType": "Ed25519Signature2018"]]

    static func offer(_ detail: JSONValue = detail, id: String = "offer-1", base64: Bool = true, extra: [String: JSONValue] = [:])
        -> JSONValue
    {
        let data: JSONValue = base64 ? ["base64": .string(Base64.encode(detail.serialized()))] : ["json": detail]
        var fields: [String: JSONValue] = [
            "@type": "https://didcomm.org/issue-credential/2.0/offer-credential", "@id": .string(id),
            "comment": "a degree",
            "credential_preview": ["@type": "https://didcomm.org/issue-credential/2.0/credential-preview", "attributes": []],
            "formats": [["attach_id": "ld-1", "format": "aries/ld-proof-vc-detail@v1.0"]],
            "offers~attach": [["@id": "ld-1", "mime-type": "application/json", "data": data]],
        ]
        for (key, value) in extra { fields[key] = value }
        return .object(fields)
    }

    @Test func readsAnOfferInBothEncodings() throws {
        for base64 in [true, false] {
            let offer = try IssueCredentialMessages.readOffer(Self.offer(base64: base64))
            #expect(offer.messageId == "offer-1")
            #expect(offer.threadId == "offer-1")
            #expect(offer.parentThreadId == nil)
            #expect(offer.comment == "a degree")
            #expect(offer.detail.credential == Self.credential)
            #expect(offer.detail.proofType == "Ed25519Signature2018")
        }
        // A counter-offer to a proposal runs on the proposal's thread; an out-of-band one names the invitation.
        let answer = try IssueCredentialMessages.readOffer(
            Self.offer(extra: ["~thread": ["thid": "proposal-1", "pthid": "invitation-1"]]))
        #expect(answer.threadId == "proposal-1")
        #expect(answer.parentThreadId == "invitation-1")
    }

    @Test func refusesMalformedOffersWithAStableCode() {
        let cases: [(JSONValue, String)] = [
            (Self.offer(extra: ["formats": [["attach_id": "ld-1", "format": "hlindy/cred-abstract@v2.0"]]]), "unsupported-format"),
            (Self.offer(extra: ["offers~attach": []]), "malformed-message"),
            (Self.offer(extra: ["offers~attach": [["@id": "other", "data": ["json": Self.detail]]]]), "malformed-message"),
            (Self.offer(extra: ["offers~attach": [["@id": "ld-1", "data": ["base64": "%%%"]]]]), "malformed-message"),
            (Self.offer(["credential": Self.credential, "options": ["proofType": "BbsBlsSignature2020"]]), "malformed-message"),
            (Self.offer(["credential": Self.credential]), "malformed-message"),
            (Self.offer(["credential": ["type": ["VerifiableCredential"]], "options": ["proofType": "Ed25519Signature2018"]]), "malformed-message"),
            (Self.offer(extra: ["@id": .string(String(repeating: "x", count: 300))]), "malformed-message"),
            (Self.offer(extra: ["~thread": "thread"]), "malformed-message"),
            (Self.offer(extra: ["comment": .string(String(repeating: "c", count: 2000))]), "malformed-message"),
        ]
        for (message, code) in cases {
            #expect {
                try IssueCredentialMessages.readOffer(message)
            } throws: { error in
                (error as? AerieError)?.data["problemCode"]?.stringValue == code
            }
        }
    }

    @Test func refusesAnOversizedAttachmentBeforeDecodingIt() {
        let big: JSONValue = [
            "credential": [
                "issuer": .string(Self.issuer), "credentialSubject": ["blob": .string(String(repeating: "a", count: 70 * 1024))],
            ],
            "options": ["proofType": "Ed25519Signature2018"],
        ]
        for base64 in [true, false] {
            #expect(throws: AerieError.self) { try IssueCredentialMessages.readOffer(Self.offer(big, base64: base64)) }
        }
    }

    @Test func writesARequestBoundToTheHolderOnTheOffersThread() throws {
        let offer = try IssueCredentialMessages.readOffer(Self.offer())
        let holder = "did:key:z6MkjchhfUsD6mmvni8mCdXHw216Xrm9bQe2mBH1P5RDjVJG"
        let bound = IssueCredentialMessages.CredentialDetail(
            credential: try CredentialContent.binding(offer.detail.credential, to: holder), options: offer.detail.options)
        let request = IssueCredentialMessages.request(detail: bound, threadId: offer.threadId, parentThreadId: "inv-1")
        #expect(request["@type"] == "https://didcomm.org/issue-credential/2.0/request-credential")
        #expect(request["~thread"] == ["thid": "offer-1", "pthid": "inv-1"])
        // Read back as ACA-Py would: the attachment the formats name, base64 JSON.
        let attached = try FormattedAttachment.document(
            of: request, list: "requests~attach", format: IssueCredentialMessages.detailFormat)
        #expect(attached["credential"]?["credentialSubject"]?["id"] == .string(holder))
        #expect(attached["credential"]?["credentialSubject"]?["degree"] == Self.credential["credentialSubject"]?["degree"])
        #expect(attached["options"] == Self.detail["options"])
        // An offer already bound to someone else is not requested for this wallet.
        let foreign = try CredentialContent.binding(Self.credential, to: "did:key:zOther")
        #expect(throws: AerieError.self) { try CredentialContent.binding(foreign, to: holder) }
    }

    @Test func readsACredentialAndAProblemReport() throws {
        var signed = Self.credential
        if case .object(var fields) = signed {
            fields["proof"] = ["type": "Ed25519Signature2018", "jws": "x"]
            signed = .object(fields)
        }
        let message: JSONValue = [
            "@type": "https://didcomm.org/issue-credential/2.0/issue-credential", "@id": "issue-1",
            "~thread": ["thid": "offer-1"],
            "formats": [["attach_id": "c", "format": "aries/ld-proof-vc@v1.0"]],
            "credentials~attach": [["@id": "c", "data": ["base64": .string(Base64.encode(signed.serialized()))]]],
        ]
        let issued = try IssueCredentialMessages.readIssued(message)
        #expect(issued.threadId == "offer-1")
        #expect(issued.credential == signed)
        // Without a thread, or without a proof, it is refused.
        if case .object(var fields) = message {
            fields["~thread"] = nil
            #expect(throws: AerieError.self) { try IssueCredentialMessages.readIssued(.object(fields)) }
        }
        let report = try IssueCredentialMessages.readProblemReport([
            "@type": "https://didcomm.org/issue-credential/2.0/problem-report", "@id": "p",
            "~thread": ["thid": "offer-1"], "description": ["en": "revoked the offer", "code": "issuance-abandoned"],
        ])
        #expect(report.threadId == "offer-1")
        #expect(report.code == "issuance-abandoned")
        #expect(report.description == "revoked the offer")
        let written = IssueCredentialMessages.problemReport(threadId: "t", code: "issuance-abandoned", description: "no")
        #expect(try IssueCredentialMessages.readProblemReport(written).description == "no")
    }
}
