extension RDFDataset {
    /// Reads N-Quads text (one statement a line, as RDF 1.1 N-Quads defines; comments and blank
    /// lines skipped). Throws `invalid_encoding` naming the line that does not parse.
    public init(nQuads text: String) throws {
        var quads: [RDFQuad] = []
        for (number, line) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            var reader = NQuadsLineReader(Array(String(line).unicodeScalars))
            do {
                if let quad = try reader.quad() { quads.append(quad) }
            } catch {
                throw CryptoError(
                    .invalidEncoding, "N-Quads line \(number + 1) does not parse: \(reader.problem)",
                    details: String(line.prefix(200)))
            }
        }
        self.init(quads: quads)
    }
}

private struct NQuadsLineReader {
    struct Failure: Error {}
    let scalars: [Unicode.Scalar]
    var position = 0
    var problem = ""

    init(_ scalars: [Unicode.Scalar]) { self.scalars = scalars }

    mutating func quad() throws -> RDFQuad? {
        skipSpace()
        if position == scalars.count || scalars[position] == "#" { return nil }
        let subject = try term()
        skipSpace()
        let predicate = try term()
        skipSpace()
        let object = try term()
        skipSpace()
        var graph: RDFTerm?
        if position < scalars.count && scalars[position] != "." {
            graph = try term()
            skipSpace()
        }
        guard position < scalars.count, scalars[position] == "." else { return try fail("expected '.'") }
        position += 1
        skipSpace()
        guard position == scalars.count || scalars[position] == "#" else { return try fail("text after '.'") }
        guard case .iri = predicate else { return try fail("predicate is not an IRI") }
        if case .literal = subject { return try fail("literal subject") }
        return RDFQuad(subject: subject, predicate: predicate, object: object, graph: graph)
    }

    private mutating func fail<T>(_ message: String) throws -> T {
        problem = message
        throw Failure()
    }

    private mutating func skipSpace() {
        while position < scalars.count && (scalars[position] == " " || scalars[position] == "\t" || scalars[position] == "\r") {
            position += 1
        }
    }

    private mutating func term() throws -> RDFTerm {
        guard position < scalars.count else { return try fail("unexpected end of line") }
        switch scalars[position] {
        case "<": return .iri(try iri())
        case "_":
            guard position + 1 < scalars.count, scalars[position + 1] == ":" else { return try fail("bad blank node") }
            position += 2
            var label = ""
            while position < scalars.count, scalars[position] != " ", scalars[position] != "\t" {
                label.unicodeScalars.append(scalars[position])
                position += 1
            }
            // A label may hold '.' but not end with one: that is the statement's end.
            while label.hasSuffix(".") {
                label.removeLast()
                position -= 1
            }
            guard !label.isEmpty else { return try fail("empty blank node label") }
            return .blankNode(label)
        case "\"":
            position += 1
            var value = ""
            while true {
                guard position < scalars.count else { return try fail("unterminated literal") }
                let scalar = scalars[position]
                position += 1
                if scalar == "\"" { break }
                if scalar == "\\" {
                    value.unicodeScalars.append(try escape())
                } else {
                    value.unicodeScalars.append(scalar)
                }
            }
            if position < scalars.count && scalars[position] == "@" {
                position += 1
                var language = ""
                while position < scalars.count, scalars[position].properties.isAlphabetic || scalars[position] == "-" || ("0"..."9").contains(scalars[position]) {
                    language.unicodeScalars.append(scalars[position])
                    position += 1
                }
                return .literal(value, datatype: JSONLDProcessor.rdfLangString, language: language)
            }
            if position + 1 < scalars.count && scalars[position] == "^" && scalars[position + 1] == "^" {
                position += 2
                return .literal(value, datatype: try iri(), language: nil)
            }
            return .literal(value, datatype: JSONLDProcessor.xsdString, language: nil)
        default:
            return try fail("unexpected character \(scalars[position])")
        }
    }

    private mutating func iri() throws -> String {
        guard position < scalars.count, scalars[position] == "<" else { return try fail("expected '<'") }
        position += 1
        var value = ""
        while true {
            guard position < scalars.count else { return try fail("unterminated IRI") }
            let scalar = scalars[position]
            position += 1
            if scalar == ">" { return value }
            if scalar == "\\" {
                value.unicodeScalars.append(try escape())
            } else {
                value.unicodeScalars.append(scalar)
            }
        }
    }

    private mutating func escape() throws -> Unicode.Scalar {
        guard position < scalars.count else { return try fail("bad escape") }
        let scalar = scalars[position]
        position += 1
        switch scalar {
        case "t": return "\t"
        case "b": return "\u{08}"
        case "n": return "\n"
        case "r": return "\r"
        case "f": return "\u{0C}"
        case "\"": return "\""
        case "'": return "'"
        case "\\": return "\\"
        case "u", "U":
            let count = scalar == "u" ? 4 : 8
            guard position + count <= scalars.count,
                let code = UInt32(String(String.UnicodeScalarView(scalars[position..<(position + count)])), radix: 16),
                let decoded = Unicode.Scalar(code)
            else { return try fail("bad \\u escape") }
            position += count
            return decoded
        default:
            return try fail("bad escape \\\(scalar)")
        }
    }
}
