import AerieCore

/// Expansion (JSON-LD 1.1 Processing Algorithms §5).
extension JSONLDProcessor {
    /// The expanded document: an array of node objects.
    func expandDocument(_ document: JSONValue) throws -> [JSONValue] {
        try checkSize(document)
        var expanded = try expand(initialContext, nil, document, depth: 0)
        if case .object(let fields)? = expanded, fields.count == 1, let graph = fields["@graph"] {
            expanded = graph
        }
        switch expanded {
        case nil: return []
        case .array(let items)?: return items
        case let value?: return [value]
        }
    }

    /// Refuses a document over `maxValues` values or `maxDepth` levels before any work on it.
    private func checkSize(_ document: JSONValue) throws {
        var count = 0
        func walk(_ value: JSONValue, _ depth: Int) throws {
            count += 1
            guard count <= limits.maxValues else {
                throw CryptoError(.limitExceeded, "JSON-LD document holds more than \(limits.maxValues) values")
            }
            guard depth <= limits.maxDepth else {
                throw CryptoError(.limitExceeded, "JSON-LD document nests deeper than \(limits.maxDepth)")
            }
            switch value {
            case .array(let items): for item in items { try walk(item, depth + 1) }
            case .object(let fields): for item in fields.values { try walk(item, depth + 1) }
            default: break
            }
        }
        try walk(document, 0)
    }

    /// A scoped context applied, remembered by the term definition it comes from.
    private func applyScoped(
        _ active: JSONLDActiveContext, _ definition: JSONLDTermDefinition, overrideProtected: Bool, propagate: Bool,
        depth: Int
    ) throws -> JSONLDActiveContext {
        guard let context = definition.scopedContext else { return active }
        guard let id = definition.scopedContextID else {
            return try process(active, context, overrideProtected: overrideProtected, propagate: propagate, depth: depth)
        }
        let key = ContextCacheKey(
            active: ObjectIdentifier(active), applied: id, overrideProtected: overrideProtected, propagate: propagate)
        let shared = ScopedContextID.isPinned(id) && contexts.cache.isShared(active)
        if let found = cached(key, shared: shared) { return found }
        let result = try process(
            active, context, overrideProtected: overrideProtected, propagate: propagate,
            pinned: ScopedContextID.isPinned(id), depth: depth)
        return remember(key, applied: active, result, shared: shared)
    }

    /// Expansion Algorithm (§5.1.2); nil for null.
    func expand(
        _ activeIn: JSONLDActiveContext, _ activeProperty: String?, _ element: JSONValue, fromMap: Bool = false,
        depth: Int
    ) throws -> JSONValue? {
        guard depth <= limits.maxDepth else {
            throw CryptoError(.limitExceeded, "JSON-LD document nests deeper than \(limits.maxDepth)")
        }
        var active = activeIn
        let propertyDefinition = activeProperty.flatMap { activeIn.terms[$0] }
        switch element {
        case .null:
            return nil
        case .array(let items):
            var result: [JSONValue] = []
            for item in items {
                guard var expanded = try expand(active, activeProperty, item, fromMap: fromMap, depth: depth + 1) else {
                    continue
                }
                if propertyDefinition?.containers.contains("@list") == true, case .array = expanded {
                    expanded = .object(["@list": expanded])
                }
                if case .array(let inner) = expanded { result.append(contentsOf: inner) } else { result.append(expanded) }
            }
            return .array(result)
        case .object(let fields):
            return try expandObject(active: &active, activeProperty, fields, propertyDefinition, fromMap: fromMap, depth: depth)
        default:
            if activeProperty == nil || activeProperty == "@graph" { return nil }
            if let propertyDefinition, propertyDefinition.scopedContext != nil {
                active = try applyScoped(
                    active, propertyDefinition, overrideProtected: true, propagate: true, depth: depth)
            }
            return try expandValue(active, activeProperty, element)
        }
    }

