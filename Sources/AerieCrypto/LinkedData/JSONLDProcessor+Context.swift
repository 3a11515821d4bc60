import AerieCore

/// Context processing, term definitions and IRI expansion (JSON-LD 1.1 Processing Algorithms §4).
extension JSONLDProcessor {
    /// Applies `local` (a context, a URL or an array of them) to `active`.
    func process(
        _ active: JSONLDActiveContext, _ local: JSONValue, remoteContexts: [String] = [],
        overrideProtected: Bool = false, propagate: Bool = true, pinned: Bool = false, depth: Int = 0
    ) throws -> JSONLDActiveContext {
        guard depth <= limits.maxDepth else {
            throw CryptoError(.limitExceeded, "JSON-LD contexts nest deeper than \(limits.maxDepth)")
        }
        var propagate = propagate
        if case .object(let fields) = local, let value = fields["@propagate"] {
            guard case .bool(let flag) = value else { throw invalid("invalid @propagate value", value) }
            propagate = flag
        }
        var result = active.copy()
        if !propagate && result.previous == nil { result.previous = active }
        let items: [JSONValue] = if case .array(let items) = local { items } else { [local] }
        for item in items {
            switch item {
            case .null:
                if !overrideProtected && result.hasProtectedTerms {
                    throw invalid("invalid context nullification: the active context has protected terms")
                }
                let fresh = JSONLDActiveContext()
                if !propagate { fresh.previous = result.copy() }
                result = fresh
            case .string(let url):
                result = try applyRemote(
                    url, to: result, remoteContexts: remoteContexts, overrideProtected: overrideProtected,
                    propagate: propagate, depth: depth)
            case .object(let definitions):
                try countContextLoad()
                result = try applyDefinitions(
                    definitions, to: result, remoteContexts: remoteContexts, overrideProtected: overrideProtected,
                    pinned: pinned)
            default:
                throw invalid("invalid local context", item)
            }
        }
        return result
    }

    /// A context named by URL: from the pinned set only, never fetched.
    private func applyRemote(
        _ url: String, to active: JSONLDActiveContext, remoteContexts: [String], overrideProtected: Bool,
        propagate: Bool, depth: Int
    ) throws -> JSONLDActiveContext {
        guard let document = contexts.documents[url] else {
            throw CryptoError(
                .unknownContext, "unknown JSON-LD context \(url.count > 200 ? String(url.prefix(200)) + "…" : url)",
                details: "contexts come only from the pinned set; nothing is fetched")
        }
        guard !remoteContexts.contains(url) else {
            throw invalid("recursive context inclusion of \(url)")
        }
        let key = ContextCacheKey(
            active: ObjectIdentifier(active), applied: url, overrideProtected: overrideProtected, propagate: propagate)
        let shared = contexts.cache.isShared(active)
        if let found = cached(key, shared: shared) { return found }
        try countContextLoad()
        guard let loaded = document["@context"] else {
            throw invalid("context \(url) has no @context")
        }
        let result = try process(
            active, loaded, remoteContexts: remoteContexts + [url], overrideProtected: overrideProtected,
            propagate: propagate, pinned: true, depth: depth + 1)
        return remember(key, applied: active, result, shared: shared)
    }

    private static let contextKeywords: Set<String> = [
        "@base", "@direction", "@import", "@language", "@propagate", "@protected", "@version", "@vocab",
    ]

