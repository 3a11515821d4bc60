import AerieCore
import Testing

@testable import AerieCrypto

/// URDNA2015 against the W3C rdf-canon evaluation vectors (Tests/Fixtures/rdf-canon).
struct RDFCanonicalizationTests {
    /// RDFC-1.0 escapes control characters that PyLD (and so Aerie, for ACA-Py's signatures)
    /// writes raw; SHA-384 is not URDNA2015's hash.
    static let knownDifferences: Set<String> = ["test060", "test075"]

    @Test func everyVectorOfTheW3CSuite() throws {
        let names = try LinkedDataFixtures.names(in: "rdf-canon", suffix: "-rdfc10.nq")
        #expect(names.count >= 60)
        var passed = 0
        for name in names {
            let input = try RDFDataset(nQuads: try LinkedDataFixtures.text("rdf-canon/\(name)-in.nq"))
            let expected = try LinkedDataFixtures.text("rdf-canon/\(name)-rdfc10.nq")
            let canonical = try RDFCanonicalization.urdna2015(input)
            if Self.knownDifferences.contains(name) {
                #expect(canonical != expected, "\(name) was expected to differ; update knownDifferences")
            } else {
                #expect(canonical == expected, "\(name)")
                passed += 1
            }
        }
        #expect(passed == names.count - Self.knownDifferences.count)
    }

    /// test060 differs only in how control characters are escaped: without them it matches.
    @Test func escapingDiffersOnlyForControlCharacters() throws {
        let input = try RDFDataset(nQuads: try LinkedDataFixtures.text("rdf-canon/test060-in.nq"))
        let canonical = try RDFCanonicalization.urdna2015(input)
        let expected = try LinkedDataFixtures.text("rdf-canon/test060-rdfc10.nq")
        // The statements whose literal holds a control character, by predicate.
        let raw = canonical.split(separator: "\n").filter { line in
            line.unicodeScalars.contains { ($0.value < 0x20 && $0 != "\t") || $0.value == 0x7F }
        }
        let predicates = Set(raw.map { $0.split(separator: " ")[1] })
        #expect(!predicates.isEmpty)
        let ours = canonical.split(separator: "\n").filter { !predicates.contains($0.split(separator: " ")[1]) }
        let theirs = expected.split(separator: "\n").filter { !predicates.contains($0.split(separator: " ")[1]) }
        #expect(ours == theirs)
    }

    /// The suite's poison graph (a 10-node clique) is refused by the work bound, quickly.
    @Test func poisonGraphHitsTheWorkBound() throws {
        let input = try RDFDataset(nQuads: try LinkedDataFixtures.text("rdf-canon/test074-in.nq"))
        let clock = ContinuousClock()
        let elapsed = try clock.measure {
            let error = #expect(throws: CryptoError.self) { try RDFCanonicalization.urdna2015(input) }
            #expect(error?.code == .limitExceeded)
        }
        #expect(elapsed < .seconds(10))
        // A higher bound is a choice of the caller, not a hang: a small clique completes.
        let small = RDFDataset(quads: (0..<4).flatMap { a in
            (0..<4).filter { $0 != a }.map { b in
                RDFQuad(subject: .blankNode("n\(a)"), predicate: .iri("urn:ex:p"), object: .blankNode("n\(b)"))
            }
        })
        let canonical = try RDFCanonicalization.urdna2015(small)
        #expect(canonical.split(separator: "\n").count == 12)
        #expect(canonical.contains("_:c14n3"))
    }

    @Test func sameOutputWhateverTheInputLabelsAndOrder() throws {
        let text = try LinkedDataFixtures.text("rdf-canon/test020-in.nq")
        let dataset = try RDFDataset(nQuads: text)
        let relabelled = RDFDataset(quads: dataset.quads.reversed().map { quad in
            func swap(_ term: RDFTerm?) -> RDFTerm? {
                if case .blankNode(let label)? = term { return .blankNode("x" + label + "y") }
                return term
            }
            return RDFQuad(subject: swap(quad.subject)!, predicate: quad.predicate, object: swap(quad.object)!, graph: swap(quad.graph))
        })
        #expect(try RDFCanonicalization.urdna2015(relabelled) == RDFCanonicalization.urdna2015(dataset))
    }

    @Test func nQuadsThatDoNotParseNameTheLine() throws {
        let error = #expect(throws: CryptoError.self) {
            try RDFDataset(nQuads: "<urn:a> <urn:b> <urn:c> .\n<urn:a> \"literal predicate\" <urn:c> .\n")
        }
        #expect(error?.code == .invalidEncoding)
        #expect(error?.message.contains("line 2") == true)
        #expect(throws: CryptoError.self) { try RDFDataset(nQuads: "<urn:a> <urn:b> \"unterminated .\n") }
        #expect(throws: CryptoError.self) { try RDFDataset(nQuads: String(repeating: "\u{0}garbage", count: 1000)) }
    }

    @Test func writesNQuadsAsPyLDDoes() {
        let quad = RDFQuad(
            subject: .blankNode("b0"), predicate: .iri("urn:p"),
            object: .literal("a\"b\\c\nd\te\rf", datatype: JSONLDProcessor.xsdString, language: nil), graph: .iri("urn:g"))
        #expect(quad.nQuad == "_:b0 <urn:p> \"a\\\"b\\\\c\\nd\\te\\rf\" <urn:g> .\n")
        let typed = RDFQuad(subject: .iri("urn:s"), predicate: .iri("urn:p"), object: .literal("5", datatype: JSONLDProcessor.xsdInteger, language: nil))
        #expect(typed.nQuad == "<urn:s> <urn:p> \"5\"^^<http://www.w3.org/2001/XMLSchema#integer> .\n")
        let tagged = RDFQuad(subject: .iri("urn:s"), predicate: .iri("urn:p"), object: .literal("x", datatype: JSONLDProcessor.rdfLangString, language: "en"))
        #expect(tagged.nQuad == "<urn:s> <urn:p> \"x\"@en .\n")
    }
}
