import AerieCore

/// JSON-LD 1.1 processing for the documents the credential protocols carry: expansion and
/// conversion to RDF, with contexts only from a `JSONLDContexts` set. (No compaction: the
/// protocols keep documents in the compact form they arrive in.)
///
/// Supported beyond the basics: scoped (type and property) contexts, `@protected`, `@propagate`,
/// `@vocab`, `@type` and `@id` coercion, `@container` `@graph` / `@list` / `@set` / `@language` /
/// `@index` / `@id` / `@type`, `@json`, `@reverse`, `@included`. Refused with `invalid_jsonld`:
/// `@import`, `@nest`, `@direction`, property-valued indexes. Relative IRIs stay relative (there
/// is no document base) and are dropped from RDF, as PyLD does.
public enum JSONLD {
    /// The expanded form (an array of node objects) of a JSON-LD document.
    public static func expand(
        _ document: JSONValue, contexts: JSONLDContexts = .bundled, limits: LinkedDataLimits = .default
    ) throws -> JSONValue {
        .array(try JSONLDProcessor(contexts: contexts, limits: limits).expandDocument(document))
    }

    /// The RDF dataset of a JSON-LD document (JSON-LD 1.1 "Deserialize JSON-LD to RDF").
    public static func toRDF(
        _ document: JSONValue, contexts: JSONLDContexts = .bundled, limits: LinkedDataLimits = .default
    ) throws -> RDFDataset {
        try JSONLDProcessor(contexts: contexts, limits: limits).toRDF(document)
    }
}
