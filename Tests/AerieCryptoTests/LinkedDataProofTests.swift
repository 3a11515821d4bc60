import AerieCore
import Foundation
import Testing

@testable import AerieCrypto

/// Linked Data proofs against documents ACA-Py 1.2.7 signed (Tests/Fixtures/linked-data/acapy-signed,
/// its README says how they were made), and tampering with them.
struct LinkedDataProofTests {
    static let issuerDID = "did:key:z6Mkgb2uPmSVfKWxaGrsDrLS4DUVU9nkfdPB7tqaLMG5GM8C"
    static let holderDID = "did:key:z6MkpYwPFCCTSqKtdmZyASYChoNXXnnbpNwc8NKKrkVxQBuM"
    static let challenge = "7a4a2c1e-3f0b-4d55-9a7e-1c2d3e4f5a6b"
    static let issuerKey = try! Ed25519KeyPair(seed: Array("aerie-ldp-issuer-000000000000000".utf8))
    static let holderKey = try! Ed25519KeyPair(seed: Array("aerie-ldp-holder-000000000000000".utf8))
    static let created = Date(timeIntervalSince1970: 1_704_164_645)

    static let credentials = [
        "credential-degree-2018", "credential-degree-2020", "credential-citizenship-2018", "credential-citizenship-2020",
        "credential-ed25519-2020-2018", "credential-ed25519-2020-2020",
    ]

    static func signed(_ name: String) throws -> JSONValue {
        try LinkedDataFixtures.json("linked-data/acapy-signed/\(name).json")
    }

