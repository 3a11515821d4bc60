import Foundation

/// Finds executables built alongside the test binary (`swift test` builds every product).
public enum BuiltProducts {
    public struct Missing: Error, CustomStringConvertible {
        public let description: String
    }

    public static func executable(_ name: String) throws -> URL {
        let testBinary = URL(fileURLWithPath: CommandLine.arguments[0]).resolvingSymlinksInPath()
        var candidates = [testBinary.deletingLastPathComponent()]
        // The .xctest bundle may be a directory on some platforms.
        candidates.append(testBinary.deletingLastPathComponent().deletingLastPathComponent())
        candidates.append(URL(fileURLWithPath: ".build/debug"))
        for directory in candidates {
            let url = directory.appendingPathComponent(name)
            if FileManager.default.isExecutableFile(atPath: url.path) { return url }
        }
        throw Missing(description: "\(name) is not built next to the tests; run `swift build` first")
    }
}
