import AerieCrypto
import AerieStore
import Foundation
import Logging

extension AerieApplication {
    /// Admin tokens start with this; tenant tokens with `aerie_t_`.
    static let adminTokenPrefix = "aerie_a_"

    /// Where the first start writes the admin token, and `aerie-admin admin rotate-token` the new one.
    public static func adminTokenFile(home: URL) -> URL {
        home.appendingPathComponent("admin-token")
    }

    /// Writes `token` to `file` (mode 0600) in place of what was there: a temporary 0600 file
    /// renamed over it, so the file is never partly written or readable by others.
    public static func writeAdminTokenFile(_ token: String, to file: URL) throws {
        try SecretFile.replace(file, contents: token)
        try SecretFile.syncDirectory(of: file)
    }

    /// The way back in when no admin token is at hand (the first-start file was never written,
    /// or was lost): issues a new admin token directly in the database the server uses, with its
    /// own configuration (`AERIE_DATABASE_URL`, or the embedded cluster of `AERIE_HOME`),
    /// stores only its hash and writes the token to `file` (0600). The file is written first, as
    /// `admin-token.new`, and renamed once the database has the hash, so neither step can leave
    /// a token that works nowhere. Any admin session still open stops at its next call.
    public static func resetAdminToken(configuration: AerieConfiguration, file: URL, logger: Logger) async throws {
        let token = TokenHasher.generate(prefix: adminTokenPrefix)
        let pending = file.appendingPathExtension("new")
        try? FileManager.default.removeItem(at: pending)
        try SecretFile.create(pending, contents: token)
        do {
            try await withRuntimeDatabase(configuration: configuration, logger: logger) { database in
                try await database.tenants.setAdminTokenHash(TokenHasher.hash(token))
            }
        } catch {
            try? FileManager.default.removeItem(at: pending)
            throw error
        }
        try SecretFile.move(pending, to: file)
        try SecretFile.syncDirectory(of: file)
    }
}
