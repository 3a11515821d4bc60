import AerieCore

/// A DIF Presentation Exchange v1 `presentation_definition` (RFC 0510), read with bounds: what a
/// verifier asks for, before any credential is looked at.
struct PresentationDefinition: Sendable {
    static let maxDescriptors = 32
    static let maxFields = 32
    static let maxPaths = 8
    static let maxSchemaURIs = 16
    static let maxRequirements = 16
    static let maxRequirementDepth = 4
    /// Ids, names and schema URIs.
    static let maxTextBytes = 2048

    struct SchemaURI: Sendable, Hashable {
        var uri: String
        var required: Bool
    }

    struct Field: Sendable {
        var id: String?
        var paths: [JSONPath]
        var filter: FieldFilter?
        /// `optional: true`: a credential without it still matches.
        var optional: Bool
    }

    struct InputDescriptor: Sendable {
        var id: String
        var groups: [String]
        /// Any group may match (`oneof_filter`); a plain `schema` list is one group.
        var schemaGroups: [[SchemaURI]]
        var fields: [Field]
        var limitDisclosureRequired: Bool
        var subjectIsIssuerRequired: Bool
    }

    struct SubmissionRequirement: Sendable {
        enum Rule: String, Sendable { case all, pick }
        var name: String?
        var rule: Rule
        var count: Int?
        var minimum: Int?
        var maximum: Int?
        /// A group name (`from`), or nested requirements (`from_nested`).
        var from: String?
        var nested: [SubmissionRequirement]
    }

    var id: String
    var descriptors: [InputDescriptor]
    var requirements: [SubmissionRequirement]

    static func malformed(_ message: String, at field: String) -> AerieError {
        ExchangeProtocol.malformed(message, field: field)
    }

    init(parsing value: JSONValue) throws {
        let at = "presentation_definition"
        guard case .object(let members) = value else { throw Self.malformed("must be an object", at: at) }
        id = try Self.text(members["id"], at: "\(at).id")
        guard case .array(let descriptors) = members["input_descriptors"] ?? .null, !descriptors.isEmpty else {
            throw Self.malformed("input_descriptors must be a non-empty list", at: "\(at).input_descriptors")
        }
        guard descriptors.count <= Self.maxDescriptors else {
            throw Self.malformed("at most \(Self.maxDescriptors) input descriptors", at: "\(at).input_descriptors")
        }
        self.descriptors = try descriptors.enumerated().map { index, descriptor in
            try Self.descriptor(descriptor, at: "\(at).input_descriptors[\(index)]")
        }
        let ids = self.descriptors.map(\.id)
        guard Set(ids).count == ids.count else { throw Self.malformed("input descriptor ids must be unique", at: "\(at).input_descriptors") }
        if let requirements = members["submission_requirements"], !requirements.isNull {
            self.requirements = try Self.requirements(requirements, at: "\(at).submission_requirements", depth: 0)
            let groups = Set(self.descriptors.flatMap(\.groups))
            func check(_ requirement: SubmissionRequirement) throws {
                if let from = requirement.from, !groups.contains(from) {
                    throw Self.malformed("no input descriptor is in the group '\(from)'", at: "\(at).submission_requirements")
                }
                for nested in requirement.nested { try check(nested) }
            }
            for requirement in self.requirements { try check(requirement) }
        } else {
            self.requirements = []
        }
    }

    private static func descriptor(_ value: JSONValue, at: String) throws -> InputDescriptor {
        guard case .object(let members) = value else { throw malformed("must be an object", at: at) }
        let id = try text(members["id"], at: "\(at).id")
        var groups: [String] = []
        if let group = members["group"] {
            guard case .array(let items) = group, items.count <= 16 else { throw malformed("must be a list of at most 16 names", at: "\(at).group") }
            groups = try items.enumerated().map { try text($1, at: "\(at).group[\($0)]") }
        }
        var schemaGroups: [[SchemaURI]] = []
        switch members["schema"] {
        case .none, .null?: break
        case .array(let uris)?: schemaGroups = [try schemaURIs(uris, at: "\(at).schema")]
        case .object(let filter)?:
            guard case .array(let alternatives) = filter["oneof_filter"] ?? .null, alternatives.count <= maxSchemaURIs else {
                throw malformed("must be a list of schema URIs or {oneof_filter: [[…]]}", at: "\(at).schema")
            }
            schemaGroups = try alternatives.enumerated().map { index, group in
                guard case .array(let uris) = group else { throw malformed("must be a list of schema URIs", at: "\(at).schema.oneof_filter[\(index)]") }
                return try schemaURIs(uris, at: "\(at).schema.oneof_filter[\(index)]")
            }
        default: throw malformed("must be a list of schema URIs or {oneof_filter: [[…]]}", at: "\(at).schema")
        }
        var fields: [Field] = []
        var limitDisclosure = false
        var subjectIsIssuer = false
        if let constraints = members["constraints"], !constraints.isNull {
            guard case .object(let c) = constraints else { throw malformed("must be an object", at: "\(at).constraints") }
            limitDisclosure = try directive(c["limit_disclosure"], at: "\(at).constraints.limit_disclosure") == "required"
            subjectIsIssuer = try directive(c["subject_is_issuer"], at: "\(at).constraints.subject_is_issuer") == "required"
            if let list = c["fields"], !list.isNull {
                guard case .array(let items) = list, items.count <= maxFields else {
                    throw malformed("must be a list of at most \(maxFields) fields", at: "\(at).constraints.fields")
                }
                fields = try items.enumerated().map { try field($1, at: "\(at).constraints.fields[\($0)]") }
            }
        }
        return InputDescriptor(
            id: id, groups: groups, schemaGroups: schemaGroups, fields: fields, limitDisclosureRequired: limitDisclosure,
            subjectIsIssuerRequired: subjectIsIssuer)
    }

