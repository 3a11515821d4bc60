import AerieCore
import Foundation

/// The files under Tests/Fixtures (see the README in each folder for where they came from).
enum LinkedDataFixtures {
    static var root: URL {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("Fixtures")
    }

    static func text(_ path: String) throws -> String {
        try String(contentsOf: root.appendingPathComponent(path), encoding: .utf8)
    }

    static func json(_ path: String) throws -> JSONValue {
        try JSONValue(parsing: try text(path))
    }

    static func names(in folder: String, suffix: String) throws -> [String] {
        try FileManager.default.contentsOfDirectory(atPath: root.appendingPathComponent(folder).path)
            .filter { $0.hasSuffix(suffix) }.map { String($0.dropLast(suffix.count)) }.sorted()
    }
}

extension JSONValue {
    /// The value with `path` (object keys and array indexes) replaced by `transform` of it.
    func replacing(_ path: [Any], _ transform: (JSONValue) -> JSONValue) -> JSONValue {
        guard let head = path.first else { return transform(self) }
        let rest = Array(path.dropFirst())
        switch (self, head) {
        case (.object(var fields), let key as String):
            fields[key] = (fields[key] ?? .null).replacing(rest, transform)
            return .object(fields)
        case (.array(var items), let index as Int):
            items[index] = items[index].replacing(rest, transform)
            return .array(items)
        default:
            return self
        }
    }
}
