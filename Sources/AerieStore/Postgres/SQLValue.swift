/// A query parameter. Text goes over the wire as text and the server infers its type from the
/// statement (`$1::uuid`); bytes go as binary `bytea`, so no escaping or hex round trip is needed.
package enum SQLValue: Sendable, Hashable {
    case null
    case text(String)
    case bytes([UInt8])

    package static func int(_ value: Int) -> SQLValue { .text(String(value)) }
    package static func optionalText(_ value: String?) -> SQLValue { value.map(SQLValue.text) ?? .null }

    /// A text array literal (`{"a","b"}`), every element quoted and escaped, for `$n::text[]`.
    package static func textArray(_ values: [String]) -> SQLValue {
        var literal = "{"
        for (index, value) in values.enumerated() {
            if index > 0 { literal += "," }
            literal += "\""
            for character in value.unicodeScalars {
                if character == "\"" || character == "\\" { literal += "\\" }
                literal.unicodeScalars.append(character)
            }
            literal += "\""
        }
        return .text(literal + "}")
    }
}
