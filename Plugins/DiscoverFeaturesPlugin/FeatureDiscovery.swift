import AerieCore
import Foundation

/// Discover features 1.0 (RFC 0031) and 2.0 (RFC 0557) messages, pure: reading a peer's query,
/// matching it against the protocols served, writing the answer, and reading a peer's answer.
public enum FeatureDiscovery {
    public enum Version: String, Sendable, Hashable, Codable {
        case v1 = "1.0"
        case v2 = "2.0"

        public var queryType: String { "https://didcomm.org/discover-features/\(rawValue)/\(self == .v1 ? "query" : "queries")" }
        public var answerType: String {
            "https://didcomm.org/discover-features/\(rawValue)/\(self == .v1 ? "disclose" : "disclosures")"
        }
    }

    /// The feature types of RFC 0557 this server answers.
    public enum FeatureType: String, Sendable, Hashable, Codable {
        case `protocol`
        case goalCode = "goal-code"
    }

    /// One query: a feature type and a pattern where `*` matches any run of characters.
    public struct Query: Sendable, Hashable {
        public var featureType: FeatureType
        public var match: String

        public init(_ featureType: FeatureType, _ match: String) {
            self.featureType = featureType
            self.match = match
        }
    }

    /// One feature disclosed: a protocol URI (`https://didcomm.org/trust_ping/1.0`) or a goal code.
    public struct Feature: Sendable, Hashable, Codable {
        public var featureType: FeatureType
        public var id: String

        public init(_ featureType: FeatureType, _ id: String) {
            self.featureType = featureType
            self.id = id
        }

        enum CodingKeys: String, CodingKey {
            case featureType = "feature-type", id
        }
    }

    /// Longest query pattern read (ours or a peer's).
    public static let maxMatchBytes = 256
    /// Most queries one `queries` message may carry.
    public static let maxQueries = 16
    /// Most features kept from a peer's answer; longer ids are dropped.
    public static let maxDisclosed = 200
    public static let maxFeatureIdBytes = 256

    // MARK: - Answering

    /// The queries of a peer's `query` (1.0) or `queries` (2.0); bounded, else `invalid_params`.
    /// Feature types other than `protocol` and `goal-code` are skipped (RFC 0557: nothing to disclose).
    public static func queries(in message: JSONValue, version: Version) throws -> [Query] {
        switch version {
        case .v1:
            guard let match = message["query"]?.stringValue else {
                throw AerieError.invalidParams("the query has no query string", field: "query")
            }
            return [Query(.protocol, try checkedMatch(match, field: "query"))]
        case .v2:
            guard case .array(let items)? = message["queries"] else {
                throw AerieError.invalidParams("the queries message has no queries array", field: "queries")
            }
            guard items.count <= maxQueries else {
                throw AerieError.invalidParams("the queries message has more than \(maxQueries) queries", field: "queries")
            }
            return try items.enumerated().compactMap { index, item in
                guard let type = item["feature-type"]?.stringValue, let match = item["match"]?.stringValue else {
                    throw AerieError.invalidParams("queries[\(index)] needs feature-type and match", field: "queries")
                }
                guard let featureType = FeatureType(rawValue: type) else { return nil }
                return Query(featureType, try checkedMatch(match, field: "queries[\(index)].match"))
            }
        }
    }

    /// The features of `served` some query matches, each once, in `served`'s order.
    public static func disclosed(_ served: [Feature], matching queries: [Query]) -> [Feature] {
        served.filter { feature in
            queries.contains { $0.featureType == feature.featureType && matches(feature.id, pattern: $0.match) }
        }
    }

    /// The answer to the query `queryId`: `disclose` (1.0, protocols only) or `disclosures` (2.0).
    public static func answer(
        _ features: [Feature], to queryId: String, version: Version, id: String = UUID.random().lowercasedString
    ) -> JSONValue {
        var fields: [String: JSONValue] = [
            "@type": .string(version.answerType), "@id": .string(id), "~thread": ["thid": .string(queryId)],
        ]
        switch version {
        case .v1:
            fields["protocols"] = .array(features.filter { $0.featureType == .protocol }.map { ["pid": .string($0.id)] })
        case .v2:
            fields["disclosures"] = .array(features.map {
                ["feature-type": .string($0.featureType.rawValue), "id": .string($0.id)]
            })
        }
        return .object(fields)
    }

    /// Whether `id` matches `pattern`, where `*` matches any run of characters (and nothing else
    /// is special). Linear in practice; both are bounded by `maxMatchBytes`/`maxFeatureIdBytes`.
    public static func matches(_ id: String, pattern: String) -> Bool {
        let text = Array(id.utf8), glob = Array(InboundMessage.normalizedType(pattern).utf8)
        var (t, g) = (0, 0)
        var star: Int? = nil
        var resume = 0
        while t < text.count {
            if g < glob.count, glob[g] == UInt8(ascii: "*") {
                star = g
                resume = t
                g += 1
            } else if g < glob.count, glob[g] == text[t] {
                t += 1
                g += 1
            } else if let star {
                g = star + 1
                resume += 1
                t = resume
            } else {
                return false
            }
        }
        while g < glob.count, glob[g] == UInt8(ascii: "*") { g += 1 }
        return g == glob.count
    }

    // MARK: - Asking

    /// Our query: 1.0 asks for protocols matching `match`; 2.0 for protocols and goal codes.
    public static func query(_ match: String, version: Version, id: String = UUID.random().lowercasedString) -> JSONValue {
        var fields: [String: JSONValue] = ["@type": .string(version.queryType), "@id": .string(id)]
        switch version {
        case .v1:
            fields["query"] = .string(match)
        case .v2:
            fields["queries"] = .array([FeatureType.protocol, .goalCode].map {
                ["feature-type": .string($0.rawValue), "match": .string(match)]
            })
        }
        return .object(fields)
    }

    /// The features a peer's `disclose` or `disclosures` names: at most `maxDisclosed`, entries
    /// that are not a bounded string id of a known feature type skipped.
    public static func features(in answer: JSONValue, version: Version) -> [Feature] {
        let entries: [JSONValue]
        switch version {
        case .v1:
            guard case .array(let items)? = answer["protocols"] else { return [] }
            entries = items
        case .v2:
            guard case .array(let items)? = answer["disclosures"] else { return [] }
            entries = items
        }
        var features: [Feature] = []
        for entry in entries.prefix(maxDisclosed) {
            let type = version == .v1 ? FeatureType.protocol : entry["feature-type"]?.stringValue.flatMap(FeatureType.init)
            guard let type, let id = entry[version == .v1 ? "pid" : "id"]?.stringValue, !id.isEmpty,
                id.utf8.count <= maxFeatureIdBytes, !id.utf8.contains(where: { $0 < 0x20 || $0 == 0x7F })
            else { continue }
            features.append(Feature(type, id))
        }
        return features
    }

    static func checkedMatch(_ match: String, field: String) throws -> String {
        guard !match.isEmpty, match.utf8.count <= maxMatchBytes else {
            throw AerieError.invalidParams("\(field) must be 1 to \(maxMatchBytes) bytes", field: field)
        }
        guard !match.utf8.contains(where: { $0 < 0x20 || $0 == 0x7F }) else {
            throw AerieError.invalidParams("\(field) contains control characters", field: field)
        }
        return match
    }
}
