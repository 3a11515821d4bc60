/// RDF Dataset Canonicalization (URDNA2015, which RDFC-1.0 standardised with the same output).
public enum RDFCanonicalization {
    /// The canonical N-Quads of a dataset: blank nodes relabelled `_:c14n0`, `_:c14n1`… and lines
    /// sorted. Blank-node work is bounded by `limits.maxCanonicalizationWork` (poison graphs
    /// fail with `limit_exceeded` instead of running for hours).
    public static func urdna2015(_ dataset: RDFDataset, limits: LinkedDataLimits = .default) throws -> String {
        var state = URDNA2015(dataset, maxWork: limits.maxCanonicalizationWork)
        return try state.run()
    }
}

/// Issues identifiers in order (`_:c14n0`… or `_:b0`…), remembering what it issued.
private struct IdentifierIssuer {
    let prefix: String
    var counter = 0
    var issued: [String: String] = [:]
    var order: [String] = []

    init(prefix: String) { self.prefix = prefix }

    mutating func id(for existing: String) -> String {
        if let id = issued[existing] { return id }
        let id = prefix + String(counter)
        counter += 1
        issued[existing] = id
        order.append(existing)
        return id
    }

    func has(_ existing: String) -> Bool { issued[existing] != nil }
}

private struct URDNA2015 {
    let quads: [RDFQuad]
    let maxWork: Int
    var work = 0
    /// Quads by each blank node they mention.
    var quadsByBlankNode: [String: [Int]] = [:]
    var firstDegreeHashes: [String: String] = [:]
    var canonical = IdentifierIssuer(prefix: "c14n")

    init(_ dataset: RDFDataset, maxWork: Int) {
        quads = dataset.quads
        self.maxWork = maxWork
        for (index, quad) in quads.enumerated() {
            for term in [quad.subject, quad.object, quad.graph] {
                if case .blankNode(let label)? = term {
                    if quadsByBlankNode[label]?.last != index { quadsByBlankNode[label, default: []].append(index) }
                }
            }
        }
    }

    mutating func run() throws -> String {
        var byHash: [String: [String]] = [:]
        for label in quadsByBlankNode.keys.sorted() {
            byHash[firstDegreeHash(label), default: []].append(label)
        }
        var shared: [(String, [String])] = []
        for hash in byHash.keys.sorted() {
            let labels = byHash[hash]!
            if labels.count == 1 {
                _ = canonical.id(for: labels[0])
            } else {
                shared.append((hash, labels))
            }
        }
        for (_, labels) in shared {
            var results: [(hash: String, issuer: IdentifierIssuer)] = []
            for label in labels where !canonical.has(label) {
                var temporary = IdentifierIssuer(prefix: "b")
                _ = temporary.id(for: label)
                results.append(try nDegreeHash(label, temporary))
            }
            for result in results.sorted(by: { $0.hash < $1.hash }) {
                for existing in result.issuer.order { _ = canonical.id(for: existing) }
            }
        }
        let issued = canonical.issued
        let lines = quads.map { $0.nQuad(labels: { issued[$0] ?? $0 }) }
        return Set(lines).sorted(by: { $0.utf8.lexicographicallyPrecedes($1.utf8) }).joined()
    }

    private mutating func spend() throws {
        work += 1
        guard work <= maxWork else {
            throw CryptoError(
                .limitExceeded,
                "RDF canonicalization needs more than \(maxWork) steps of blank-node work (a poison graph?)")
        }
    }

    private mutating func firstDegreeHash(_ label: String) -> String {
        if let hash = firstDegreeHashes[label] { return hash }
        let lines = quadsByBlankNode[label, default: []].map { quads[$0].nQuad(labels: { $0 == label ? "a" : "z" }) }
        let hash = Self.sha256Hex(lines.sorted(by: { $0.utf8.lexicographicallyPrecedes($1.utf8) }).joined())
        firstDegreeHashes[label] = hash
        return hash
    }

    private mutating func relatedHash(_ related: String, _ quad: RDFQuad, _ issuer: IdentifierIssuer, _ position: String) -> String {
        var input = position
        if position != "g", case .iri(let predicate) = quad.predicate { input += "<" + predicate + ">" }
        if let id = canonical.issued[related] {
            input += "_:" + id
        } else if let id = issuer.issued[related] {
            input += "_:" + id
        } else {
            input += firstDegreeHash(related)
        }
        return Self.sha256Hex(input)
    }

    private mutating func nDegreeHash(_ label: String, _ issuerIn: IdentifierIssuer) throws -> (hash: String, issuer: IdentifierIssuer) {
        try spend()
        var issuer = issuerIn
        var relatedByHash: [String: [String]] = [:]
        for index in quadsByBlankNode[label, default: []] {
            let quad = quads[index]
            for (term, position) in [(quad.subject, "s"), (quad.object, "o"), (quad.graph, "g")] {
                if case .blankNode(let related)? = term, related != label {
                    relatedByHash[relatedHash(related, quad, issuer, position), default: []].append(related)
                }
            }
        }
        var data = ""
        for hash in relatedByHash.keys.sorted() {
            data += hash
            var chosenPath = ""
            var chosenIssuer: IdentifierIssuer?
            var permutation = relatedByHash[hash]!.sorted()
            repeat {
                try spend()
                var issuerCopy = issuer
                var path = ""
                var recursion: [String] = []
                var skip = false
                for related in permutation {
                    if let id = canonical.issued[related] {
                        path += "_:" + id
                    } else {
                        if !issuerCopy.has(related) { recursion.append(related) }
                        path += "_:" + issuerCopy.id(for: related)
                    }
                    if !chosenPath.isEmpty && path.utf8.count >= chosenPath.utf8.count && path > chosenPath {
                        skip = true
                        break
                    }
                }
                if !skip {
                    for related in recursion {
                        let result = try nDegreeHash(related, issuerCopy)
                        path += "_:" + issuerCopy.id(for: related)
                        path += "<" + result.hash + ">"
                        issuerCopy = result.issuer
                        if !chosenPath.isEmpty && path.utf8.count >= chosenPath.utf8.count && path > chosenPath {
                            skip = true
                            break
                        }
                    }
                }
                if !skip && (chosenPath.isEmpty || path < chosenPath) {
                    chosenPath = path
                    chosenIssuer = issuerCopy
                }
            } while Self.nextPermutation(&permutation)
            data += chosenPath
            if let chosenIssuer { issuer = chosenIssuer }
        }
        return (Self.sha256Hex(data), issuer)
    }

    /// The next permutation in lexicographic order; false after the last.
    private static func nextPermutation(_ items: inout [String]) -> Bool {
        guard items.count > 1 else { return false }
        var i = items.count - 2
        while i >= 0 && items[i] >= items[i + 1] { i -= 1 }
        guard i >= 0 else { return false }
        var j = items.count - 1
        while items[j] <= items[i] { j -= 1 }
        items.swapAt(i, j)
        items[(i + 1)...].reverse()
        return true
    }

    private static func sha256Hex(_ text: String) -> String {
        Hex.encode(SHA256.hash(Array(text.utf8)))
    }
}
