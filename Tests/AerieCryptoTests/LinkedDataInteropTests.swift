import AerieCore
import Foundation
import Testing

@testable import AerieCrypto

/// Aerie's Linked Data proofs checked live by ACA-Py 1.2.7's own `vc.ld_proofs` and PyLD 2.0.4,
/// through Tests/Interop/acapy_ldp.py. A missing venv fails these tests rather than skipping them.
@Suite(.serialized, .timeLimit(.minutes(10)))
struct LinkedDataInteropTests {
    static func object(_ value: JSONValue) throws -> Any {
        try JSONSerialization.jsonObject(with: Data(value.serialized()))
    }

    @Test func acapyVerifiesWhatAerieSigns() async throws {
        let issuer = LinkedDataProofTests.issuerKey
        let holder = LinkedDataProofTests.holderKey
        var operations: [[String: Any]] = []
        var credentials: [JSONValue] = []
        for name in ["01-degree", "02-citizenship", "03-ed25519-2020"] {
            let unsigned = try LinkedDataFixtures.json("linked-data/canonical/\(name).json")
            for suite in ProofSuite.allCases {
                let signed = try LinkedDataProofs.sign(
                    unsigned, suite: suite, key: issuer, verificationMethod: try DIDKey.keyReference(verkey: issuer.verkey),
                    purpose: .assertionMethod, created: Date())
                credentials.append(signed)
                operations.append(["op": "verify", "document": try Self.object(signed), "purpose": "assertionMethod"])
            }
        }
        for suite in ProofSuite.allCases {
            let presentation = try LinkedDataProofs.sign(
                VerifiablePresentation.make(credentials: Array(credentials.prefix(3)), holder: nil),
                suite: suite, key: holder, verificationMethod: try DIDKey.keyReference(verkey: holder.verkey),
                purpose: .authentication(challenge: "ch-\(suite.type)", domain: "verifier.example"), created: Date())
            operations.append([
                "op": "verify", "document": try Self.object(presentation), "purpose": "authentication",
                "challenge": "ch-\(suite.type)", "domain": "verifier.example",
            ])
        }
        // A tampered one, to show the helper does say no.
        let tampered = credentials[0].replacing(["credentialSubject", "id"]) { _ in "did:example:someone-else" }
        operations.append(["op": "verify", "document": try Self.object(tampered), "purpose": "assertionMethod"])

        let results = try await ACAPy.run(operations, script: "acapy_ldp.py")
        for (index, result) in results.dropLast().enumerated() {
            #expect(result["verified"] as? Bool == true, "operation \(index): \(result)")
        }
        #expect(results.last?["verified"] as? Bool == false)
    }

    @Test func aerieVerifiesWhatACAPySignsNow() async throws {
        let unsigned = try LinkedDataFixtures.json("linked-data/canonical/07-status.json")
        let operations: [[String: Any]] = ProofSuite.allCases.map { suite in
            [
                "op": "sign", "document": try! Self.object(unsigned), "suite": suite.type,
                "seed": "aerie-ldp-issuer-000000000000000", "purpose": "assertionMethod",
                "created": "2025-06-01T00:00:00Z",
            ]
        }
        let results = try await ACAPy.run(operations, script: "acapy_ldp.py")
        for result in results {
            let document = try #require(result["document"], "ACA-Py: \(result)")
            let value = try JSONValue(parsing: try JSONSerialization.data(withJSONObject: document))
            #expect(try LinkedDataProofs.verify(value, purpose: .assertionMethod).controller == LinkedDataProofTests.issuerDID)
        }
    }

    @Test func sameCanonicalNQuadsAsPyLDLive() async throws {
        let names = try LinkedDataFixtures.names(in: "linked-data/canonical", suffix: ".json")
        let documents = try names.map { try LinkedDataFixtures.json("linked-data/canonical/\($0).json") }
        // As text: a round trip through JSONSerialization would turn 5.0 into 5.
        let results = try await ACAPy.run(
            try names.map { ["op": "canonize", "document_text": try LinkedDataFixtures.text("linked-data/canonical/\($0).json")] },
            script: "acapy_ldp.py")
        for (name, (document, result)) in zip(names, zip(documents, results)) {
            let expected = try #require(result["nquads"] as? String, "PyLD: \(result)")
            #expect(try RDFCanonicalization.urdna2015(try JSONLD.toRDF(document)) == expected, "\(name)")
        }
    }
}