    private func applyDefinitions(
        _ definitions: [String: JSONValue], to active: JSONLDActiveContext, remoteContexts: [String],
        overrideProtected: Bool, pinned: Bool
    ) throws -> JSONLDActiveContext {
        let result = active.copy()
        if let version = definitions["@version"] {
            guard case .double(let number) = version, number == 1.1 else {
                throw invalid("invalid @version value", version)
            }
        }
        if definitions["@import"] != nil {
            throw invalid("@import in a context is not supported")
        }
        if let base = definitions["@base"], remoteContexts.isEmpty {
            switch base {
            case .null: result.base = nil
            case .string(let iri) where JSONLDIRI.isAbsolute(iri): result.base = iri
            default: throw invalid("invalid base IRI (only absolute ones are supported)", base)
            }
        }
        if let vocab = definitions["@vocab"] {
            switch vocab {
            case .null: result.vocab = nil
            case .string(let iri):
                guard let expanded = try expandIRI(result, iri, vocab: true, documentRelative: true),
                    JSONLDIRI.isAbsolute(expanded) || expanded.isEmpty
                else { throw invalid("invalid vocab mapping", vocab) }
                result.vocab = expanded
            default: throw invalid("invalid vocab mapping", vocab)
            }
        }
        if let language = definitions["@language"] {
            switch language {
            case .null: result.defaultLanguage = nil
            case .string(let tag): result.defaultLanguage = tag.lowercased()
            default: throw invalid("invalid default language", language)
            }
        }
        if let direction = definitions["@direction"], direction != .null {
            throw invalid("@direction is not supported", direction)
        }
        var isProtected = false
        if let flag = definitions["@protected"] {
            guard case .bool(let value) = flag else { throw invalid("invalid @protected value", flag) }
            isProtected = value
        }
        var defined: [String: Bool] = [:]
        for term in definitions.keys.sorted() where !Self.contextKeywords.contains(term) {
            try createTerm(
                result, definitions, term, &defined, protected: isProtected, overrideProtected: overrideProtected,
                pinned: pinned)
        }
        return result
    }

    private static let termKeys: Set<String> = [
        "@id", "@reverse", "@container", "@context", "@direction", "@index", "@language", "@nest", "@prefix",
        "@protected", "@type",
    ]

