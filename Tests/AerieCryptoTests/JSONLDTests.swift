import AerieCore
import Testing

@testable import AerieCrypto

/// JSON-LD expansion and toRDF against PyLD 2.0.4's canonical N-Quads of the same documents
/// (Tests/Fixtures/linked-data/canonical), and the bounds on hostile documents.
struct JSONLDTests {
    static let credential: JSONValue = [
        "@context": ["https://www.w3.org/2018/credentials/v1", "https://w3id.org/citizenship/v1"],
        "type": ["VerifiableCredential", "PermanentResident"],
        "issuer": "did:key:z6Mkgb2uPmSVfKWxaGrsDrLS4DUVU9nkfdPB7tqaLMG5GM8C",
        "issuanceDate": "2020-01-01T12:00:00Z",
        "credentialSubject": ["type": ["PermanentResident"], "givenName": "ALICE"],
    ]

    @Test func sameCanonicalNQuadsAsPyLD() throws {
        let names = try LinkedDataFixtures.names(in: "linked-data/canonical", suffix: ".json")
        #expect(names.count == 12)
        for name in names {
            let document = try LinkedDataFixtures.json("linked-data/canonical/\(name).json")
            let expected = try LinkedDataFixtures.text("linked-data/canonical/\(name).nq")
            let canonical = try RDFCanonicalization.urdna2015(try JSONLD.toRDF(document))
            #expect(canonical == expected, "\(name)")
        }
    }

