import CLibPQ
import Foundation

/// Builds and edits libpq connection strings (`key=value` form or `postgresql://` URIs).
public enum ConnectionString {
    /// `key='value' ...`, quoted so paths with spaces or quotes survive.
    public static func make(_ parameters: KeyValuePairs<String, String>) -> String {
        parameters.map { "\($0.key)=\(quote($0.value))" }.joined(separator: " ")
    }

    /// The parameters set in `conninfo`, in libpq's keyword order. Throws on a malformed string.
    public static func parse(_ conninfo: String) throws -> [(key: String, value: String)] {
        var errorMessage: UnsafeMutablePointer<CChar>?
        guard let options = PQconninfoParse(conninfo, &errorMessage) else {
            let message = errorMessage.map { String(cString: $0) } ?? "out of memory"
            if let errorMessage { PQfreemem(errorMessage) }
            throw DatabaseSetupError(
                "invalid PostgreSQL connection string: \(message.trimmingCharacters(in: .whitespacesAndNewlines))")
        }
        defer { PQconninfoFree(options) }
        var pairs: [(key: String, value: String)] = []
        var option = options
        while let keyword = option.pointee.keyword {
            if let value = option.pointee.val {
                pairs.append((String(cString: keyword), String(cString: value)))
            }
            option += 1
        }
        return pairs
    }

    /// `conninfo` with some parameters replaced (or removed, for a nil value); e.g. the owner
    /// role's string derived from a superuser's by swapping `user` and `dbname`.
    public static func overriding(_ conninfo: String, with overrides: [String: String?]) throws -> String {
        var pairs = try parse(conninfo).filter { overrides[$0.key] == nil }
        for (key, value) in overrides.sorted(by: { $0.key < $1.key }) {
            if let value { pairs.append((key, value)) }
        }
        return pairs.map { "\($0.key)=\(quote($0.value))" }.joined(separator: " ")
    }

    /// Single-quotes a value, escaping `\` and `'` as libpq requires.
    public static func quote(_ value: String) -> String {
        "'" + value.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "'", with: "\\'") + "'"
    }
}
