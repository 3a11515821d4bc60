import AerieCore
import Foundation

/// Node map generation (§7.2) and deserialization to RDF (§8.1), as PyLD 2.0.4 writes literals.
extension JSONLDProcessor {
    static let rdfType = "http://www.w3.org/1999/02/22-rdf-syntax-ns#type"
    static let rdfFirst = "http://www.w3.org/1999/02/22-rdf-syntax-ns#first"
    static let rdfRest = "http://www.w3.org/1999/02/22-rdf-syntax-ns#rest"
    static let rdfNil = "http://www.w3.org/1999/02/22-rdf-syntax-ns#nil"
    static let rdfLangString = "http://www.w3.org/1999/02/22-rdf-syntax-ns#langString"
    static let rdfJSON = "http://www.w3.org/1999/02/22-rdf-syntax-ns#JSON"
    static let xsdString = "http://www.w3.org/2001/XMLSchema#string"
    static let xsdBoolean = "http://www.w3.org/2001/XMLSchema#boolean"
    static let xsdInteger = "http://www.w3.org/2001/XMLSchema#integer"
    static let xsdDouble = "http://www.w3.org/2001/XMLSchema#double"

    func toRDF(_ document: JSONValue) throws -> RDFDataset {
        try toRDF(expanded: try expandDocument(document))
    }

    func toRDF(expanded: [JSONValue]) throws -> RDFDataset {
        var map = NodeMap(maxNodes: limits.maxNodes)
        try map.add(.array(expanded), graph: "@default", subject: nil, property: nil, list: nil, processor: self)
        var quads: [RDFQuad] = []
        for graphName in map.graphs.keys.sorted() {
            let graphTerm: RDFTerm?
            if graphName == "@default" {
                graphTerm = nil
            } else if JSONLDIRI.isBlankNode(graphName) {
                graphTerm = .blankNode(String(graphName.dropFirst(2)))
            } else if JSONLDIRI.isAbsolute(graphName) {
                graphTerm = .iri(graphName)
            } else {
                continue
            }
            let graph = map.graphs[graphName]!
            for subjectID in graph.keys.sorted() {
                guard let subject = Self.node(subjectID) else { continue }
                let node = graph[subjectID]!
                for property in node.keys.sorted() {
                    let values = node[property]!
                    if property == "@type" {
                        for case .string(let type) in values {
                            guard let object = Self.node(type) else { continue }
                            quads.append(RDFQuad(subject: subject, predicate: .iri(Self.rdfType), object: object, graph: graphTerm))
                        }
                        continue
                    }
                    if JSONLDKeyword.isKeyword(property) || JSONLDIRI.isBlankNode(property) { continue }
                    guard JSONLDIRI.isAbsolute(property) else { continue }
                    for item in values {
                        var listQuads: [(RDFTerm, String, RDFTerm)] = []
                        guard let object = try objectToRDF(item, &listQuads, &map) else { continue }
                        quads.append(RDFQuad(subject: subject, predicate: .iri(property), object: object, graph: graphTerm))
                        for (s, p, o) in listQuads {
                            quads.append(RDFQuad(subject: s, predicate: .iri(p), object: o, graph: graphTerm))
                        }
                    }
                    guard quads.count <= limits.maxNodes * 10 else {
                        throw CryptoError(.limitExceeded, "JSON-LD document makes more than \(limits.maxNodes * 10) quads")
                    }
                }
            }
        }
        return RDFDataset(quads: quads)
    }

    /// A subject or object naming a node; nil for a relative IRI (which RDF cannot hold).
    private static func node(_ id: String) -> RDFTerm? {
        if JSONLDIRI.isBlankNode(id) { return .blankNode(String(id.dropFirst(2))) }
        return JSONLDIRI.isAbsolute(id) ? .iri(id) : nil
    }