    private func expandObject(
        active: inout JSONLDActiveContext, _ activeProperty: String?, _ element: [String: JSONValue],
        _ propertyDefinition: JSONLDTermDefinition?, fromMap: Bool, depth: Int
    ) throws -> JSONValue? {
        if let previous = active.previous, !fromMap {
            var keep = false
            for key in element.keys {
                let expanded = try expandIRI(active, key, vocab: true)
                if expanded == "@value" { keep = true }
            }
            if element.count == 1, let key = element.keys.first, try expandIRI(active, key, vocab: true) == "@id" {
                keep = true
            }
            if !keep { active = previous }
        }
        if let propertyDefinition, propertyDefinition.scopedContext != nil {
            active = try applyScoped(active, propertyDefinition, overrideProtected: true, propagate: true, depth: depth)
        }
        if let context = element["@context"] {
            active = try process(active, context, depth: depth)
        }
        let typeScoped = active
        let sortedKeys = element.keys.sorted()
        var inputType: String?
        for key in sortedKeys where try expandIRI(active, key, vocab: true) == "@type" {
            let values: [JSONValue] = if case .array(let items) = element[key]! { items } else { [element[key]!] }
            for case .string(let type) in values.sorted(by: { ($0.stringValue ?? "") < ($1.stringValue ?? "") }) {
                if let definition = typeScoped.terms[type], definition.scopedContext != nil {
                    active = try applyScoped(active, definition, overrideProtected: false, propagate: false, depth: depth)
                }
            }
            if case .string(let last)? = values.last {
                inputType = try expandIRI(active, last, vocab: true)
            }
        }

        var result: [String: JSONValue] = [:]
        var reverseMap: [String: [JSONValue]] = [:]
        for key in sortedKeys where key != "@context" {
            let value = element[key]!
            guard let property = try expandIRI(active, key, vocab: true),
                property.contains(":") || JSONLDKeyword.isKeyword(property)
            else {
                if droppedProperties.count < 20 { droppedProperties.append(key) }
                continue
            }
            if JSONLDKeyword.isKeyword(property) {
                if activeProperty == "@reverse" { throw invalid("invalid reverse property map: keyword \(key)") }
                if result[property] != nil && property != "@included" && property != "@type" {
                    throw invalid("colliding keywords: \(property)")
                }
                var expandedValue: JSONValue?
                switch property {
                case "@id":
                    guard case .string(let id) = value else { throw invalid("invalid @id value", value) }
                    expandedValue = try expandIRI(active, id, documentRelative: true).map { .string($0) } ?? .null
                case "@type":
                    let items: [JSONValue] = if case .array(let items) = value { items } else { [value] }
                    var types: [JSONValue] = []
                    for item in items {
                        guard case .string(let type) = item else { throw invalid("invalid type value", value) }
                        if let iri = try expandIRI(typeScoped, type, vocab: true, documentRelative: true) {
                            types.append(.string(iri))
                        }
                    }
                    if case .array(let existing)? = result["@type"] {
                        types = existing + types
                    } else if let existing = result["@type"] {
                        types = [existing] + types
                    }
                    if case .array = value {
                        expandedValue = .array(types)
                    } else {
                        expandedValue = types.count == 1 ? types[0] : .array(types)
                    }
                case "@graph":
                    let graph = try expand(active, "@graph", value, depth: depth + 1)
                    expandedValue = asArray(graph)
                case "@included":
                    let included = asArray(try expand(active, nil, value, depth: depth + 1))
                    guard case .array(let nodes) = included,
                        nodes.allSatisfy({ $0["@value"] == nil && $0["@list"] == nil && $0["@set"] == nil })
                    else { throw invalid("invalid @included value", value) }
                    if case .array(let existing)? = result["@included"] {
                        expandedValue = .array(existing + nodes)
                    } else {
                        expandedValue = included
                    }
                case "@value":
                    if inputType == "@json" {
                        expandedValue = value
                    } else {
                        switch value {
                        case .null:
                            result["@value"] = .null
                            continue
                        case .array, .object: throw invalid("invalid value object value", value)
                        default: expandedValue = value
                        }
                    }
                case "@language":
                    guard case .string(let tag) = value else { throw invalid("invalid language-tagged string", value) }
                    expandedValue = .string(tag.lowercased())
                case "@direction":
                    throw invalid("@direction is not supported", value)
                case "@index":
                    guard case .string = value else { throw invalid("invalid @index value", value) }
                    expandedValue = value
                case "@list":
                    if activeProperty == nil || activeProperty == "@graph" { continue }
                    expandedValue = asArray(try expand(active, activeProperty, value, depth: depth + 1))
                case "@set":
                    expandedValue = try expand(active, activeProperty, value, depth: depth + 1)
                case "@reverse":
                    guard case .object = value else { throw invalid("invalid @reverse value", value) }
                    guard case .object(let reversed)? = try expand(active, "@reverse", value, depth: depth + 1) else {
                        continue
                    }
                    if case .object(let doubleReversed)? = reversed["@reverse"] {
                        for (name, items) in doubleReversed {
                            result[name] = .array((result[name].map(asList) ?? []) + asList(items))
                        }
                    }
                    for (name, items) in reversed where name != "@reverse" {
                        for item in asList(items) {
                            if item["@value"] != nil || item["@list"] != nil {
                                throw invalid("invalid reverse property value", item)
                            }
                            reverseMap[name, default: []].append(item)
                        }
                    }
                    continue
                case "@nest":
                    throw invalid("@nest is not supported")
                default:
                    continue
                }
                if let expandedValue { result[property] = expandedValue }
                continue
            }

            let definition = active.terms[key]
            let containers = definition?.containers ?? []
            var expandedValue: JSONValue?
            if definition?.typeMapping == "@json" {
                expandedValue = .object(["@value": value, "@type": "@json"])
            } else if containers.contains("@language"), case .object(let map) = value {
                var items: [JSONValue] = []
                for language in map.keys.sorted() {
                    let languageValues: [JSONValue] = if case .array(let list) = map[language]! { list } else { [map[language]!] }
                    for item in languageValues {
                        switch item {
                        case .null: continue
                        case .string:
                            var entry: [String: JSONValue] = ["@value": item]
                            if language != "@none", try expandIRI(active, language, vocab: true) != "@none" {
                                entry["@language"] = .string(language.lowercased())
                            }
                            items.append(.object(entry))
                        default: throw invalid("invalid language map value", item)
                        }
                    }
                }
                expandedValue = .array(items)
            } else if !containers.isDisjoint(with: ["@index", "@type", "@id"]), case .object(let map) = value {
                expandedValue = try expandIndexMap(
                    active, key, map, definition!, containers: containers, depth: depth)
            } else {
                expandedValue = try expand(active, key, value, depth: depth + 1)
            }
            guard var expandedValue else { continue }
            if containers.contains("@list"), expandedValue["@list"] == nil {
                expandedValue = .object(["@list": asArray(expandedValue)])
            }
            if containers.contains("@graph") && !containers.contains("@id") && !containers.contains("@index") {
                expandedValue = .array(asList(expandedValue).map { .object(["@graph": asArray($0)]) })
            }
            if definition?.isReverse == true {
                for item in asList(expandedValue) {
                    if item["@value"] != nil || item["@list"] != nil {
                        throw invalid("invalid reverse property value", item)
                    }
                    reverseMap[property, default: []].append(item)
                }
            } else {
                result[property] = .array((result[property].map(asList) ?? []) + asList(expandedValue))
            }
        }
        if !reverseMap.isEmpty {
            var merged: [String: JSONValue] = [:]
            if case .object(let existing)? = result["@reverse"] { merged = existing }
            for (name, items) in reverseMap { merged[name] = .array((merged[name].map(asList) ?? []) + items) }
            result["@reverse"] = .object(merged)
        }
        return try finishObject(result, activeProperty)
    }

