/// Bounds on the work one JSON-LD document may cause, all enforced before or while the work is
/// done: exceeding any is `limit_exceeded`, never a stall.
public struct LinkedDataLimits: Sendable, Hashable {
    /// Nesting depth of JSON objects and arrays, and of scoped contexts within them.
    public var maxDepth: Int
    /// JSON values in the input document (object members and array items each count).
    public var maxValues: Int
    /// Nodes (subjects, blank or named) and quads the document may produce.
    public var maxNodes: Int
    /// Contexts (remote by URL, inline or scoped) processed while reading one document.
    public var maxContextLoads: Int
    /// Blank-node work of canonicalization: hash-N-degree-quads calls and permutations tried,
    /// the guard against poison graphs.
    public var maxCanonicalizationWork: Int

    public init(maxDepth: Int, maxValues: Int, maxNodes: Int, maxContextLoads: Int, maxCanonicalizationWork: Int) {
        self.maxDepth = maxDepth
        self.maxValues = maxValues
        self.maxNodes = maxNodes
        self.maxContextLoads = maxContextLoads
        self.maxCanonicalizationWork = maxCanonicalizationWork
    }

    /// Generous for a credential or a presentation of a few dozen credentials.
    public static let `default` = LinkedDataLimits(
        maxDepth: 32, maxValues: 100_000, maxNodes: 10_000, maxContextLoads: 1_000, maxCanonicalizationWork: 10_000)
}
