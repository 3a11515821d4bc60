import AerieCore
import AerieCrypto
import Testing

@testable import IssueCredentialPlugin

/// The checks of an issued credential against the request that run before its proof is verified:
/// a credential that differs from the request in any claim is refused whatever its proof.
@Suite(.timeLimit(.minutes(10))) struct CredentialContentTests {
    static let holder = "did:key:z6MkjchhfUsD6mmvni8mCdXHw216Xrm9bQe2mBH1P5RDjVJG"

    static var requested: IssueCredentialMessages.CredentialDetail {
        get throws {
            IssueCredentialMessages.CredentialDetail(
                credential: try CredentialContent.binding(IssueCredentialMessagesTests.credential, to: holder),
                options: ["proofType": "Ed25519Signature2018"])
        }
    }

    static func issued(_ change: (inout [String: JSONValue]) -> Void) throws -> JSONValue {
        guard case .object(var fields) = try requested.credential else { return .null }
        fields["proof"] = [
            "type": "Ed25519Signature2018", "proofPurpose": "assertionMethod", "jws": "eyJ..x",
            "verificationMethod": .string(IssueCredentialMessagesTests.issuer + "#z6MkhaXgBZDvotDkL5257faiztiGiC2QtKLGpbnnEGta2doK"),
        ]
        change(&fields)
        return .object(fields)
    }

    func rejection(_ credential: JSONValue) throws -> String? {
        do {
            _ = try CredentialContent.verifyIssued(credential, requested: try Self.requested, holder: Self.holder)
            return nil
        } catch let error as AerieError {
            #expect(error.data["problemCode"] == "credential-rejected")
            return error.message
        }
    }

    @Test func aChangedClaimIssuerOrSubjectIsRefused() throws {
        let cases: [(String, (inout [String: JSONValue]) -> Void)] = [
            ("credentialSubject", { $0["credentialSubject"] = ["id": .string(Self.holder), "degree": ["type": "PhD"]] }),
            ("credentialSubject", { $0["credentialSubject"] = ["id": "did:key:z6MkSomeoneElse", "degree": $0["credentialSubject"]?["degree"] ?? .null] }),
            ("issuer", { $0["issuer"] = "did:key:z6MkpTHR8VNsBxYAAWHut2Geadd9jSwuBV8xRoAnwWsdvktH" }),
            ("type", { $0["type"] = ["VerifiableCredential"] }),
            ("adds", { $0["evidence"] = ["id": "x"] }),
            ("@context", { $0["@context"] = ["https://www.w3.org/2018/credentials/v1"] }),
        ]
        for (word, change) in cases {
            let message = try rejection(try Self.issued(change))
            #expect(message?.contains(word) == true, "\(word): \(message ?? "accepted")")
        }
    }

    @Test func anUnchangedCredentialGoesOnToItsProof() throws {
        // The content matches (a context appended by the issuer is allowed), so what decides is
        // the proof: this one's signature is not real and must not verify.
        let credential = try Self.issued { fields in
            fields["@context"] = .array((fields["@context"].flatMap { if case .array(let a) = $0 { a } else { nil } } ?? [])
                + ["https://w3id.org/security/suites/ed25519-2020/v1"])
        }
        let message = try rejection(credential)
        #expect(message?.contains("proof") == true, "\(message ?? "accepted")")
    }

    @Test func readsWhatTheStoreKeeps() throws {
        let credential = try Self.issued { _ in }
        #expect(try CredentialContent.issuer(of: credential) == IssueCredentialMessagesTests.issuer)
        #expect(try CredentialContent.issuer(of: ["issuer": ["id": "did:key:zA", "name": "A"]]) == "did:key:zA")
        #expect(CredentialContent.types(of: credential) == ["VerifiableCredential", "UniversityDegreeCredential"])
        #expect(CredentialContent.subjectId(of: credential) == Self.holder)
        #expect(CredentialContent.date(credential, "issuanceDate") != nil)
        #expect(CredentialContent.date(["d": "2020-01-01T12:00:00.123Z"], "d") != nil)
        #expect(CredentialContent.date(["d": "yesterday"], "d") == nil)
    }
}