    /// Index, id and type maps (§5.1.2 step 13.8).
    private func expandIndexMap(
        _ active: JSONLDActiveContext, _ key: String, _ map: [String: JSONValue], _ definition: JSONLDTermDefinition,
        containers: Set<String>, depth: Int
    ) throws -> JSONValue {
        var items: [JSONValue] = []
        let indexKey = definition.index ?? "@index"
        for index in map.keys.sorted() {
            var mapContext = active
            if containers.contains("@type"), let scoped = active.terms[index], scoped.scopedContext != nil {
                mapContext = try applyScoped(active, scoped, overrideProtected: false, propagate: true, depth: depth)
            }
            let expandedIndex = try expandIRI(active, index, vocab: true)
            var indexValues = asList(try expand(mapContext, key, map[index]!, fromMap: true, depth: depth + 1) ?? .array([]))
            for (position, item) in indexValues.enumerated() {
                guard case .object(var fields) = item else { continue }
                if containers.contains("@graph") && fields["@graph"] == nil {
                    fields = ["@graph": .array([item])]
                }
                if containers.contains("@index") && indexKey != "@index" && expandedIndex != "@none" {
                    throw invalid("property-valued indexes are not supported (term \(key))")
                } else if containers.contains("@index") && fields["@index"] == nil && expandedIndex != "@none" {
                    fields["@index"] = .string(index)
                } else if containers.contains("@id") && fields["@id"] == nil && expandedIndex != "@none" {
                    fields["@id"] = try expandIRI(active, index, documentRelative: true).map { .string($0) } ?? .null
                } else if containers.contains("@type") && expandedIndex != "@none" {
                    let types = fields["@type"].map(asList) ?? []
                    fields["@type"] = .array([.string(expandedIndex ?? index)] + types)
                }
                indexValues[position] = .object(fields)
            }
            items.append(contentsOf: indexValues)
        }
        return .array(items)
    }

