import Foundation

/// Where `initdb` and `pg_ctl` live: `AERIE_PG_BIN`, else the highest version under
/// `/usr/lib/postgresql/*/bin` (Debian and Ubuntu keep them off PATH), else PATH.
struct PostgresBinaries: Sendable {
    var initdb: URL
    var pgCtl: URL

    static func locate(environment: [String: String] = ProcessInfo.processInfo.environment) throws -> PostgresBinaries {
        var candidates: [URL] = []
        if let configured = environment["AERIE_PG_BIN"], !configured.isEmpty {
            candidates.append(URL(fileURLWithPath: configured))
        }
        let debianRoot = "/usr/lib/postgresql"
        let versions = (try? FileManager.default.contentsOfDirectory(atPath: debianRoot)) ?? []
        for version in versions.compactMap(Double.init).sorted(by: >) {
            let name = version == version.rounded() ? String(Int(version)) : String(version)
            candidates.append(URL(fileURLWithPath: "\(debianRoot)/\(name)/bin"))
        }
        for directory in (environment["PATH"] ?? "").split(separator: ":") {
            candidates.append(URL(fileURLWithPath: String(directory)))
        }
        for directory in candidates {
            let initdb = directory.appendingPathComponent("initdb")
            let pgCtl = directory.appendingPathComponent("pg_ctl")
            if FileManager.default.isExecutableFile(atPath: initdb.path),
                FileManager.default.isExecutableFile(atPath: pgCtl.path)
            {
                return PostgresBinaries(initdb: initdb, pgCtl: pgCtl)
            }
        }
        throw DatabaseSetupError(
            "PostgreSQL server binaries (initdb, pg_ctl) not found in AERIE_PG_BIN, /usr/lib/postgresql/*/bin or PATH; "
                + "install them (Debian: apt-get install postgresql) or set AERIE_DATABASE_URL")
    }
}
