import Foundation

/// Where a file-based master key lives under `AERIE_HOME`, and the files of a rotation.
enum MasterKeyFiles {
    /// The current key (base64, mode 0600).
    static func current(_ home: URL) -> URL { home.appendingPathComponent("master-key") }
    /// The next key while a rotation is under way: written before the database is rewrapped,
    /// renamed over `current` after. Its presence means a rotation did not finish.
    static func pending(_ home: URL) -> URL { home.appendingPathComponent("master-key.new") }
    /// The key before the last rotation, kept for database backups taken before it.
    static func previous(_ home: URL) -> URL { home.appendingPathComponent("master-key.old") }
}
