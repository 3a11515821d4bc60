/// A regular expression from a stranger's `filter.pattern`, matched in time linear in the value
/// (a Thompson NFA run as a Pike VM: no backtracking, so no pattern can run away).
///
/// The subset JSON Schema patterns use in practice: literals, `.`, classes `[a-z0-9_]` and
/// `[^…]`, escapes `\d \w \s \D \W \S` and escaped punctuation, groups `( )` and `(?: )`,
/// alternation `|`, quantifiers `* + ? {m} {m,} {m,n}` (lazy forms match alike), anchors `^ $`.
/// Like ECMA-262 `search`, it matches anywhere unless anchored. Anything else (backreferences,
/// lookaround) is refused when the definition is read.
struct SafePattern: Sendable {
    static let maxPatternLength = 256
    /// Program size after counted repetitions are unrolled.
    static let maxInstructions = 2048

    private enum Instruction: Sendable {
        case char(Character)
        case any
        case set([ClassItem], negated: Bool)
        case split(Int, Int)
        case jump(Int)
        case lineStart
        case lineEnd
        case match
    }

    private enum ClassItem: Sendable {
        case range(Character, Character)
        case digit(Bool), word(Bool), space(Bool)

        func contains(_ c: Character) -> Bool {
            switch self {
            case .range(let low, let high): low <= c && c <= high
            case .digit(let yes): c.isASCII && c.isNumber == yes
            case .word(let yes): (c.isASCII && (c.isLetter || c.isNumber || c == "_")) == yes
            case .space(let yes): c.isWhitespace == yes
            }
        }
    }

    /// The parsed pattern, before compiling.
    private indirect enum Node {
        case empty
        case item(Instruction)
        case sequence([Node])
        case alternation([Node])
        case repeated(Node, min: Int, max: Int?)
    }

    struct Refused: Error, Sendable { let reason: String }

    private let program: [Instruction]
    let source: String

    init(_ source: String) throws(Refused) {
        guard source.count <= Self.maxPatternLength else {
            throw Refused(reason: "a pattern is longer than \(Self.maxPatternLength) characters")
        }
        var parser = Parser(Array(source))
        let node = try parser.parseAlternation()
        guard parser.atEnd else { throw Refused(reason: "unbalanced ')' in pattern") }
        var program: [Instruction] = []
        try Self.compile(node, into: &program)
        program.append(.match)
        self.program = program
        self.source = source
    }

    /// Whether the pattern matches somewhere in `text`.
    func matches(_ text: String) -> Bool {
        let input = Array(text)
        var current: [Int] = []
        var seen = Array(repeating: -1, count: program.count)
        for position in 0...input.count {
            // Unanchored: a new thread starts at every position.
            add(0, at: position, count: input.count, to: &current, seen: &seen, generation: position)
            if current.contains(where: { if case .match = program[$0] { true } else { false } }) { return true }
            guard position < input.count else { break }
            let c = input[position]
            var next: [Int] = []
            for pc in current {
                let advances: Bool =
                    switch program[pc] {
                    case .char(let expected): c == expected
                    case .any: c != "\n"
                    case .set(let items, let negated): items.contains { $0.contains(c) } != negated
                    default: false
                    }
                if advances {
                    add(pc + 1, at: position + 1, count: input.count, to: &next, seen: &seen, generation: position + 1)
                }
            }
            current = next
        }
        return false
    }

    /// Follows jumps, splits and anchors from `pc`, adding each thread once per step.
    private func add(_ pc: Int, at position: Int, count: Int, to list: inout [Int], seen: inout [Int], generation: Int) {
        var stack = [pc]
        while let pc = stack.popLast() {
            guard seen[pc] != generation else { continue }
            seen[pc] = generation
            switch program[pc] {
            case .jump(let target): stack.append(target)
            case .split(let first, let second):
                stack.append(second)
                stack.append(first)
            case .lineStart: if position == 0 { stack.append(pc + 1) }
            case .lineEnd: if position == count { stack.append(pc + 1) }
            default: list.append(pc)
            }
        }
    }

    private static func compile(_ node: Node, into program: inout [Instruction]) throws(Refused) {
        guard program.count < maxInstructions else {
            throw Refused(reason: "a pattern is too large once its repetitions are counted out")
        }
        switch node {
        case .empty: break
        case .item(let instruction): program.append(instruction)
        case .sequence(let nodes): for node in nodes { try compile(node, into: &program) }
        case .alternation(let branches):
            var jumps: [Int] = []
            for (index, branch) in branches.enumerated() {
                if index < branches.count - 1 {
                    let split = program.count
                    program.append(.split(split + 1, -1))
                    try compile(branch, into: &program)
                    jumps.append(program.count)
                    program.append(.jump(-1))
                    program[split] = .split(split + 1, program.count)
                } else {
                    try compile(branch, into: &program)
                }
            }
            for jump in jumps { program[jump] = .jump(program.count) }
        case .repeated(let inner, let min, let max):
            for _ in 0..<min { try compile(inner, into: &program) }
            if let max {
                // Each optional copy may be skipped to the end.
                var splits: [Int] = []
                for _ in min..<max {
                    splits.append(program.count)
                    program.append(.split(program.count + 1, -1))
                    try compile(inner, into: &program)
                }
                for split in splits { program[split] = .split(split + 1, program.count) }
            } else {
                let split = program.count
                program.append(.split(split + 1, -1))
                try compile(inner, into: &program)
                program.append(.jump(split))
                program[split] = .split(split + 1, program.count)
            }
        }
        guard program.count <= maxInstructions else {
            throw Refused(reason: "a pattern is too large once its repetitions are counted out")
        }
    }

