import Foundation

/// A query parameter. Text goes over the wire as text and the server infers its type from the
/// statement (`$1::uuid`); bytes go as binary `bytea`, so no escaping or hex round trip is needed.
/// The store's own repositories and plugins' (through `TenantSQL`) bind the same values.
public enum SQLValue: Sendable, Hashable {
    case null
    case text(String)
    case bytes([UInt8])

    public static func int(_ value: Int) -> SQLValue { .text(String(value)) }
    public static func optionalText(_ value: String?) -> SQLValue { value.map(SQLValue.text) ?? .null }
    /// A uuid in its canonical lower-case text form, for `$n::uuid`.
    public static func uuid(_ value: UUID) -> SQLValue { .text(value.lowercasedString) }
    public static func optionalUUID(_ value: UUID?) -> SQLValue { value.map(SQLValue.uuid) ?? .null }

    /// A text array literal (`{"a","b"}`), every element quoted and escaped, for `$n::text[]`.
    public static func textArray(_ values: [String]) -> SQLValue {
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
