import AerieCore

/// The JSON-LD contexts a document may name by URL: a fixed, pinned set. Nothing is ever
/// fetched; a URL outside the set is `unknown_context`, naming it.
public struct JSONLDContexts: Sendable {
    /// Context documents by URL, parsed.
    public let documents: [String: JSONValue]
    /// What has been processed from these documents, shared by every run that uses this set.
    let cache = ProcessedContextCache()

    /// Contexts from URL to their document (the JSON object with `@context`).
    public init(documents: [String: JSONValue]) {
        self.documents = documents
    }

    /// The contexts bundled with Aerie: credentials v1 and v2, security v1 and v2, ed25519-2020,
    /// did v1, the presentation-exchange submission, status list 2021, and what the interop
    /// harness's credentials name (citizenship v1, credentials examples v1 with ODRL, the BBS+
    /// suite's bbs v1 that its driver's licence names; Aerie verifies no BBS+ proof).
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
    static let all: JSONLDContexts = {
        let sources = [
            credentialsV1, credentialsV2, credentialsExamplesV1, odrl, securityV1, securityV2,
            ed25519Signature2020V1, didV1, statusList2021V1, citizenshipV1, presentationSubmissionV1, bbsV1,
        ]
        var documents: [String: JSONValue] = [:]
        for source in sources {
            // Bundled text checked by the tests; a failure here is a build defect, not input.
            documents[source.url] = try! JSONValue(parsing: source.text)
        }
        return JSONLDContexts(documents: documents)
    }()
}