    private func objectToRDF(
        _ item: JSONValue, _ listQuads: inout [(RDFTerm, String, RDFTerm)], _ map: inout NodeMap
    ) throws -> RDFTerm? {
        if let id = item["@id"], item["@value"] == nil {
            guard case .string(let text) = id else { return nil }
            return Self.node(text)
        }
        if let list = item["@list"] {
            return try listToRDF(asList(list), &listQuads, &map)
        }
        guard let value = item["@value"] else { return nil }
        var datatype = item["@type"]?.stringValue
        let language = item["@language"]?.stringValue
        if let datatype, datatype != "@json", !JSONLDIRI.isAbsolute(datatype) { return nil }
        let lexical: String
        switch value {
        case _ where datatype == "@json":
            lexical = String(decoding: Self.canonicalJSON(value), as: UTF8.self)
            datatype = Self.rdfJSON
        case .bool(let flag):
            lexical = flag ? "true" : "false"
            datatype = datatype ?? Self.xsdBoolean
        case .double(let number):
            lexical = Self.canonicalDouble(number)
            datatype = datatype ?? Self.xsdDouble
        case .int(let number):
            if datatype == Self.xsdDouble {
                lexical = Self.canonicalDouble(Double(number))
            } else {
                lexical = String(number)
            }
            datatype = datatype ?? Self.xsdInteger
        case .string(let text):
            lexical = text
            datatype = datatype ?? (language != nil ? Self.rdfLangString : Self.xsdString)
        default:
            return nil
        }
        return .literal(lexical, datatype: datatype!, language: datatype == Self.rdfLangString ? language : nil)
    }

    private func listToRDF(
        _ items: [JSONValue], _ listQuads: inout [(RDFTerm, String, RDFTerm)], _ map: inout NodeMap
    ) throws -> RDFTerm {
        guard !items.isEmpty else { return .iri(Self.rdfNil) }
        let nodes = try items.map { _ in RDFTerm.blankNode(String(try map.newBlankNode().dropFirst(2))) }
        for (index, item) in items.enumerated() {
            let subject = nodes[index]
            if let object = try objectToRDF(item, &listQuads, &map) {
                listQuads.append((subject, Self.rdfFirst, object))
            }
            listQuads.append((subject, Self.rdfRest, index + 1 < nodes.count ? nodes[index + 1] : .iri(Self.rdfNil)))
        }
        return nodes[0]
    }

    /// `'%1.15E'` with PyLD's clean-up of the exponent (`1.1E0`, `1.0E21`).
    static func canonicalDouble(_ value: Double) -> String {
        let text = String(format: "%1.15E", value)
        // re.sub(r'(\d)0*E\+?0*(\d)', r'\1E\2', text)
        guard let e = text.firstIndex(of: "E") else { return text }
        var mantissa = text[..<e]
        var exponent = text[text.index(after: e)...]
        let positive = exponent.first == "+"
        if positive { exponent = exponent.dropFirst() }
        guard positive || exponent.first?.isNumber == true else { return text }
        while mantissa.count > 1, mantissa.last == "0", mantissa.dropLast().last?.isNumber == true { mantissa = mantissa.dropLast() }
        while exponent.count > 1, exponent.first == "0" { exponent = exponent.dropFirst() }
        return mantissa + "E" + exponent
    }

    /// JSON Canonicalization (RFC 8785) of an `@json` literal: members sorted, no whitespace.
    static func canonicalJSON(_ value: JSONValue) -> [UInt8] {
        var out: [UInt8] = []
        func write(_ value: JSONValue) {
            switch value {
            case .object(let fields):
                out.append(UInt8(ascii: "{"))
                let keys = fields.keys.sorted { Array($0.utf16).lexicographicallyPrecedes(Array($1.utf16)) }
                for (index, key) in keys.enumerated() {
                    if index > 0 { out.append(UInt8(ascii: ",")) }
                    JSONValue.string(key).write(into: &out)
                    out.append(UInt8(ascii: ":"))
                    write(fields[key]!)
                }
                out.append(UInt8(ascii: "}"))
            case .array(let items):
                out.append(UInt8(ascii: "["))
                for (index, item) in items.enumerated() {
                    if index > 0 { out.append(UInt8(ascii: ",")) }
                    write(item)
                }
                out.append(UInt8(ascii: "]"))
            default:
                value.write(into: &out)
            }
        }
        write(value)
        return out
    }
}

/// The node map of §7.2: graphs of nodes by id, blank nodes relabelled `_:b0`, `_:b1`…
struct NodeMap {
    /// Graph name → node id → property → values (`@id` and `@index` hold one).
    var graphs: [String: [String: [String: [JSONValue]]]] = [:]
    private var labels: [String: String] = [:]
    private var seen: [String: Set<JSONValue>] = [:]
    private var counter = 0
    private var nodes = 0
    let maxNodes: Int

    init(maxNodes: Int) { self.maxNodes = maxNodes }

    mutating func newBlankNode() throws -> String {
        counter += 1
        guard counter <= maxNodes else {
            throw CryptoError(.limitExceeded, "JSON-LD document makes more than \(maxNodes) blank nodes")
        }
        return "_:b\(counter - 1)"
    }

