import AerieCore

/// The JSONPath subset DIF Presentation Exchange `path`s use (what ACA-Py's jsonpath-ng answers
/// for them): `$`, `.name`, `['name']` / `["name"]`, `[n]`, `[*]`, `.*` and recursive descent
/// `..name` / `..*`. Filter expressions and slices are refused when the definition is read.
struct JSONPath: Sendable, Hashable {
    static let maxLength = 256
    static let maxSegments = 32

    enum Segment: Sendable, Hashable {
        case member(String)
        case index(Int)
        case wildcard
        /// `..`: the current value and every value under it, then the next segment.
        case descendants
    }

    let segments: [Segment]
    let source: String

    struct Refused: Error, Sendable { let reason: String }

    init(_ source: String) throws(Refused) {
        guard source.utf8.count <= Self.maxLength else {
            throw Refused(reason: "a path is longer than \(Self.maxLength) bytes")
        }
        let chars = Array(source)
        guard chars.first == "$" else { throw Refused(reason: "a path must start with '$'") }
        var index = 1
        var segments: [Segment] = []
        func name() -> String {
            var out = ""
            while index < chars.count, chars[index] != ".", chars[index] != "[" {
                out.append(chars[index])
                index += 1
            }
            return out
        }
        while index < chars.count {
            switch chars[index] {
            case ".":
                index += 1
                if index < chars.count, chars[index] == "." {
                    index += 1
                    segments.append(.descendants)
                    if index < chars.count, chars[index] == "[" { continue }
                }
                if index < chars.count, chars[index] == "*" {
                    index += 1
                    segments.append(.wildcard)
                    continue
                }
                let member = name()
                guard !member.isEmpty else { throw Refused(reason: "an empty member name in path '\(source)'") }
                segments.append(.member(member))
            case "[":
                index += 1
                guard index < chars.count else { throw Refused(reason: "an unclosed '[' in path '\(source)'") }
                let c = chars[index]
                if c == "'" || c == "\"" {
                    index += 1
                    var member = ""
                    while index < chars.count, chars[index] != c {
                        if chars[index] == "\\", index + 1 < chars.count { index += 1 }
                        member.append(chars[index])
                        index += 1
                    }
                    guard index + 1 < chars.count, chars[index + 1] == "]" else {
                        throw Refused(reason: "an unclosed quoted member in path '\(source)'")
                    }
                    index += 2
                    segments.append(.member(member))
                } else if c == "*" {
                    guard index + 1 < chars.count, chars[index + 1] == "]" else {
                        throw Refused(reason: "a malformed [*] in path '\(source)'")
                    }
                    index += 2
                    segments.append(.wildcard)
                } else {
                    var digits = ""
                    while index < chars.count, chars[index].isASCII, chars[index].isNumber, digits.count < 6 {
                        digits.append(chars[index])
                        index += 1
                    }
                    guard let value = Int(digits), index < chars.count, chars[index] == "]" else {
                        throw Refused(reason: "only names, indexes and [*] are supported in path '\(source)'")
                    }
                    index += 1
                    segments.append(.index(value))
                }
            default:
                throw Refused(reason: "unexpected '\(chars[index])' in path '\(source)'")
            }
            guard segments.count <= Self.maxSegments else {
                throw Refused(reason: "a path has more than \(Self.maxSegments) segments")
            }
        }
        if case .descendants = segments.last { throw Refused(reason: "a path cannot end in '..'") }
        self.segments = segments
        self.source = source
    }

    /// The values the path selects in `document`, in document order (object members by name).
    func select(_ document: JSONValue) -> [JSONValue] {
        var current = [document]
        for segment in segments {
            var next: [JSONValue] = []
            for value in current {
                switch segment {
                case .member(let name): if let member = value[name] { next.append(member) }
                case .index(let i):
                    if case .array(let items) = value, i < items.count { next.append(items[i]) }
                case .wildcard: next.append(contentsOf: Self.children(of: value))
                case .descendants: Self.collect(value, into: &next)
                }
            }
            current = next
        }
        return current
    }

    private static func children(of value: JSONValue) -> [JSONValue] {
        switch value {
        case .array(let items): items
        case .object(let fields): fields.keys.sorted().compactMap { fields[$0] }
        default: []
        }
    }

    private static func collect(_ value: JSONValue, into out: inout [JSONValue]) {
        out.append(value)
        for child in children(of: value) { collect(child, into: &out) }
    }
}