    /// Create Term Definition (§4.2.2).
    func createTerm(
        _ active: JSONLDActiveContext, _ local: [String: JSONValue], _ term: String, _ defined: inout [String: Bool],
        protected defaultProtected: Bool, overrideProtected: Bool, pinned: Bool
    ) throws {
        if let state = defined[term] {
            if state { return }
            throw invalid("cyclic IRI mapping for term \(term)")
        }
        guard !term.isEmpty else { throw invalid("invalid term definition: empty term") }
        defined[term] = false
        let value = local[term] ?? .null
        if term == "@type" {
            guard case .object(let fields) = value,
                !fields.isEmpty,
                fields.allSatisfy({ ($0.key == "@container" && $0.value == "@set") || $0.key == "@protected" })
            else { throw CryptoError(.invalidJSONLD, "keyword redefinition of @type") }
        } else if JSONLDKeyword.isKeyword(term) {
            throw invalid("keyword redefinition of \(term)")
        } else if JSONLDKeyword.hasKeywordForm(term) {
            defined[term] = true
            return
        }
        let previous = active.terms.removeValue(forKey: term)

        var fields: [String: JSONValue]
        var simpleTerm = false
        switch value {
        case .null: fields = ["@id": .null]
        case .string(let iri):
            fields = ["@id": .string(iri)]
            simpleTerm = true
        case .object(let object): fields = object
        default: throw invalid("invalid term definition for \(term)", value)
        }
        for key in fields.keys where !Self.termKeys.contains(key) {
            throw invalid("invalid term definition for \(term): unknown entry \(key)")
        }
        var definition = JSONLDTermDefinition()
        if let flag = fields["@protected"] {
            guard case .bool(let value) = flag else { throw invalid("invalid @protected value", flag) }
            definition.isProtected = value
        } else {
            definition.isProtected = defaultProtected
        }

        if let type = fields["@type"] {
            guard case .string(let typeText) = type,
                let expanded = try expandIRI(active, typeText, vocab: true, local: local, defined: &defined)
            else { throw invalid("invalid type mapping for \(term)", type) }
            guard ["@id", "@json", "@none", "@vocab"].contains(expanded) || JSONLDIRI.isAbsolute(expanded),
                !JSONLDIRI.isBlankNode(expanded)
            else { throw invalid("invalid type mapping for \(term)", type) }
            definition.typeMapping = expanded
        }

        if let reverse = fields["@reverse"] {
            guard fields["@id"] == nil, fields["@nest"] == nil else {
                throw invalid("invalid reverse property \(term): @reverse with @id or @nest")
            }
            guard case .string(let reverseText) = reverse else { throw invalid("invalid IRI mapping", reverse) }
            if JSONLDKeyword.hasKeywordForm(reverseText) {
                defined[term] = true
                return
            }
            guard let expanded = try expandIRI(active, reverseText, vocab: true, local: local, defined: &defined),
                JSONLDIRI.isAbsolute(expanded)
            else { throw invalid("invalid IRI mapping for \(term)", reverse) }
            definition.iri = expanded
            if let container = fields["@container"] {
                guard container == .null || container == "@set" || container == "@index" else {
                    throw invalid("invalid reverse property \(term)", container)
                }
                if case .string(let name) = container { definition.containers = [name] }
            }
            definition.isReverse = true
            active.terms[term] = definition
            defined[term] = true
            return
        }

        if let id = fields["@id"], id != .string(term) {
            switch id {
            case .null:
                definition.iri = nil
            case .string(let idText):
                if !JSONLDKeyword.isKeyword(idText) && JSONLDKeyword.hasKeywordForm(idText) {
                    defined[term] = true
                    return
                }
                guard let expanded = try expandIRI(active, idText, vocab: true, local: local, defined: &defined),
                    JSONLDKeyword.isKeyword(expanded) || JSONLDIRI.isAbsolute(expanded)
                else { throw invalid("invalid IRI mapping for \(term)", id) }
                guard expanded != "@context" else { throw invalid("invalid keyword alias @context") }
                definition.iri = expanded
                let inner = term.dropFirst().dropLast()
                if inner.contains(":") || term.contains("/") {
                    defined[term] = true
                    let own = try expandIRI(active, term, vocab: true, local: local, defined: &defined)
                    guard own == expanded else {
                        throw invalid("invalid IRI mapping: term \(term) looks like an IRI but maps to \(expanded)")
                    }
                }
                if !term.contains(":") && !term.contains("/") && simpleTerm
                    && (JSONLDIRI.endsWithGenDelim(expanded) || JSONLDIRI.isBlankNode(expanded))
                {
                    definition.isPrefix = true
                }
            default:
                throw invalid("invalid IRI mapping for \(term)", id)
            }
        } else if let colon = term.dropFirst().firstIndex(of: ":") {
            let prefix = String(term[..<colon])
            let suffix = String(term[term.index(after: colon)...])
            if local[prefix] != nil {
                try createTerm(
                    active, local, prefix, &defined, protected: defaultProtected, overrideProtected: overrideProtected,
                    pinned: pinned)
            }
            if let prefixIRI = active.terms[prefix]?.iri {
                definition.iri = prefixIRI + suffix
            } else {
                definition.iri = term
            }
        } else if term.contains("/") {
            guard let expanded = try expandIRI(active, term, vocab: true), JSONLDIRI.isAbsolute(expanded) else {
                throw invalid("invalid IRI mapping for \(term)")
            }
            definition.iri = expanded
        } else if term == "@type" {
            definition.iri = "@type"
        } else if let vocab = active.vocab {
            definition.iri = vocab + term
        } else {
            throw invalid("invalid IRI mapping: term \(term) has no @id and the context no @vocab")
        }

        if let container = fields["@container"] {
            let names: [JSONValue] = if case .array(let items) = container { items } else { [container] }
            var set: Set<String> = []
            for name in names {
                guard case .string(let text) = name,
                    ["@graph", "@id", "@index", "@language", "@list", "@set", "@type"].contains(text)
                else { throw invalid("invalid container mapping for \(term)", container) }
                set.insert(text)
            }
            if set.contains("@list") && set.count > 1 {
                throw invalid("invalid container mapping for \(term)", container)
            }
            definition.containers = set
            if set.contains("@type") {
                if definition.typeMapping == nil { definition.typeMapping = "@id" }
                guard definition.typeMapping == "@id" || definition.typeMapping == "@vocab" else {
                    throw invalid("invalid type mapping for the @type container of \(term)")
                }
            }
        }
        if let index = fields["@index"] {
            guard definition.containers.contains("@index"), case .string(let text) = index,
                !JSONLDKeyword.isKeyword(text)
            else { throw invalid("invalid term definition for \(term): @index", index) }
            definition.index = text
        }
        if let context = fields["@context"] {
            definition.scopedContext = context
            definition.scopedContextID = ScopedContextID.next(pinned: pinned)
        }
        if let language = fields["@language"], fields["@type"] == nil {
            switch language {
            case .null: definition.language = .some(nil)
            case .string(let tag): definition.language = .some(tag.lowercased())
            default: throw invalid("invalid language mapping for \(term)", language)
            }
        }
        if let direction = fields["@direction"], direction != .null {
            throw invalid("@direction is not supported", direction)
        }
        if fields["@nest"] != nil {
            throw invalid("@nest is not supported (term \(term))")
        }
        if let prefix = fields["@prefix"] {
            guard !term.contains(":"), !term.contains("/"), case .bool(let flag) = prefix else {
                throw invalid("invalid @prefix value for \(term)", prefix)
            }
            definition.isPrefix = flag
            if flag, let iri = definition.iri, JSONLDKeyword.isKeyword(iri) {
                throw invalid("invalid term definition: keyword \(iri) as a prefix")
            }
        }
        if !overrideProtected, let previous, previous.isProtected {
            guard previous.sameMeaning(as: definition) else {
                throw invalid("protected term redefinition of \(term)")
            }
            definition = previous
        }
        active.terms[term] = definition
        defined[term] = true
    }

