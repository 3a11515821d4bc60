import Foundation

/// Finds the `schema/` directory of SQL migrations when none is configured explicitly.
public enum SchemaLocator {
    /// In order: `AERIE_SCHEMA_DIR`; `./schema` in the working directory (a deployment, or a
    /// checkout run from its root); the checkout this file was compiled from (tests and
    /// `swift run` from elsewhere). When none exists it returns the working-directory candidate,
    /// and `Migrator` then reports the missing directory by name.
    public static func defaultDirectory(
        environment: [String: String] = ProcessInfo.processInfo.environment
    ) -> URL {
        if let configured = environment["AERIE_SCHEMA_DIR"], !configured.isEmpty {
            // An explicit setting is never second-guessed with another schema.
            return URL(fileURLWithPath: configured)
        }
        let workingDirectory = URL(fileURLWithPath: FileManager.default.currentDirectoryPath)
            .appendingPathComponent("schema")
        let checkout = checkoutDirectory()
        return [workingDirectory, checkout].first(where: isDirectory)?.standardizedFileURL ?? workingDirectory
    }

    /// `schema/` of the checkout this file was compiled from:
    /// <repo>/Sources/AerieStore/Schema/SchemaLocator.swift -> <repo>/schema.
    public static func checkoutDirectory() -> URL {
        URL(fileURLWithPath: sourceFile).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().deletingLastPathComponent().appendingPathComponent("schema")
    }

    /// This file's path when it was compiled. (A `#filePath` default argument would be the
    /// caller's file, whose depth in the checkout is not this one's.)
    private static let sourceFile = #filePath

    private static func isDirectory(_ url: URL) -> Bool {
        var isDirectory: ObjCBool = false
        return FileManager.default.fileExists(atPath: url.path, isDirectory: &isDirectory) && isDirectory.boolValue
    }
}
