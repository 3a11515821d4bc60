import Foundation

/// Finds the `schema/` directory of SQL migrations when none is configured explicitly.
public enum SchemaLocator {
    /// In order: `AERIE_SCHEMA_DIR`; `./schema` in the working directory (a deployment, or a
    /// checkout run from its root); the checkout this file was compiled from (tests and
    /// `swift run` from elsewhere). When none exists it returns the working-directory candidate,
    /// and `Migrator` then reports the missing directory by name.
    public static func defaultDirectory(
        environment: [String: String] = ProcessInfo.processInfo.environment,
        filePath: String = #filePath
    ) -> URL {
        if let configured = environment["AERIE_SCHEMA_DIR"], !configured.isEmpty {
            // An explicit setting is never second-guessed with another schema.
            return URL(fileURLWithPath: configured)
        }
        let workingDirectory = URL(fileURLWithPath: FileManager.default.currentDirectoryPath)
            .appendingPathComponent("schema")
        // <repo>/Sources/AerieStore/Schema/SchemaLocator.swift -> <repo>/schema
        let checkout = URL(fileURLWithPath: filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().deletingLastPathComponent().appendingPathComponent("schema")
        return [workingDirectory, checkout].first(where: isDirectory)?.standardizedFileURL ?? workingDirectory
    }

    private static func isDirectory(_ url: URL) -> Bool {
        var isDirectory: ObjCBool = false
        return FileManager.default.fileExists(atPath: url.path, isDirectory: &isDirectory) && isDirectory.boolValue
    }
}