    mutating func relabel(_ id: String) throws -> String {
        if let label = labels[id] { return label }
        let label = try newBlankNode()
        labels[id] = label
        return label
    }

    /// The items of the list being collected.
    final class ListItems {
        var items: [JSONValue] = []
    }

    enum Subject {
        case id(String)
        /// The node a reverse property points from.
        case reverse(String)
    }

    /// Appends `value` to `property` of `subject` in `graph`, once unless `duplicates`.
    private mutating func append(_ value: JSONValue, graph: String, subject: String, property: String, duplicates: Bool = false) {
        if !duplicates {
            // A set beside each value list: a property with many values stays linear.
            guard seen[graph + "\u{0}" + subject + "\u{0}" + property, default: []].insert(value).inserted else { return }
        }
        graphs[graph, default: [:]][subject, default: ["@id": [.string(subject)]]][property, default: []].append(value)
    }

    mutating func add(
        _ element: JSONValue, graph: String, subject: Subject?, property: String?, list: ListItems?,
        processor: JSONLDProcessor
    ) throws {
        switch element {
        case .array(let items):
            for item in items {
                try add(item, graph: graph, subject: subject, property: property, list: list, processor: processor)
            }
            return
        case .object(var fields):
            if graphs[graph] == nil { graphs[graph] = [:] }
            if let types = fields["@type"], fields["@value"] == nil {
                fields["@type"] = .array(try processor.asList(types).map { type in
                    if case .string(let text) = type, JSONLDIRI.isBlankNode(text) { return .string(try relabel(text)) }
                    return type
                })
            }
            if fields["@value"] != nil {
                if let list {
                    list.items.append(element)
                } else if case .id(let id)? = subject, let property {
                    append(.object(fields), graph: graph, subject: id, property: property)
                }
                return
            }
            if let items = fields["@list"] {
                let collected = ListItems()
                try add(items, graph: graph, subject: subject, property: property, list: collected, processor: processor)
                let result: JSONValue = .object(["@list": .array(collected.items)])
                if let list {
                    list.items.append(result)
                } else if case .id(let id)? = subject, let property {
                    append(result, graph: graph, subject: id, property: property, duplicates: true)
                }
                return
            }
            var id: String
            if case .string(let given)? = fields["@id"] {
                id = JSONLDIRI.isBlankNode(given) ? try relabel(given) : given
            } else {
                id = try newBlankNode()
            }
            if graphs[graph]![id] == nil {
                nodes += 1
                guard nodes <= maxNodes else {
                    throw CryptoError(.limitExceeded, "JSON-LD document makes more than \(maxNodes) nodes")
                }
                graphs[graph]![id] = ["@id": [.string(id)]]
            }
            if case .reverse(let from)? = subject, let property {
                append(.object(["@id": .string(from)]), graph: graph, subject: id, property: property)
            } else if let property {
                let reference: JSONValue = .object(["@id": .string(id)])
                if let list {
                    list.items.append(reference)
                } else if case .id(let from)? = subject {
                    append(reference, graph: graph, subject: from, property: property)
                }
            }
            if case .array(let types)? = fields["@type"] {
                for type in types { append(type, graph: graph, subject: id, property: "@type") }
            }
            if let index = fields["@index"] {
                if let existing = graphs[graph]![id]!["@index"], existing != [index] {
                    throw processor.invalid("conflicting indexes for \(id)")
                }
                graphs[graph]![id]!["@index"] = [index]
            }
            if case .object(let reverse)? = fields["@reverse"] {
                for name in reverse.keys.sorted() {
                    for item in processor.asList(reverse[name]!) {
                        try add(item, graph: graph, subject: .reverse(id), property: name, list: nil, processor: processor)
                    }
                }
            }
            if let inner = fields["@graph"] {
                try add(inner, graph: id, subject: nil, property: nil, list: nil, processor: processor)
            }
            if let included = fields["@included"] {
                try add(included, graph: graph, subject: nil, property: nil, list: nil, processor: processor)
            }
            for name in fields.keys.sorted()
            where !["@id", "@type", "@index", "@reverse", "@graph", "@included"].contains(name) {
                let propertyName = JSONLDIRI.isBlankNode(name) ? try relabel(name) : name
                if graphs[graph]![id]![propertyName] == nil { graphs[graph]![id]![propertyName] = [] }
                try add(fields[name]!, graph: graph, subject: .id(id), property: propertyName, list: nil, processor: processor)
            }
        default:
            return
        }
    }
}
