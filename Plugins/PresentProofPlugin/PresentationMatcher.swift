import AerieCore
import Foundation

/// Which held credentials answer a presentation definition, and which to present: pure code
/// over credentials as `JSONValue`, as ACA-Py's `DIFPresExchHandler` matches them.
enum PresentationMatcher {
    /// A held credential as the matcher sees it.
    struct Candidate: Sendable {
        var id: UUID
        var credential: JSONValue
        /// The credential's `@type`s, expanded to IRIs (JSON-LD), which schema URIs name.
        var expandedTypes: [String]
    }

    struct Rejection: Sendable, Hashable {
        var credentialId: UUID
        var reason: String
    }

    struct DescriptorResult: Sendable {
        var id: String
        var matches: [UUID]
        /// Why the credentials that do not match fail (at most `maxRejections`), or the one
        /// reason that no credential can match.
        var rejections: [Rejection]
        var unmetReason: String?
    }

    struct Match: Sendable {
        var descriptors: [DescriptorResult]
        /// The descriptors to answer and a credential for each, when the requirements can be
        /// met; nil otherwise.
        var chosen: [(descriptorId: String, credentialId: UUID)]?
        var unmetReason: String?
    }

    static let maxRejections = 10

    static let verifiableCredentialType = "https://www.w3.org/2018/credentials#VerifiableCredential"

    /// Matches every descriptor against every candidate, then applies the submission
    /// requirements. `selection` (descriptor id -> credential id) replaces the default choice
    /// (the oldest matching credential); it must name a matching credential.
    static func match(
        _ definition: PresentationDefinition, candidates: [Candidate], selection: [String: UUID] = [:]
    ) throws -> Match {
        let results = definition.descriptors.map { describe($0, candidates: candidates) }
        for (descriptorId, credentialId) in selection.sorted(by: { $0.key < $1.key }) {
            guard let result = results.first(where: { $0.id == descriptorId }) else {
                throw AerieError.invalidParams("no input descriptor '\(descriptorId)' in the request", field: "selection")
            }
            guard result.matches.contains(credentialId) else {
                throw AerieError.invalidParams(
                    "credential \(credentialId.lowercasedString) does not satisfy input descriptor '\(descriptorId)'",
                    field: "selection")
            }
        }
        let satisfied = Set(results.filter { $0.unmetReason == nil }.map(\.id))
        let order = definition.descriptors.map(\.id)
        let picked: Result<Set<String>, Unmet>
        if definition.requirements.isEmpty {
            let missing = order.filter { !satisfied.contains($0) }
            picked = missing.isEmpty ? .success(Set(order)) : .failure(Unmet(reason: "input descriptor '\(missing[0])' is not met"))
        } else {
            picked = pickAll(definition.requirements, descriptors: definition.descriptors, satisfied: satisfied, order: order)
        }
        switch picked {
        case .failure(let unmet): return Match(descriptors: results, chosen: nil, unmetReason: unmet.reason)
        case .success(let ids):
            let chosen = order.filter(ids.contains).map { id in
                (descriptorId: id, credentialId: selection[id] ?? results.first { $0.id == id }!.matches[0])
            }
            return Match(descriptors: results, chosen: chosen, unmetReason: nil)
        }
    }

    /// The `presentation_submission` for the chosen pairs, and the credentials in the order its
    /// paths name them (each once; descriptor order sorted by id, as ACA-Py does).
    static func submission(
        definitionId: String, chosen: [(descriptorId: String, credentialId: UUID)], submissionId: String
    ) -> (submission: JSONValue, credentialOrder: [UUID]) {
        var order: [UUID] = []
        var map: [JSONValue] = []
        for pair in chosen.sorted(by: { $0.descriptorId < $1.descriptorId }) {
            let index = order.firstIndex(of: pair.credentialId) ?? {
                order.append(pair.credentialId)
                return order.count - 1
            }()
            map.append(["id": .string(pair.descriptorId), "format": "ldp_vc", "path": .string("$.verifiableCredential[\(index)]")])
        }
        let submission: JSONValue = [
            "id": .string(submissionId), "definition_id": .string(definitionId), "descriptor_map": .array(map),
        ]
        return (submission, order)
    }

    // MARK: - One descriptor

    static func describe(_ descriptor: PresentationDefinition.InputDescriptor, candidates: [Candidate]) -> DescriptorResult {
        if descriptor.limitDisclosureRequired {
            return DescriptorResult(
                id: descriptor.id, matches: [], rejections: [],
                unmetReason: "limit_disclosure 'required' needs selective disclosure (BBS+), which Aerie does not support")
        }
        var matches: [UUID] = []
        var rejections: [Rejection] = []
        for candidate in candidates {
            if let reason = rejection(of: candidate, by: descriptor) {
                if rejections.count < maxRejections { rejections.append(Rejection(credentialId: candidate.id, reason: reason)) }
            } else {
                matches.append(candidate.id)
            }
        }
        let unmet: String? =
            matches.isEmpty
            ? (candidates.isEmpty ? "no credential is held" : "none of the \(candidates.count) credentials held matches") : nil
        return DescriptorResult(id: descriptor.id, matches: matches, rejections: matches.isEmpty ? rejections : [], unmetReason: unmet)
    }