    @Test func expandsScopedTypeAndGraphContainers() throws {
        let expanded = try JSONLD.expand(Self.credential)
        guard case .array(let nodes) = expanded, nodes.count == 1 else {
            Issue.record("expected one node: \(expanded)")
            return
        }
        let node = nodes[0]
        #expect(node["@type"] == ["https://www.w3.org/2018/credentials#VerifiableCredential", "https://w3id.org/citizenship#PermanentResident"])
        #expect(node["https://www.w3.org/2018/credentials#issuer"] == [["@id": "did:key:z6Mkgb2uPmSVfKWxaGrsDrLS4DUVU9nkfdPB7tqaLMG5GM8C"]])
        #expect(node["https://www.w3.org/2018/credentials#issuanceDate"] == [[
            "@value": "2020-01-01T12:00:00Z", "@type": "http://www.w3.org/2001/XMLSchema#dateTime",
        ]])
        let subject = node["https://www.w3.org/2018/credentials#credentialSubject"]
        #expect(subject == [["@type": ["https://w3id.org/citizenship#PermanentResident"], "http://schema.org/givenName": [["@value": "ALICE"]]]])
    }

    @Test func unknownContextIsRefusedByNameAndNeverFetched() throws {
        var document = Self.credential
        document = document.replacing(["@context"]) { _ in ["https://www.w3.org/2018/credentials/v1", "https://evil.example/ctx"] }
        let error = #expect(throws: CryptoError.self) { try JSONLD.toRDF(document) }
        #expect(error?.code == .unknownContext)
        #expect(error?.message.contains("https://evil.example/ctx") == true)
    }

    @Test func protectedTermsCannotBeRedefined() throws {
        let document = Self.credential.replacing(["@context"]) { context in
            guard case .array(let items) = context else { return context }
            return .array(items + [["VerifiableCredential": "https://evil.example/Credential"]])
        }
        let error = #expect(throws: CryptoError.self) { try JSONLD.expand(document) }
        #expect(error?.code == .invalidJSONLD)
        #expect(error?.message.contains("protected term redefinition of VerifiableCredential") == true)
        // `issuer` is defined in VerifiableCredential's type-scoped context: a top-level
        // redefinition is allowed by JSON-LD and is overridden where the type applies.
        let shadowed = Self.credential.replacing(["@context"]) { context in
            guard case .array(let items) = context else { return context }
            return .array(items + [["issuer": "https://evil.example/issuer"]])
        }
        #expect(try JSONLD.expand(shadowed) == JSONLD.expand(Self.credential))
    }

    @Test func documentsPastTheBoundsAreRefused() throws {
        var deep: JSONValue = "leaf"
        for _ in 0..<40 { deep = ["https://example.org/p": deep] }
        let tooDeep = #expect(throws: CryptoError.self) { try JSONLD.expand(deep) }
        #expect(tooDeep?.code == .limitExceeded)

        let wide: JSONValue = ["@context": ["@vocab": "https://example.org/"], "items": .array((0..<200).map { .int(Int64($0)) })]
        let limits = LinkedDataLimits(maxDepth: 32, maxValues: 100, maxNodes: 100, maxContextLoads: 10, maxCanonicalizationWork: 100)
        let tooBig = #expect(throws: CryptoError.self) { try JSONLD.expand(wide, limits: limits) }
        #expect(tooBig?.code == .limitExceeded)

        // Many nodes, each a new subject.
        let nodes: JSONValue = ["@context": ["@vocab": "https://example.org/"], "@graph": .array((0..<200).map { ["@id": .string("urn:n:\($0)"), "p": 1] })]
        let tooMany = #expect(throws: CryptoError.self) {
            try JSONLD.toRDF(nodes, limits: LinkedDataLimits(maxDepth: 32, maxValues: 10_000, maxNodes: 100, maxContextLoads: 10, maxCanonicalizationWork: 100))
        }
        #expect(tooMany?.code == .limitExceeded)

        // Scoped contexts re-applied at every level count as context loads.
        var nested: JSONValue = ["name": "x"]
        for _ in 0..<20 { nested = ["@context": ["name": "https://example.org/name", "child": "https://example.org/child"], "child": nested] }
        let tooManyContexts = #expect(throws: CryptoError.self) {
            try JSONLD.expand(nested, limits: LinkedDataLimits(maxDepth: 64, maxValues: 10_000, maxNodes: 100, maxContextLoads: 10, maxCanonicalizationWork: 100))
        }
        #expect(tooManyContexts?.code == .limitExceeded)
    }

    /// Many values of one property (each kept once) cost linear time, not quadratic.
    @Test func manyValuesOfOnePropertyStayLinear() throws {
        let values: [JSONValue] = (0..<50_000).map { .string("v\($0 % 40_000)") }
        let document: JSONValue = ["@context": ["@vocab": "https://example.org/"], "@id": "urn:x", "many": .array(values)]
        let clock = ContinuousClock()
        var dataset = RDFDataset()
        let elapsed = try clock.measure { dataset = try JSONLD.toRDF(document) }
        #expect(dataset.quads.count == 40_000)
        #expect(elapsed < .seconds(60))
    }

    @Test func garbageIsAnErrorNotACrash() throws {
        let garbage: [JSONValue] = [
            ["@context": 5],
            ["@context": ["@version": .double(2.0)]],
            ["@context": ["a": ["@id": 5]]],
            ["@context": ["a": ["@container": "@bogus"]], "a": 1],
            ["@context": ["@vocab": "https://example.org/"], "@id": ["not": "a string"]],
            ["@context": ["@vocab": "https://example.org/"], "@type": 7],
            ["@context": ["@vocab": "https://example.org/"], "p": ["@value": ["nested": true]]],
            ["@context": ["a": "b:c", "b": "a:x"], "a": 1],
            ["@context": ["@import": "https://www.w3.org/2018/credentials/v1"]],
        ]
        for document in garbage {
            #expect(throws: CryptoError.self, "\(document)") { try JSONLD.toRDF(document) }
        }
    }

    @Test func numbersAndJSONLiteralsAsPyLDWritesThem() {
        #expect(JSONLDProcessor.canonicalDouble(1.1) == "1.1E0")
        #expect(JSONLDProcessor.canonicalDouble(5.0) == "5.0E0")
        #expect(JSONLDProcessor.canonicalDouble(1e21) == "1.0E21")
        #expect(JSONLDProcessor.canonicalDouble(-0.000015) == "-1.500000000000000E-05")
        #expect(String(decoding: JSONLDProcessor.canonicalJSON(["b": [1, "x"], "a": .null]), as: UTF8.self) == #"{"a":null,"b":[1,"x"]}"#)
    }

    @Test func bundledContextsAllParseAndExpand() throws {
        let bundled = JSONLDContexts.bundled
        #expect(bundled.urls.count == 12)
        for url in bundled.urls {
            #expect(bundled.documents[url]?["@context"] != nil, "\(url)")
            _ = try JSONLD.expand(["@context": .string(url)])
        }
    }
}
