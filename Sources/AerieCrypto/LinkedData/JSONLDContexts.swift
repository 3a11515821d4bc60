import AerieCore

/// The JSON-LD contexts a document may name by URL: a fixed, pinned set. Nothing is ever
/// fetched; a URL outside the set is `unknown_context`, naming it.
public struct JSONLDContexts: Sendable {
    /// Context documents by URL, parsed.
    public let documents: [String: JSONValue]

    /// Contexts from URL to their document (the JSON object with `@context`).
    public init(documents: [String: JSONValue]) {
        self.documents = documents
    }

    /// The contexts bundled with Aerie: credentials v1 and v2, security v1 and v2, ed25519-2020,
    /// did v1, the presentation-exchange submission, and the examples the interop harness's
    /// credentials use.
    public static var bundled: JSONLDContexts { BundledContexts.all }

    /// This set with one more context (tests, or a deployment pinning its own).
    public func adding(url: String, document: JSONValue) -> JSONLDContexts {
        var documents = self.documents
        documents[url] = document
        return JSONLDContexts(documents: documents)
    }

    /// The URLs this set answers.
    public var urls: [String] { documents.keys.sorted() }
}

enum BundledContexts {
    static let all = JSONLDContexts(documents: [:])
}