    /// Nil when the candidate satisfies the descriptor, else the first reason it does not.
    static func rejection(of candidate: Candidate, by descriptor: PresentationDefinition.InputDescriptor) -> String? {
        if !descriptor.schemaGroups.isEmpty, !descriptor.schemaGroups.contains(where: { schemaGroupMatches($0, candidate) }) {
            let uris = descriptor.schemaGroups.flatMap { $0.map(\.uri) }.filter { $0 != verifiableCredentialType }
            return "is not of the schema \(uris.first ?? verifiableCredentialType)"
        }
        if descriptor.subjectIsIssuerRequired {
            let issuer = candidate.credential["issuer"]?.stringValue ?? candidate.credential["issuer"]?["id"]?.stringValue
            guard let issuer, subjectIds(candidate.credential).contains(issuer) else { return "its subject is not its issuer" }
        }
        for (index, field) in descriptor.fields.enumerated() {
            let name = field.id.map { "field '\($0)'" } ?? "field \(index)"
            var found = false
            var failure: String?
            search: for path in field.paths {
                for value in path.select(candidate.credential) {
                    found = true
                    guard let filter = field.filter else { failure = nil; break search }
                    if let reason = filter.check(unwrapped(value)) {
                        failure = failure ?? "\(name) at \(path.source) \(reason)"
                    } else {
                        failure = nil
                        break search
                    }
                }
            }
            if !found {
                if field.optional { continue }
                return "\(name) has no value at \(field.paths.map(\.source).joined(separator: " or "))"
            }
            if let failure, !field.optional { return failure }
        }
        return nil
    }

    /// As ACA-Py: within a group, every `required` URI must match and one that is not the bare
    /// VerifiableCredential type must (unless it is all the group names).
    static func schemaGroupMatches(_ group: [PresentationDefinition.SchemaURI], _ candidate: Candidate) -> Bool {
        let schemaIds = credentialSchemaIds(candidate.credential)
        func holds(_ uri: String) -> Bool { candidate.expandedTypes.contains(uri) || schemaIds.contains(uri) }
        if group.contains(where: { $0.required && !holds($0.uri) }) { return false }
        let specific = group.filter { $0.uri != verifiableCredentialType }
        if specific.isEmpty { return group.contains { holds($0.uri) } }
        return specific.contains { holds($0.uri) }
    }

    /// A typed literal (`{"type": "xsd:integer", "@value": "42"}`) is filtered by its value, as ACA-Py does.
    static func unwrapped(_ value: JSONValue) -> JSONValue {
        guard let type = value["type"]?.stringValue, let literal = value["@value"] else { return value }
        guard let text = literal.stringValue else { return literal }
        if type.contains("integer"), let n = Int64(text) { return .int(n) }
        if type.contains("double") || type.contains("decimal"), let d = Double(text) { return .double(d) }
        if type.contains("boolean") { return .bool(text == "true") }
        return literal
    }

    static func subjectIds(_ credential: JSONValue) -> [String] {
        switch credential["credentialSubject"] {
        case .object?: [credential["credentialSubject"]?["id"]?.stringValue].compactMap { $0 }
        case .array(let subjects)?: subjects.compactMap { $0["id"]?.stringValue }
        default: []
        }
    }

    static func credentialSchemaIds(_ credential: JSONValue) -> [String] {
        switch credential["credentialSchema"] {
        case .object?: [credential["credentialSchema"]?["id"]?.stringValue].compactMap { $0 }
        case .array(let schemas)?: schemas.compactMap { $0["id"]?.stringValue }
        default: []
        }
    }

    // MARK: - Submission requirements

    struct Unmet: Error { var reason: String }

    private static func pickAll(
        _ requirements: [PresentationDefinition.SubmissionRequirement], descriptors: [PresentationDefinition.InputDescriptor],
        satisfied: Set<String>, order: [String]
    ) -> Result<Set<String>, Unmet> {
        var chosen = Set<String>()
        for requirement in requirements {
            switch pick(requirement, descriptors: descriptors, satisfied: satisfied, order: order) {
            case .success(let ids): chosen.formUnion(ids)
            case .failure(let unmet): return .failure(unmet)
            }
        }
        return .success(chosen)
    }

    /// One requirement: the descriptors it answers with, or why it cannot be met.
    private static func pick(
        _ requirement: PresentationDefinition.SubmissionRequirement, descriptors: [PresentationDefinition.InputDescriptor],
        satisfied: Set<String>, order: [String]
    ) -> Result<Set<String>, Unmet> {
        let name = requirement.name.map { "submission requirement '\($0)'" } ?? "a submission requirement"
        // The units: descriptors of the group, or nested requirements.
        var units: [Set<String>?] = []
        if let group = requirement.from {
            units = descriptors.filter { $0.groups.contains(group) }.map { satisfied.contains($0.id) ? [$0.id] : nil }
        } else {
            units = requirement.nested.map {
                if case .success(let ids) = pick($0, descriptors: descriptors, satisfied: satisfied, order: order) { ids } else { nil }
            }
        }
        let met = units.compactMap { $0 }
        switch requirement.rule {
        case .all:
            guard met.count == units.count else {
                return .failure(Unmet(reason: "\(name) needs all of its \(units.count), \(met.count) are met"))
            }
            return .success(met.reduce(into: Set()) { $0.formUnion($1) })
        case .pick:
            let needed = requirement.count ?? max(requirement.minimum ?? 1, 1)
            if let maximum = requirement.maximum, needed > maximum {
                return .failure(Unmet(reason: "\(name) asks for more than its max"))
            }
            guard met.count >= needed else {
                return .failure(Unmet(reason: "\(name) needs \(needed) of its \(units.count), \(met.count) are met"))
            }
            return .success(met.prefix(needed).reduce(into: Set()) { $0.formUnion($1) })
        }
    }
}