    /// IRI Expansion (§4.4.2) outside context processing.
    func expandIRI(
        _ active: JSONLDActiveContext, _ value: String, vocab: Bool = false, documentRelative: Bool = false
    ) throws -> String? {
        var defined: [String: Bool] = [:]
        return try expandIRI(active, value, vocab: vocab, documentRelative: documentRelative, local: nil, defined: &defined)
    }

    /// IRI Expansion (§4.4.2): nil for a value that expands to nothing (a null mapping, a
    /// keyword-like string).
    func expandIRI(
        _ active: JSONLDActiveContext, _ value: String, vocab: Bool = false, documentRelative: Bool = false,
        local: [String: JSONValue]?, defined: inout [String: Bool]
    ) throws -> String? {
        if JSONLDKeyword.isKeyword(value) { return value }
        if JSONLDKeyword.hasKeywordForm(value) { return nil }
        if let local, local[value] != nil, defined[value] != true {
            try createTerm(active, local, value, &defined, protected: false, overrideProtected: false, pinned: false)
        }
        if let definition = active.terms[value] {
            if let iri = definition.iri, JSONLDKeyword.isKeyword(iri) { return iri }
            if vocab { return definition.iri }
        }
        if let colon = value.dropFirst().firstIndex(of: ":") {
            let prefix = String(value[..<colon])
            let suffix = value[value.index(after: colon)...]
            if prefix == "_" || suffix.hasPrefix("//") { return value }
            if let local, local[prefix] != nil, defined[prefix] != true {
                try createTerm(active, local, prefix, &defined, protected: false, overrideProtected: false, pinned: false)
            }
            if let definition = active.terms[prefix], let iri = definition.iri, definition.isPrefix {
                return iri + suffix
            }
            if JSONLDIRI.isAbsolute(value) { return value }
        }
        if vocab, let base = active.vocab { return base + value }
        if documentRelative, let base = active.base { return Self.resolve(value, against: base) }
        return value
    }

    /// A relative reference against an absolute base, enough for fragments, queries and paths.
    static func resolve(_ reference: String, against base: String) -> String {
        if reference.isEmpty { return base }
        if JSONLDIRI.isAbsolute(reference) { return reference }
        let baseNoFragment = base.split(separator: "#", maxSplits: 1, omittingEmptySubsequences: false)[0]
        if reference.hasPrefix("#") { return baseNoFragment + reference }
        let baseNoQuery = baseNoFragment.split(separator: "?", maxSplits: 1, omittingEmptySubsequences: false)[0]
        if reference.hasPrefix("?") { return baseNoQuery + reference }
        if reference.hasPrefix("/") {
            guard let schemeEnd = baseNoQuery.range(of: "://") else { return reference }
            let afterAuthority = baseNoQuery[schemeEnd.upperBound...].firstIndex(of: "/") ?? baseNoQuery.endIndex
            return baseNoQuery[..<afterAuthority] + reference
        }
        if let slash = baseNoQuery.lastIndex(of: "/") { return baseNoQuery[...slash] + reference }
        return reference
    }
}