    private static func field(_ value: JSONValue, at: String) throws -> Field {
        guard case .object(let members) = value else { throw malformed("must be an object", at: at) }
        guard case .array(let list) = members["path"] ?? .null, !list.isEmpty, list.count <= maxPaths else {
            throw malformed("path must be a list of 1 to \(maxPaths) JSONPaths", at: "\(at).path")
        }
        let paths = try list.enumerated().map { index, item in
            let source = try text(item, at: "\(at).path[\(index)]")
            do { return try JSONPath(source) } catch let refused as JSONPath.Refused {
                throw malformed(refused.reason, at: "\(at).path[\(index)]")
            }
        }
        let filter = try members["filter"].flatMap { $0.isNull ? nil : try FieldFilter(parsing: $0, at: "\(at).filter") }
        let id = try members["id"].map { try text($0, at: "\(at).id") }
        return Field(id: id, paths: paths, filter: filter, optional: members["optional"]?.boolValue ?? false)
    }

    private static func schemaURIs(_ items: [JSONValue], at: String) throws -> [SchemaURI] {
        guard items.count <= maxSchemaURIs else { throw malformed("at most \(maxSchemaURIs) schema URIs", at: at) }
        return try items.enumerated().map { index, item in
            SchemaURI(uri: try text(item["uri"], at: "\(at)[\(index)].uri"), required: item["required"]?.boolValue ?? false)
        }
    }

    private static func requirements(_ value: JSONValue, at: String, depth: Int) throws -> [SubmissionRequirement] {
        guard depth < maxRequirementDepth else { throw malformed("submission requirements nest too deep", at: at) }
        guard case .array(let items) = value, items.count <= maxRequirements else {
            throw malformed("must be a list of at most \(maxRequirements) requirements", at: at)
        }
        return try items.enumerated().map { index, item in
            let here = "\(at)[\(index)]"
            guard case .object(let members) = item else { throw malformed("must be an object", at: here) }
            guard let rule = members["rule"]?.stringValue.flatMap(SubmissionRequirement.Rule.init(rawValue:)) else {
                throw malformed("rule must be 'all' or 'pick'", at: "\(here).rule")
            }
            func number(_ key: String) throws -> Int? {
                guard let value = members[key], !value.isNull else { return nil }
                guard let n = value.intValue, n >= 0, n <= Int64(maxDescriptors) else {
                    throw malformed("must be a count up to \(maxDescriptors)", at: "\(here).\(key)")
                }
                return Int(n)
            }
            let from = try members["from"].map { try text($0, at: "\(here).from") }
            let nested = try members["from_nested"].map { try requirements($0, at: "\(here).from_nested", depth: depth + 1) } ?? []
            guard (from == nil) != nested.isEmpty else { throw malformed("needs exactly one of from and from_nested", at: here) }
            return SubmissionRequirement(
                name: members["name"]?.stringValue, rule: rule, count: try number("count"), minimum: try number("min"),
                maximum: try number("max"), from: from, nested: nested)
        }
    }

    private static func directive(_ value: JSONValue?, at: String) throws -> String? {
        guard let value, !value.isNull else { return nil }
        guard let text = value.stringValue, ["required", "preferred"].contains(text) else {
            throw malformed("must be 'required' or 'preferred'", at: at)
        }
        return text
    }

    static func text(_ value: JSONValue?, at: String) throws -> String {
        guard let text = value?.stringValue, !text.isEmpty, text.utf8.count <= Self.maxTextBytes else {
            throw malformed("must be a non-empty string of at most \(Self.maxTextBytes) bytes", at: at)
        }
        return text
    }
}
