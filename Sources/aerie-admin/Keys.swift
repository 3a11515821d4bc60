import AerieCrypto
import AerieServer
import ArgumentParser
import Foundation
import Logging

struct Keys: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Manage the server's master key.",
        subcommands: [RotateMaster.self]
    )

    struct RotateMaster: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "rotate-master",
            abstract: "Rewrap every tenant's data key under a new master key.",
            discussion: """
                The master key wraps each tenant's data key; the data keys seal the tenants'
                private keys. This rewraps every data key under a new master key in one database
                transaction (all tenants or none) and leaves the sealed private keys as they are,
                so every existing key keeps signing and unpacking.

                The database is reached as `migrate` reaches it: AERIE_DATABASE_URL when set,
                otherwise the embedded cluster of AERIE_HOME (started for the rotation if
                it is not running).

                Key in AERIE_HOME/master-key (the default): the new key is written to
                master-key.new first, the database is rewrapped, then the old key is kept in
                master-key.old and master-key.new becomes master-key. If the command is
                interrupted, run it again: it finds master-key.new and finishes that rotation.
                Running servers pick the new key up by themselves. Keep master-key.old safe
                offline (database backups taken before the rotation need it), then delete it.

                Key in AERIE_MASTER_KEY: the new key is written to the new file given by
                --write-new-key (mode 0600) before the database changes, or taken from
                --new-key-file. Afterwards put it in AERIE_MASTER_KEY (your secret store) and
                restart every aerie-server; until then they cannot open tenants' keys. If the
                command is interrupted, run it again with --new-key-file pointing at that key.

                Exit codes: 0 success, 1 failure (nothing changed in the database unless stated),
                2 usage error.
                """
        )

        @Option(
            name: .customLong("new-key-file"),
            help: "Use this key (base64 of 32 bytes, file mode 0600) instead of generating one.")
        var newKeyFile: String?

        @Option(
            name: .customLong("write-new-key"),
            help: "With AERIE_MASTER_KEY: write the generated key to this new file (mode 0600).")
        var writeNewKey: String?

        @Flag(name: .long, help: "Print JSON instead of text, for scripts.")
        var json = false

        func run() async throws {
            try await reporting {
                let configuration = try DirectDatabaseAccess.configuration()
                var newKey: MasterKey? = nil
                if let newKeyFile {
                    newKey = try Self.readKey(newKeyFile)
                }
                let logger = DirectDatabaseAccess.logger
                let rotation: AerieApplication.MasterKeyRotation
                do {
                    rotation = try await AerieApplication.rotateMasterKey(
                        configuration: configuration, newKey: newKey,
                        writeNewKeyTo: writeNewKey.map { URL(fileURLWithPath: $0) }, logger: logger)
                } catch let failure as AerieApplication.RotationFailure {
                    throw AdminFailure(exitCode: 1, message: failure.description)
                } catch {
                    throw AdminFailure(exitCode: 1, message: "master key rotation failed: \(error)")
                }
                print(json ? Self.json(rotation) : Self.text(rotation))
            }
        }

        static func readKey(_ path: String) throws -> MasterKey {
            let url = URL(fileURLWithPath: path)
            guard let attributes = try? FileManager.default.attributesOfItem(atPath: url.path),
                let text = try? String(contentsOf: url, encoding: .utf8)
            else {
                throw AdminFailure(exitCode: 2, message: "cannot read \(path)")
            }
            if let mode = attributes[.posixPermissions] as? NSNumber, mode.intValue & 0o077 != 0 {
                throw AdminFailure(
                    exitCode: 2, message: "\(path) is readable by group or others; run: chmod 600 \(path)")
            }
            do {
                return try MasterKey(base64: text)
            } catch {
                throw AdminFailure(exitCode: 2, message: "\(path) does not hold a base64 32-byte key")
            }
        }

        static func text(_ rotation: AerieApplication.MasterKeyRotation) -> String {
            var lines = [
                "master key rotated: \(rotation.oldFingerprint) -> \(rotation.newFingerprint)"
                    + (rotation.resumed ? " (finished an interrupted rotation)" : ""),
                "tenants rewrapped: \(rotation.rewrapped)"
                    + (rotation.alreadyRotated > 0 ? ", already under the new key: \(rotation.alreadyRotated)" : ""),
            ]
            switch rotation.source {
            case .file:
                lines.append("new key: \(rotation.newKeyFile?.path ?? "-") (running servers pick it up)")
                if let previous = rotation.previousKeyFile {
                    lines.append(
                        "old key: \(previous.path): database backups taken before now need it; "
                            + "move it to safe offline storage, then delete it")
                }
            case .environment:
                if let file = rotation.newKeyFile { lines.append("new key written to \(file.path)") }
                lines.append(
                    "Now set AERIE_MASTER_KEY to the new key (fingerprint \(rotation.newFingerprint)) wherever "
                        + "aerie-server gets it, and restart every server: until then they cannot open tenants' keys.")
            }
            return lines.joined(separator: "\n")
        }

        static func json(_ rotation: AerieApplication.MasterKeyRotation) -> String {
            var fields: [String: Any] = [
                "source": rotation.source.rawValue, "oldFingerprint": rotation.oldFingerprint,
                "newFingerprint": rotation.newFingerprint, "rewrapped": rotation.rewrapped,
                "alreadyRotated": rotation.alreadyRotated, "resumed": rotation.resumed,
            ]
            if let file = rotation.newKeyFile { fields["newKeyFile"] = file.path }
            if let file = rotation.previousKeyFile { fields["previousKeyFile"] = file.path }
            let data =
                (try? JSONSerialization.data(withJSONObject: fields, options: [.sortedKeys, .withoutEscapingSlashes]))
                ?? Data()
            return String(decoding: data, as: UTF8.self)
        }
    }
}
