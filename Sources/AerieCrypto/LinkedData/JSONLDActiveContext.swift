import AerieCore

/// One term of an active context (JSON-LD 1.1 §4.2).
struct JSONLDTermDefinition {
    /// The IRI or keyword the term expands to; nil for a term mapped to null (which drops it).
    var iri: String?
    var isReverse = false
    var typeMapping: String?
    var containers: Set<String> = []
    /// `.some(nil)`: the term resets the language to none; nil: the default language applies.
    var language: String??
    var scopedContext: JSONValue?
    /// Names `scopedContext` in the processed-context caches (see `ScopedContextID`).
    var scopedContextID: String?
    var isProtected = false
    var isPrefix = false
    var index: String?

    /// The same meaning, whatever `@protected` says (the test of a protected redefinition).
    func sameMeaning(as other: JSONLDTermDefinition) -> Bool {
        iri == other.iri && isReverse == other.isReverse && typeMapping == other.typeMapping
            && containers == other.containers && language == other.language && scopedContext == other.scopedContext
            && isPrefix == other.isPrefix && index == other.index
    }
}

/// An active context (JSON-LD 1.1 §4.1): immutable once made, so processed contexts can be
/// remembered by identity.
final class JSONLDActiveContext: @unchecked Sendable {
    var terms: [String: JSONLDTermDefinition] = [:]
    var vocab: String?
    var base: String?
    var defaultLanguage: String?
    /// The context to return to where a type-scoped context stops propagating.
    var previous: JSONLDActiveContext?

    init() {}

    func copy() -> JSONLDActiveContext {
        let result = JSONLDActiveContext()
        result.terms = terms
        result.vocab = vocab
        result.base = base
        result.defaultLanguage = defaultLanguage
        result.previous = previous
        return result
    }

    var hasProtectedTerms: Bool { terms.values.contains { $0.isProtected } }
}

enum JSONLDKeyword {
    static let all: Set<String> = [
        "@base", "@container", "@context", "@default", "@direction", "@embed", "@explicit", "@graph", "@id",
        "@import", "@included", "@index", "@json", "@language", "@list", "@nest", "@none", "@omitDefault",
        "@prefix", "@preserve", "@propagate", "@protected", "@requireAll", "@reverse", "@set", "@type", "@value",
        "@version", "@vocab",
    ]

    static func isKeyword(_ value: String) -> Bool { value.hasPrefix("@") && all.contains(value) }

    /// `@` followed by ASCII letters only: reserved for future keywords, ignored with a warning.
    static func hasKeywordForm(_ value: String) -> Bool {
        let utf8 = value.utf8
        guard utf8.count > 1, utf8.first == UInt8(ascii: "@") else { return false }
        return utf8.dropFirst().allSatisfy { ($0 >= 0x41 && $0 <= 0x5A) || ($0 >= 0x61 && $0 <= 0x7A) }
    }
}

enum JSONLDIRI {
    /// An absolute IRI or a blank node identifier, as PyLD decides it
    /// (`^([A-Za-z][A-Za-z0-9+-.]*|_):[^\s]*$`).
    static func isAbsolute(_ value: String) -> Bool {
        let utf8 = Array(value.utf8)
        guard let colon = utf8.firstIndex(of: UInt8(ascii: ":")), colon > 0 else { return false }
        let scheme = utf8[0..<colon]
        let schemeOK: Bool
        if scheme.count == 1 && scheme.first == UInt8(ascii: "_") {
            schemeOK = true
        } else {
            schemeOK =
                isLetter(scheme.first!)
                && scheme.dropFirst().allSatisfy { isLetter($0) || ($0 >= 0x30 && $0 <= 0x39) || ($0 >= 0x2B && $0 <= 0x2E) }
        }
        guard schemeOK else { return false }
        return !utf8[(colon + 1)...].contains { $0 == 0x20 || $0 == 0x09 || $0 == 0x0A || $0 == 0x0D || $0 == 0x0C || $0 == 0x0B }
    }

    static func isBlankNode(_ value: String) -> Bool { value.hasPrefix("_:") }

    private static func isLetter(_ byte: UInt8) -> Bool { (byte >= 0x41 && byte <= 0x5A) || (byte >= 0x61 && byte <= 0x7A) }

    /// Ends with a URI gen-delim (`:/?#[]@`): a simple term mapped to it may serve as a prefix.
    static func endsWithGenDelim(_ value: String) -> Bool {
        guard let last = value.utf8.last else { return false }
        return ":/?#[]@".utf8.contains(last)
    }
}
