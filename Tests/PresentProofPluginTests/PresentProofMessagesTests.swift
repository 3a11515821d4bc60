import AerieCore
import AerieCrypto
import Testing

@testable import PresentProofPlugin

@Suite(.timeLimit(.minutes(10))) struct PresentProofMessagesTests {
    static let definition: JSONValue = [
        "id": "pd-1", "format": ["ldp_vp": ["proof_type": ["Ed25519Signature2020"]]],
        "input_descriptors": [["id": "d", "schema": [["uri": "https://w3id.org/citizenship#PermanentResident"]]]],
    ]

    /// As ACA-Py 1.2.7 sends it from `/present-proof-2.0/send-request` with a `dif` request.
    static func request(_ data: JSONValue, format: String = PresentProofMessages.definitionsFormat, base64: Bool = false) -> JSONValue {
        let body: JSONValue = base64 ? ["base64": .string(Base64.encode(data.serialized()))] : ["json": data]
        return [
            "@type": "https://didcomm.org/present-proof/2.0/request-presentation", "@id": "req-1", "will_confirm": true,
            "formats": [["attach_id": "dif", "format": .string(format)]],
            "request_presentations~attach": [["@id": "dif", "mime-type": "application/json", "data": body]],
        ]
    }

    @Test func readsADIFRequestInEitherEncoding() throws {
        let data: JSONValue = ["options": ["challenge": "c-1", "domain": "verifier.example"], "presentation_definition": Self.definition]
        for base64 in [false, true] {
            let request = try PresentProofMessages.readRequest(Self.request(data, base64: base64))
            #expect(request.id == "req-1")
            #expect(request.threadId == "req-1")
            #expect(request.challenge == "c-1")
            #expect(request.domain == "verifier.example")
            #expect(request.suite == .ed25519Signature2020)
            #expect(request.definition.id == "pd-1")
        }
        let noOptions = try PresentProofMessages.readRequest(Self.request(["presentation_definition": ["id": "p", "input_descriptors": [["id": "d"]]]]))
        #expect(noOptions.challenge == "req-1")
        #expect(noOptions.suite == .ed25519Signature2018)
    }

    @Test func refusesOtherFormatsAndMalformedRequests() throws {
        let data: JSONValue = ["presentation_definition": Self.definition]
        let indy = #expect(throws: AerieError.self) {
            try PresentProofMessages.readRequest(Self.request(data, format: "hlindy/proof-req@v2.0"))
        }
        #expect(indy?.data["problemCode"] == "unsupported-format")
        let bbs = #expect(throws: AerieError.self) {
            try PresentProofMessages.readRequest(Self.request(["presentation_definition": [
                "id": "p", "format": ["ldp_vp": ["proof_type": ["BbsBlsSignature2020"]]], "input_descriptors": [["id": "d"]],
            ]]))
        }
        #expect(bbs?.data["problemCode"] == "unsupported-format")
        let jwt = #expect(throws: AerieError.self) {
            try PresentProofMessages.readRequest(Self.request(["presentation_definition": [
                "id": "p", "format": ["jwt_vp": ["alg": ["EdDSA"]]], "input_descriptors": [["id": "d"]],
            ]]))
        }
        #expect(jwt?.data["problemCode"] == "unsupported-format")
        let huge: JSONValue = ["presentation_definition": ["id": .string(String(repeating: "x", count: 70_000))]]
        for bad in [Self.request(["options": [:]]), Self.request(huge), ["@type": "x", "@id": "r"], Self.request(["presentation_definition": "x"])] {
            let error = #expect(throws: AerieError.self) { try PresentProofMessages.readRequest(bad) }
            #expect(error?.data["problemCode"] == "malformed-message")
        }
    }

    @Test func presentationAndProblemReportCarryTheThread() throws {
        let vp: JSONValue = ["type": ["VerifiablePresentation"]]
        let message = PresentProofMessages.presentation(vp, threadId: "t-1", parentThreadId: "inv-1")
        #expect(message["@type"] == "https://didcomm.org/present-proof/2.0/presentation")
        #expect(message["~thread"] == ["thid": "t-1", "pthid": "inv-1"])
        let attachId = try #require(message["formats"]?[0]?["attach_id"])
        #expect(message["formats"] == [["attach_id": attachId, "format": "dif/presentation-exchange/submission@v1.0"]])
        #expect(try FormattedAttachment.document(of: message, list: "presentations~attach", format: PresentProofMessages.submissionFormat) == vp)
        let report = PresentProofMessages.problemReport(threadId: "t-1", code: "presentation-abandoned", description: "no match")
        let read = try PresentProofMessages.readProblemReport(report)
        #expect(read.threadId == "t-1")
        #expect(read.code == "presentation-abandoned")
        #expect(read.description == "no match")
    }
}

extension JSONValue {
    fileprivate subscript(index: Int) -> JSONValue? {
        if case .array(let items) = self, index < items.count { return items[index] }
        return nil
    }
}
