import AerieServer
import AerieTesting
import Foundation
import Testing

/// docs/CONFIGURATION.md against the one table of variables `aerie-server` reads: the page names
/// every variable and no other, and a number it gives as a default is the one in force.
@Suite(.timeLimit(.minutes(1))) struct ConfigurationDocumentTests {
    /// The rows of the page's `## aerie-server` section: the variable of the first cell and the
    /// text of the second.
    static func documentedRows() throws -> [(variable: String, shownDefault: String)] {
        let page = try String(
            contentsOf: ACAPyAgent.packageRoot.appendingPathComponent("docs/CONFIGURATION.md"), encoding: .utf8)
        var inSection = false
        var rows: [(String, String)] = []
        for line in page.split(separator: "\n", omittingEmptySubsequences: false) {
            if line.hasPrefix("## ") { inSection = line == "## aerie-server" }
            guard inSection, line.hasPrefix("| `AERIE_") else { continue }
            let cells = line.split(separator: "|").map { $0.trimmingCharacters(in: .whitespaces) }
            #expect(cells.count == 3, "a row of docs/CONFIGURATION.md is not variable | default | meaning: \(line)")
            guard cells.count == 3 else { continue }
            rows.append((cells[0].trimmingCharacters(in: CharacterSet(charactersIn: "`")), cells[1]))
        }
        return rows
    }

    @Test func thePageNamesEveryVariableAndNoOther() throws {
        let documented = try Self.documentedRows().map(\.variable)
        let read = AerieConfiguration.environmentVariableNames
        #expect(read.count > 40)
        #expect(Set(documented).count == documented.count, "a variable has two rows in docs/CONFIGURATION.md")
        for variable in read where !documented.contains(variable) {
            Issue.record("docs/CONFIGURATION.md does not list \(variable)")
        }
        for variable in documented where !read.contains(variable) {
            Issue.record("docs/CONFIGURATION.md lists \(variable), which aerie-server does not read")
        }
    }

    /// A default written as a number ("1 MiB", "10 s", "604800 (7 days)") equals `--help`'s, which
    /// is read from the configuration's properties.
    @Test func numericDefaultsAreTheOnesInForce() throws {
        let help = AerieConfiguration.environmentHelp.split(separator: "\n")
        var compared = 0
        for (variable, shown) in try Self.documentedRows() {
            guard let documented = Self.number(shown),
                let line = help.first(where: { $0.hasPrefix("  \(variable) ") }), line.hasSuffix(")"),
                let open = line.lastIndex(of: "("), let inForce = Int(line[line.index(after: open)...].dropLast())
            else { continue }
            compared += 1
            #expect(documented == inForce, "docs/CONFIGURATION.md gives \(variable) the default \(shown); --help says \(inForce)")
        }
        #expect(compared > 30)
    }

    /// The number a default cell starts with, scaled by its unit; nil when it starts with none.
    static func number(_ cell: String) -> Int? {
        let words = cell.split(separator: " ")
        guard let first = words.first, let value = Int(first) else { return nil }
        switch words.dropFirst().first {
        case "KiB": return value << 10
        case "MiB": return value << 20
        case "GiB": return value << 30
        default: return value
        }
    }

    @Test func theReadmeLinksToThePage() throws {
        let readme = try String(contentsOf: ACAPyAgent.packageRoot.appendingPathComponent("README.md"), encoding: .utf8)
        #expect(readme.contains("(docs/CONFIGURATION.md)"))
    }
}