    private struct Parser {
        let chars: [Character]
        var index = 0
        var depth = 0

        init(_ chars: [Character]) { self.chars = chars }

        var atEnd: Bool { index >= chars.count }
        var peek: Character? { index < chars.count ? chars[index] : nil }

        mutating func parseAlternation() throws(Refused) -> Node {
            var branches = [try parseSequence()]
            while peek == "|" {
                index += 1
                branches.append(try parseSequence())
            }
            return branches.count == 1 ? branches[0] : .alternation(branches)
        }

        mutating func parseSequence() throws(Refused) -> Node {
            var items: [Node] = []
            while let c = peek, c != "|", c != ")" {
                var atom = try parseAtom()
                while let q = peek, "*+?{".contains(q) {
                    if case .item(.lineStart) = atom { throw Refused(reason: "a quantifier on an anchor in pattern") }
                    if case .item(.lineEnd) = atom { throw Refused(reason: "a quantifier on an anchor in pattern") }
                    atom = try parseQuantifier(atom)
                }
                items.append(atom)
            }
            return items.count == 1 ? items[0] : (items.isEmpty ? .empty : .sequence(items))
        }

        mutating func parseQuantifier(_ atom: Node) throws(Refused) -> Node {
            let q = chars[index]
            index += 1
            let node: Node
            switch q {
            case "*": node = .repeated(atom, min: 0, max: nil)
            case "+": node = .repeated(atom, min: 1, max: nil)
            case "?": node = .repeated(atom, min: 0, max: 1)
            default:
                let min = try number()
                var max: Int? = min
                if peek == "," {
                    index += 1
                    max = peek == "}" ? nil : try number()
                }
                guard peek == "}" else { throw Refused(reason: "a malformed {m,n} in pattern") }
                index += 1
                if let max, max < min { throw Refused(reason: "a {m,n} with n below m in pattern") }
                node = .repeated(atom, min: min, max: max)
            }
            if peek == "?" { index += 1 }  // lazy: the same language
            return node
        }

        mutating func number() throws(Refused) -> Int {
            var digits = ""
            while let c = peek, c.isASCII, c.isNumber, digits.count < 4 {
                digits.append(c)
                index += 1
            }
            guard let value = Int(digits), value <= 1000 else { throw Refused(reason: "a malformed {m,n} in pattern") }
            return value
        }

        mutating func parseAtom() throws(Refused) -> Node {
            let c = chars[index]
            index += 1
            switch c {
            case "^": return .item(.lineStart)
            case "$": return .item(.lineEnd)
            case ".": return .item(.any)
            case "(":
                if peek == "?" {
                    guard index + 1 < chars.count, chars[index + 1] == ":" else {
                        throw Refused(reason: "lookaround and named groups are not supported in pattern")
                    }
                    index += 2
                }
                depth += 1
                guard depth <= 16 else { throw Refused(reason: "groups nested too deep in pattern") }
                let inner = try parseAlternation()
                guard peek == ")" else { throw Refused(reason: "an unclosed '(' in pattern") }
                index += 1
                depth -= 1
                return inner
            case "[": return .item(try parseClass())
            case "\\": return .item(try parseEscape(inClass: false).instruction)
            case "*", "+", "?", "{": throw Refused(reason: "a quantifier with nothing to repeat in pattern")
            default: return .item(.char(c))
            }
        }

        mutating func parseEscape(inClass: Bool) throws(Refused) -> (instruction: Instruction, item: ClassItem) {
            guard let c = peek else { throw Refused(reason: "a pattern ends in '\\'") }
            index += 1
            let item: ClassItem
            switch c {
            case "d": item = .digit(true)
            case "D": item = .digit(false)
            case "w": item = .word(true)
            case "W": item = .word(false)
            case "s": item = .space(true)
            case "S": item = .space(false)
            case "n": item = .range("\n", "\n")
            case "t": item = .range("\t", "\t")
            default:
                guard !c.isLetter, !c.isNumber else { throw Refused(reason: "the escape \\\(c) is not supported in pattern") }
                item = .range(c, c)
            }
            if case .range(let low, let high) = item, low == high { return (.char(low), item) }
            return (.set([item], negated: false), item)
        }

        mutating func parseClass() throws(Refused) -> Instruction {
            var negated = false
            if peek == "^" {
                negated = true
                index += 1
            }
            var items: [ClassItem] = []
            var first = true
            while let c = peek, c != "]" || first {
                first = false
                index += 1
                var low: Character = c
                if c == "\\" {
                    let escaped = try parseEscape(inClass: true).item
                    guard case .range(let l, let h) = escaped, l == h else {
                        items.append(escaped)
                        continue
                    }
                    low = l
                }
                if peek == "-", index + 1 < chars.count, chars[index + 1] != "]" {
                    index += 1
                    var high = chars[index]
                    index += 1
                    if high == "\\" {
                        guard case .range(let l, let h) = try parseEscape(inClass: true).item, l == h else {
                            throw Refused(reason: "a class range ends in a class escape in pattern")
                        }
                        high = l
                    }
                    guard low <= high else { throw Refused(reason: "a class range out of order in pattern") }
                    items.append(.range(low, high))
                } else {
                    items.append(.range(low, low))
                }
            }
            guard peek == "]" else { throw Refused(reason: "an unclosed '[' in pattern") }
            index += 1
            return .set(items, negated: negated)
        }
    }
}
