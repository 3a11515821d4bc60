import AerieCore
import Foundation

/// One numbered schema change: a SQL file of `schema/` (`0001_tenants.sql` is version 1, named
/// `tenants`) or a migration a plugin ships (`PluginStorage.migrations`).
public struct Migration: Sendable, Hashable {
    public enum Source: Sendable, Hashable {
        case file(URL)
        /// SQL text compiled into plugin `plugin`.
        case plugin(String, sql: String)
    }

    public var version: Int
    public var name: String
    public var source: Source

    public init(version: Int, name: String, source: Source) {
        self.version = version
        self.name = name
        self.source = source
    }

    /// `migration` of `plugin`.
    public init(_ migration: SchemaMigration, plugin: String) {
        self.init(version: migration.version, name: migration.name, source: .plugin(plugin, sql: migration.sql))
    }

    /// Where it comes from, for messages: the file's name, or the plugin's migration.
    public var origin: String {
        switch source {
        case .file(let url): url.lastPathComponent
        case .plugin(let plugin, _): "\(String(format: "%04d", version))_\(name) of plugin \(plugin)"
        }
    }

    /// The SQL to run.
    public func sql() throws -> String {
        switch source {
        case .file(let url):
            do {
                return try String(contentsOf: url, encoding: .utf8)
            } catch {
                throw DatabaseSetupError("cannot read migration \(url.path): \(error)")
            }
        case .plugin(_, let sql):
            return sql
        }
    }

    /// The migrations in `directory`, in version order. Files not matching `NNNN_name.sql` are
    /// ignored; two files with one version are an error.
    public static func all(in directory: URL) throws -> [Migration] {
        try all(in: directory, plugins: [])
    }

    /// The migrations in `directory` and `plugins`', merged in version order. Two with one
    /// version (two files, a file and a plugin's, two plugins') are an error naming both.
    public static func all(in directory: URL, plugins: [Migration]) throws -> [Migration] {
        let names: [String]
        do {
            names = try FileManager.default.contentsOfDirectory(atPath: directory.path)
        } catch {
            throw DatabaseSetupError("cannot read the schema directory \(directory.path): \(error)")
        }
        var migrations: [Migration] = plugins
        for fileName in names where fileName.hasSuffix(".sql") {
            let stem = fileName.dropLast(4)
            let digits = stem.prefix { $0.isASCII && $0.isNumber }
            guard !digits.isEmpty, let version = Int(digits) else { continue }
            let name = stem.dropFirst(digits.count).drop { $0 == "_" || $0 == "-" }
            migrations.append(
                Migration(version: version, name: String(name), source: .file(directory.appendingPathComponent(fileName))))
        }
        migrations.sort { $0.version < $1.version }
        for (previous, next) in zip(migrations, migrations.dropFirst()) where previous.version == next.version {
            throw DatabaseSetupError("two migrations share version \(next.version): \(previous.origin), \(next.origin)")
        }
        return migrations
    }
}
