import Foundation

/// One numbered SQL file in `schema/`, e.g. `0001_tenants.sql` is version 1, named `tenants`.
public struct Migration: Sendable, Hashable {
    public var version: Int
    public var name: String
    public var file: URL

    /// The migrations in `directory`, in version order. Files not matching `NNNN_name.sql` are
    /// ignored; two files with one version are an error.
    public static func all(in directory: URL) throws -> [Migration] {
        let names: [String]
        do {
            names = try FileManager.default.contentsOfDirectory(atPath: directory.path)
        } catch {
            throw DatabaseSetupError("cannot read the schema directory \(directory.path): \(error)")
        }
        var migrations: [Migration] = []
        for fileName in names where fileName.hasSuffix(".sql") {
            let stem = fileName.dropLast(4)
            let digits = stem.prefix { $0.isASCII && $0.isNumber }
            guard !digits.isEmpty, let version = Int(digits) else { continue }
            let name = stem.dropFirst(digits.count).drop { $0 == "_" || $0 == "-" }
            migrations.append(
                Migration(version: version, name: String(name), file: directory.appendingPathComponent(fileName)))
        }
        migrations.sort { $0.version < $1.version }
        for (previous, next) in zip(migrations, migrations.dropFirst()) where previous.version == next.version {
            throw DatabaseSetupError(
                "two migrations share version \(next.version): \(previous.file.lastPathComponent), \(next.file.lastPathComponent)")
        }
        return migrations
    }
}