    /// Steps 15–19 of §5.1.2: value objects checked, `@set` unwrapped, free-floating values dropped.
    private func finishObject(_ input: [String: JSONValue], _ activeProperty: String?) throws -> JSONValue? {
        var result = input
        if let value = result["@value"] {
            let allowed: Set<String> = ["@direction", "@index", "@language", "@type", "@value"]
            guard result.keys.allSatisfy(allowed.contains) else {
                throw invalid("invalid value object", .object(result))
            }
            if result["@type"] == "@json" { return .object(result) }
            if value == .null { return nil }
            if result["@language"] != nil, value.stringValue == nil {
                throw invalid("invalid language-tagged value", .object(result))
            }
            if let type = result["@type"] {
                guard case .string(let iri) = type, JSONLDIRI.isAbsolute(iri), !JSONLDIRI.isBlankNode(iri) else {
                    throw invalid("invalid typed value", .object(result))
                }
            }
        } else if let type = result["@type"], case .string = type {
            result["@type"] = .array([type])
        } else if result["@set"] != nil || result["@list"] != nil {
            guard result.count == 1 || (result.count == 2 && result["@index"] != nil) else {
                throw invalid("invalid set or list object", .object(result))
            }
            if let set = result["@set"] { return set }
        }
        if result.count == 1 && result["@language"] != nil { return nil }
        if activeProperty == nil || activeProperty == "@graph" {
            if result.isEmpty || result["@value"] != nil || result["@list"] != nil { return nil }
            if result.count == 1 && result["@id"] != nil { return nil }
        }
        return .object(result)
    }

    /// Value Expansion (§5.3.2).
    func expandValue(_ active: JSONLDActiveContext, _ activeProperty: String?, _ value: JSONValue) throws -> JSONValue {
        let definition = activeProperty.flatMap { active.terms[$0] }
        if case .string(let text) = value {
            if definition?.typeMapping == "@id" {
                return .object(["@id": try expandIRI(active, text, documentRelative: true).map { .string($0) } ?? .null])
            }
            if definition?.typeMapping == "@vocab" {
                return .object([
                    "@id": try expandIRI(active, text, vocab: true, documentRelative: true).map { .string($0) } ?? .null
                ])
            }
        }
        var result: [String: JSONValue] = ["@value": value]
        if let type = definition?.typeMapping, !["@id", "@vocab", "@none"].contains(type) {
            result["@type"] = .string(type)
        } else if case .string = value {
            let language: String? = if let mapping = definition?.language { mapping } else { active.defaultLanguage }
            if let language { result["@language"] = .string(language) }
        }
        return .object(result)
    }

    func asArray(_ value: JSONValue?) -> JSONValue {
        switch value {
        case nil: .array([])
        case .array?: value!
        case let value?: .array([value])
        }
    }

    func asList(_ value: JSONValue) -> [JSONValue] {
        if case .array(let items) = value { return items }
        return [value]
    }
}
