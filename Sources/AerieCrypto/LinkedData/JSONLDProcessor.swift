import AerieCore
import Synchronization

/// One run of JSON-LD processing over one document: the pinned contexts, the limits and what has
/// been spent of them.
final class JSONLDProcessor {
    let contexts: JSONLDContexts
    let limits: LinkedDataLimits
    private(set) var contextLoads = 0
    /// Keys that expanded to nothing (no term, no IRI): data a signature would not cover.
    var droppedProperties: [String] = []
    /// Contexts made during this run, by (the context they were applied to, what was applied),
    /// kept alive so their identities stay unique.
    private var localCache: [ContextCacheKey: JSONLDActiveContext] = [:]
    private var made: [JSONLDActiveContext] = []

    init(contexts: JSONLDContexts, limits: LinkedDataLimits) {
        self.contexts = contexts
        self.limits = limits
    }

    /// The empty context every document starts from (shared, so what is processed on it can be
    /// remembered across documents).
    var initialContext: JSONLDActiveContext { contexts.cache.initial }

    func countContextLoad() throws {
        contextLoads += 1
        guard contextLoads <= limits.maxContextLoads else {
            throw CryptoError(
                .limitExceeded, "JSON-LD document processes more than \(limits.maxContextLoads) contexts")
        }
    }

    /// The result of applying a context, from this run's cache or the shared one.
    func cached(_ key: ContextCacheKey, shared: Bool) -> JSONLDActiveContext? {
        if let found = localCache[key] { return found }
        if shared, let found = contexts.cache.lookup(key) { return found }
        return nil
    }

    /// Remembers `result` for `key`, answering the instance to use (another run's, when it stored
    /// the same first).
    func remember(
        _ key: ContextCacheKey, applied active: JSONLDActiveContext, _ result: JSONLDActiveContext, shared: Bool
    ) -> JSONLDActiveContext {
        if shared, let kept = contexts.cache.store(key, result) { return kept }
        localCache[key] = result
        // The key names `active` by identity: it must outlive the entry.
        made.append(active)
        made.append(result)
        return result
    }

    func invalid(_ message: String, _ value: JSONValue? = nil) -> CryptoError {
        var text = message
        if let value {
            let json = value.jsonString
            text += ": " + (json.count > 120 ? String(json.prefix(120)) + "…" : json)
        }
        return CryptoError(.invalidJSONLD, text)
    }
}

/// What a processed context is remembered by: the active context it was applied to, and the
/// context applied (a URL, or the id of a term's scoped context), with the options that change the
/// result.
struct ContextCacheKey: Hashable {
    let active: ObjectIdentifier
    let applied: String
    let overrideProtected: Bool
    let propagate: Bool
}

/// Contexts processed from the pinned set, shared by every run: a bounded map, whose entries (and
/// the contexts they are keyed on) live as long as the set.
final class ProcessedContextCache: Sendable {
    static let capacity = 512
    let initial = JSONLDActiveContext()

    private struct State {
        var entries: [ContextCacheKey: JSONLDActiveContext] = [:]
        var kept: Set<ObjectIdentifier> = []
    }
    private let state: Mutex<State>

    init() {
        var state = State()
        state.kept.insert(ObjectIdentifier(initial))
        self.state = Mutex(state)
    }

    /// True when `context` is kept alive by this cache (so results built on it may be shared).
    func isShared(_ context: JSONLDActiveContext) -> Bool {
        state.withLock { $0.kept.contains(ObjectIdentifier(context)) }
    }

    func lookup(_ key: ContextCacheKey) -> JSONLDActiveContext? {
        state.withLock { $0.entries[key] }
    }

    /// The context kept for `key`: `result`, or the one another run stored first; nil when full.
    func store(_ key: ContextCacheKey, _ result: JSONLDActiveContext) -> JSONLDActiveContext? {
        state.withLock { state in
            if let existing = state.entries[key] { return existing }
            guard state.entries.count < Self.capacity else { return nil }
            state.entries[key] = result
            state.kept.insert(ObjectIdentifier(result))
            return result
        }
    }
}

/// Ids for scoped contexts, so a term's context is remembered by its definition, not its text.
/// Those of pinned contexts may be shared across runs; those of a document's own contexts not.
enum ScopedContextID {
    private static let counter = Atomic<Int>(0)
    static func next(pinned: Bool) -> String {
        (pinned ? "#pinned-" : "#local-") + String(counter.add(1, ordering: .relaxed).newValue)
    }
    static func isPinned(_ id: String) -> Bool { id.hasPrefix("#pinned-") }
}
