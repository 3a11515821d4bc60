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
    /// The dataset as N-Quads, one line per quad in the order held, each ending in `\n`.
    public var nQuads: String {
        var out = ""
        for quad in quads { out += quad.nQuad }
        return out
    }
}

extension RDFQuad {
    /// The quad as one N-Quads line, with PyLD's escaping of literals (`\\`, `\t`, `\n`, `\r`, `\"`).
    public var nQuad: String { nQuad(labels: { $0 }) }

    /// The line with blank node labels mapped by `labels`.
    func nQuad(labels: (String) -> String) -> String {
        var line = ""
        line.reserveCapacity(160)
        Self.write(subject, &line, labels)
        line += " "
        Self.write(predicate, &line, labels)
        line += " "
        Self.write(object, &line, labels)
        if let graph {
            line += " "
            Self.write(graph, &line, labels)
        }
        line += " .\n"
        return line
    }

    static func write(_ term: RDFTerm, _ out: inout String, _ labels: (String) -> String) {
        switch term {
        case .iri(let iri):
            out += "<"
            out += iri
            out += ">"
        case .blankNode(let label):
            out += "_:"
            out += labels(label)
        case .literal(let value, let datatype, let language):
            out += "\""
            for scalar in value.unicodeScalars {
                switch scalar {
                case "\\": out += "\\\\"
                case "\t": out += "\\t"
                case "\n": out += "\\n"
                case "\r": out += "\\r"
                case "\"": out += "\\\""
                default: out.unicodeScalars.append(scalar)
                }
            }
            out += "\""
            if datatype == JSONLDProcessor.rdfLangString {
                if let language {
                    out += "@"
                    out += language
                }
            } else if datatype != JSONLDProcessor.xsdString {
                out += "^^<"
                out += datatype
                out += ">"
            }
        }
    }
}