    static func expectFailure(
        _ code: CryptoError.Code, _ document: JSONValue, _ purpose: ProofPurpose = .assertionMethod,
        sourceLocation: SourceLocation = #_sourceLocation
    ) -> CryptoError? {
        let error = #expect(throws: CryptoError.self, sourceLocation: sourceLocation) {
            try LinkedDataProofs.verify(document, purpose: purpose)
        }
        #expect(error?.code == code, "\(String(reflecting: error))", sourceLocation: sourceLocation)
        return error
    }

    @Test(arguments: credentials)
    func verifiesACAPySignedCredentials(name: String) throws {
        let result = try LinkedDataProofs.verify(try Self.signed(name), purpose: .assertionMethod)
        #expect(result.controller == Self.issuerDID)
        #expect(result.verificationMethod == "\(Self.issuerDID)#\(Self.issuerDID.dropFirst(8))")
        #expect(result.verkey == Self.issuerKey.verkey)
        #expect(result.suite == (name.hasSuffix("2018") ? .ed25519Signature2018 : .ed25519Signature2020))
        #expect(result.created == "2024-01-02T03:04:05+00:00")
    }

    @Test func verifiesACAPySignedPresentations() throws {
        let with2018 = try LinkedDataProofs.verify(
            try Self.signed("presentation-2018"),
            purpose: .authentication(challenge: Self.challenge, domain: "verifier.example"))
        #expect(with2018.controller == Self.holderDID)
        let with2020 = try LinkedDataProofs.verify(
            try Self.signed("presentation-2020"), purpose: .authentication(challenge: Self.challenge, domain: nil))
        #expect(with2020.suite == .ed25519Signature2020)
        // The embedded credentials keep their own proofs, which verify on their own.
        guard case .array(let embedded)? = try Self.signed("presentation-2018")["verifiableCredential"] else {
            Issue.record("no verifiableCredential")
            return
        }
        for credential in embedded {
            #expect(try LinkedDataProofs.verify(credential, purpose: .assertionMethod).controller == Self.issuerDID)
        }
    }

    @Test(arguments: credentials)
    func oneCharacterOfAClaimChangedFails(name: String) throws {
        let document = try Self.signed(name)
        let claim: [Any] = document["credentialSubject"]?["givenName"] != nil ? ["credentialSubject", "givenName"]
            : document["credentialSubject"]?["name"] != nil ? ["credentialSubject", "name"] : ["issuanceDate"]
        let tampered = document.replacing(claim) { value in
            guard case .string(let text) = value else { return value }
            return .string(String(text.dropLast()) + (text.last == "X" ? "Y" : "X"))
        }
        #expect(tampered != document)
        _ = Self.expectFailure(.invalidSignature, tampered)
    }

    @Test(arguments: credentials)
    func proofCreatedChangedFails(name: String) throws {
        let tampered = try Self.signed(name).replacing(["proof", "created"]) { _ in "2024-01-02T03:04:06+00:00" }
        _ = Self.expectFailure(.invalidSignature, tampered)
    }

    @Test(arguments: credentials)
    func keySwappedFails(name: String) throws {
        let other = Ed25519KeyPair.generate()
        let otherMethod = try DIDKey.keyReference(verkey: other.verkey)
        // Another key named as the signer: the signature does not verify under it.
        let swapped = try Self.signed(name).replacing(["proof", "verificationMethod"]) { _ in .string(otherMethod) }
        _ = Self.expectFailure(.invalidSignature, swapped)
        // Another key that really signs, issuer unchanged: the issuer is not the signer.
        var unsigned = try Self.signed(name)
        if case .object(var fields) = unsigned {
            fields.removeValue(forKey: "proof")
            unsigned = .object(fields)
        }
        let resigned = try LinkedDataProofs.sign(
            unsigned, suite: .ed25519Signature2018, key: other, verificationMethod: otherMethod, purpose: .assertionMethod,
            created: Self.created)
        let error = Self.expectFailure(.proofPurposeMismatch, resigned)
        #expect(error?.message.contains("issuer") == true)
    }

    @Test func purposeChallengeAndDomainAreChecked() throws {
        let presentation = try Self.signed("presentation-2018")
        let wrongChallenge = Self.expectFailure(
            .proofPurposeMismatch, presentation, .authentication(challenge: "another", domain: nil))
        #expect(wrongChallenge?.message.contains("challenge") == true)
        let wrongDomain = Self.expectFailure(
            .proofPurposeMismatch, presentation, .authentication(challenge: Self.challenge, domain: "other.example"))
        #expect(wrongDomain?.message.contains("domain") == true)
        let wrongPurpose = Self.expectFailure(.proofPurposeMismatch, presentation, .assertionMethod)
        #expect(wrongPurpose?.message.contains("authentication") == true)
        _ = Self.expectFailure(
            .proofPurposeMismatch, try Self.signed("credential-degree-2018"), .authentication(challenge: Self.challenge, domain: nil))
    }

    @Test func malformedProofsHaveClearCodes() throws {
        let document = try Self.signed("credential-degree-2018")
        let notDIDKey = document.replacing(["proof", "verificationMethod"]) { _ in "did:web:example.com#key-1" }
        #expect(Self.expectFailure(.invalidDID, notDIDKey)?.message.contains("did:key") == true)
        let noFragment = document.replacing(["proof", "verificationMethod"]) { _ in .string(Self.issuerDID) }
        _ = Self.expectFailure(.invalidDID, noFragment)
        let unknownType = document.replacing(["proof", "type"]) { _ in "BbsBlsSignature2020" }
        #expect(Self.expectFailure(.unsupportedAlgorithm, unknownType)?.message.contains("BbsBlsSignature2020") == true)
        let badJWS = document.replacing(["proof", "jws"]) { _ in "not-a-jws" }
        _ = Self.expectFailure(.invalidProof, badJWS)
        let attachedPayload = document.replacing(["proof", "jws"]) { jws in
            .string(jws.stringValue!.replacingOccurrences(of: "..", with: ".e30."))
        }
        _ = Self.expectFailure(.invalidProof, attachedPayload)
        let b64Header = document.replacing(["proof", "jws"]) { jws in
            let parts = jws.stringValue!.components(separatedBy: "..")
            return .string(Base64.encodeURL(Array(#"{"alg":"EdDSA"}"#.utf8)) + ".." + parts[1])
        }
        _ = Self.expectFailure(.invalidProof, b64Header)
        var withoutProof = document
        if case .object(var fields) = withoutProof {
            fields.removeValue(forKey: "proof")
            withoutProof = .object(fields)
        }
        _ = Self.expectFailure(.invalidProof, withoutProof)
        let badValue = try Self.signed("credential-degree-2020").replacing(["proof", "proofValue"]) { _ in "zzz" }
        _ = Self.expectFailure(.invalidProof, badValue)
        let unknownContext = document.replacing(["@context"]) { context in
            guard case .array(let items) = context else { return context }
            return .array(items + ["https://evil.example/v1"])
        }
        #expect(Self.expectFailure(.unknownContext, unknownContext)?.message.contains("https://evil.example/v1") == true)
        // A claim no context defines would not be covered by the signature: refused.
        let undefined = document.replacing(["credentialSubject", "undefinedClaim"]) { _ in "anything" }
        #expect(Self.expectFailure(.invalidJSONLD, undefined)?.message.contains("undefinedClaim") == true)
        _ = Self.expectFailure(.invalidProof, "just a string")
    }

    /// A credential past the default bounds is refused before canonicalization, with its code;
    /// a megabyte claim within them only fails its signature.
    @Test func oversizedCredentialsAreRefusedClearly() throws {
        let document = try Self.signed("credential-degree-2018")
        let tooMany = document.replacing(["credentialSubject", "degree", "name"]) { _ in
            .array((0..<150_000).map { .int(Int64($0)) })
        }
        #expect(Self.expectFailure(.limitExceeded, tooMany)?.message.contains("values") == true)
        let megabyte = document.replacing(["credentialSubject", "degree", "name"]) { _ in
            .string(String(repeating: "\u{1}garbage\"", count: 110_000))
        }
        _ = Self.expectFailure(.invalidSignature, megabyte)
    }

    @Test(arguments: ProofSuite.allCases)
    func signsAndVerifiesItsOwnCredentials(suite: ProofSuite) throws {
        var unsigned = try LinkedDataFixtures.json("linked-data/canonical/02-citizenship.json")
        let method = try DIDKey.keyReference(verkey: Self.issuerKey.verkey)
        let signed = try LinkedDataProofs.sign(
            unsigned, suite: suite, key: Self.issuerKey, verificationMethod: method, purpose: .assertionMethod,
            created: Self.created)
        #expect(signed["proof"]?["type"] == .string(suite.type))
        #expect(signed["proof"]?["created"] == "2024-01-02T03:04:05Z")
        let verified = try LinkedDataProofs.verify(signed, purpose: .assertionMethod)
        #expect(verified.controller == Self.issuerDID)
        if suite == .ed25519Signature2020 {
            #expect(signed["@context"]?.arrayContains("https://w3id.org/security/suites/ed25519-2020/v1") == true)
        }
        // A second proof beside the first: both kept, either verifies.
        unsigned = signed
        let twice = try LinkedDataProofs.sign(
            unsigned, suite: .ed25519Signature2018, key: Self.issuerKey, verificationMethod: method,
            purpose: .assertionMethod, created: Self.created)
        guard case .array(let proofs)? = twice["proof"] else {
            Issue.record("expected two proofs")
            return
        }
        #expect(proofs.count == 2)
        #expect(try LinkedDataProofs.verify(twice, purpose: .assertionMethod).controller == Self.issuerDID)
    }

    /// The interop harness's driver's licence (its `cred_data_schema_driverslicense_v2.json`
    /// shape): credentials v1, the BBS+ suite's bbs v1 context and inline terms, signed with the
    /// Ed25519 suites; a claim changed after signing fails.
    @Test(arguments: ProofSuite.allCases)
    func signsAndVerifiesTheHarnessDriversLicence(suite: ProofSuite) throws {
        let licence: JSONValue = [
            "@context": [
                "https://www.w3.org/2018/credentials/v1", "https://w3id.org/security/bbs/v1",
                [
                    "dl": "http://example.com/drivers-license#", "AATHDriversLicense": "dl:AATHDriversLicense",
                    "address": "dl:address", "DL_number": "dl:DL_number", "expiry": "dl:expiry", "age": "dl:age",
                ],
            ],
            "type": ["VerifiableCredential", "AATHDriversLicense"], "issuer": .string(Self.issuerDID),
            "issuanceDate": "2026-11-29T09:00:00Z",
            "credentialSubject": [
                "id": .string(Self.holderDID), "address": "947 this street, Kingston Ontario Canada, K9O 3R5",
                "DL_number": "09385029529385", "expiry": "10/12/2022", "age": "30",
            ],
        ]
        let signed = try LinkedDataProofs.sign(
            licence, suite: suite, key: Self.issuerKey, verificationMethod: try DIDKey.keyReference(verkey: Self.issuerKey.verkey),
            purpose: .assertionMethod, created: Self.created)
        #expect(try LinkedDataProofs.verify(signed, purpose: .assertionMethod).controller == Self.issuerDID)
        guard case .object(var fields) = signed, case .object(var subject)? = fields["credentialSubject"] else {
            Issue.record("the signed licence is not an object")
            return
        }
        subject["age"] = "17"
        fields["credentialSubject"] = .object(subject)
        _ = Self.expectFailure(.invalidSignature, .object(fields))
    }

    @Test func signsPresentationsWithChallengeAndDomain() throws {
        let credential = try Self.signed("credential-citizenship-2018")
        let presentation = VerifiablePresentation.make(
            credentials: [credential], holder: Self.holderDID,
            submission: ["id": "s1", "definition_id": "d1", "descriptor_map": []])
        let method = try DIDKey.keyReference(verkey: Self.holderKey.verkey)
        let signed = try LinkedDataProofs.sign(
            presentation, suite: .ed25519Signature2018, key: Self.holderKey, verificationMethod: method,
            purpose: .authentication(challenge: "c-1", domain: "d.example"), created: Self.created)
        #expect(signed["proof"]?["challenge"] == "c-1")
        #expect(signed["proof"]?["domain"] == "d.example")
        #expect(try LinkedDataProofs.verify(signed, purpose: .authentication(challenge: "c-1", domain: "d.example")).controller == Self.holderDID)
        _ = Self.expectFailure(.proofPurposeMismatch, signed, .authentication(challenge: "c-2", domain: nil))
    }

    /// Many verifications at once on a set whose processed-context cache starts empty: the cache
    /// is shared safely and every result is right.
    @Test func concurrentVerificationsShareTheContextCache() async throws {
        let contexts = JSONLDContexts(documents: JSONLDContexts.bundled.documents)
        let documents = try Self.credentials.map { try Self.signed($0) }
        try await withThrowingTaskGroup(of: String.self) { group in
            for index in 0..<24 {
                let document = documents[index % documents.count]
                group.addTask { try LinkedDataProofs.verify(document, purpose: .assertionMethod, contexts: contexts).controller }
            }
            var count = 0
            for try await controller in group {
                #expect(controller == Self.issuerDID)
                count += 1
            }
            #expect(count == 24)
        }
    }

    @Test func signingRefusesAMethodOfAnotherKey() throws {
        let error = #expect(throws: CryptoError.self) {
            try LinkedDataProofs.sign(
                try Self.signed("credential-degree-2018"), suite: .ed25519Signature2018, key: Self.holderKey,
                verificationMethod: try DIDKey.keyReference(verkey: Self.issuerKey.verkey), purpose: .assertionMethod,
                created: Self.created)
        }
        #expect(error?.code == .invalidKey)
    }
}

extension JSONValue {
    func arrayContains(_ text: String) -> Bool {
        if case .array(let items) = self { return items.contains(.string(text)) }
        return false
    }
}
