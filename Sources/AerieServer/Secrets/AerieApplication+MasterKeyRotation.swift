import AerieCore
import AerieCrypto
import AerieStore
import Foundation
import Logging

extension AerieApplication {
    /// What `rotateMasterKey` did.
    public struct MasterKeyRotation: Sendable {
        public enum KeySource: String, Sendable {
            /// `AERIE_HOME/master-key`, now holding the new key.
            case file
            /// `AERIE_MASTER_KEY`: the operator must put the new key in place and restart.
            case environment
        }

        public var source: KeySource
        public var oldFingerprint: String
        public var newFingerprint: String
        /// Tenants whose data key was rewrapped now.
        public var rewrapped: Int
        /// Tenants already under the new key (a resumed rotation).
        public var alreadyRotated: Int
        /// Whether this finished a rotation that an earlier run started.
        public var resumed: Bool
        /// Where the new key is: `AERIE_HOME/master-key`, or the `writeNewKeyTo` file (nil when
        /// the caller supplied the key).
        public var newKeyFile: URL?
        /// Where the previous key was kept (file-based keys): backups taken before this
        /// rotation need it.
        public var previousKeyFile: URL?
    }

    public struct RotationFailure: Error, CustomStringConvertible {
        public let description: String
    }

    /// `aerie-admin keys rotate-master`: wraps every tenant's data key under a new master key, in
    /// one database transaction, without touching the sealed private keys (they are sealed by the
    /// data keys, which do not change).
    ///
    /// The order makes a crash at any point recoverable, and no key is ever lost:
    /// - File-based key: the new key is written to `master-key.new` (0600, synced) first; then
    ///   the database is rewrapped and committed; then the old key is copied to `master-key.old`
    ///   and `master-key.new` is renamed over `master-key`. Running again after a crash finds
    ///   `master-key.new` and finishes the same rotation (tenants already rewrapped are left
    ///   alone); meanwhile servers can unwrap with either key.
    /// - `AERIE_MASTER_KEY`: the new key is written to `writeNewKeyTo` (a new 0600 file) before
    ///   the database changes, unless the caller supplied `newKey` (then it already has it). To
    ///   resume, run again with that key as `newKey`.
    ///
    /// Every tenant's key must be wrapped by the current master key (or already by the new
    /// one): otherwise nothing changes and this throws.
    public static func rotateMasterKey(
        configuration: AerieConfiguration, newKey: MasterKey? = nil, writeNewKeyTo: URL? = nil, logger: Logger
    ) async throws -> MasterKeyRotation {
        if let base64 = configuration.secrets.masterKeyBase64 {
            let old: MasterKey
            do {
                old = try MasterKey(base64: base64)
            } catch {
                throw RotationFailure(description: "AERIE_MASTER_KEY must be the base64 of 32 bytes")
            }
            let new = newKey ?? MasterKey.generate()
            guard new.fingerprint != old.fingerprint else {
                throw RotationFailure(description: "the new master key is the current one (\(old.fingerprint))")
            }
            var newKeyFile: URL? = nil
            if newKey == nil {
                guard let writeNewKeyTo else {
                    throw RotationFailure(
                        description: "AERIE_MASTER_KEY is set, so the new key cannot go to AERIE_HOME/master-key: "
                            + "give a new file to write it to (--write-new-key PATH), or a key you made (--new-key-file PATH)"
                    )
                }
                try SecretFile.create(writeNewKeyTo, contents: new.base64)
                try SecretFile.syncDirectory(of: writeNewKeyTo)
                newKeyFile = writeNewKeyTo
            }
            let count = try await rewrapAll(
                configuration: configuration, from: old, to: new, forgettingOnRefusal: newKeyFile, logger: logger)
            return MasterKeyRotation(
                source: .environment, oldFingerprint: old.fingerprint, newFingerprint: new.fingerprint,
                rewrapped: count.rewrapped, alreadyRotated: count.unchanged, resumed: false, newKeyFile: newKeyFile,
                previousKeyFile: nil)
        }

        guard writeNewKeyTo == nil else {
            throw RotationFailure(
                description:
                    "the master key is AERIE_HOME/master-key, which receives the new key; --write-new-key is for AERIE_MASTER_KEY"
            )
        }
        let home = configuration.home
        let currentFile = MasterKeyFiles.current(home)
        let pendingFile = MasterKeyFiles.pending(home)
        let previousFile = MasterKeyFiles.previous(home)
        guard let oldText = try SecretFile.read(currentFile) else {
            throw RotationFailure(
                description:
                    "no master key at \(currentFile.path) (set AERIE_HOME, or AERIE_MASTER_KEY if the server uses it)")
        }
        guard let old = try? MasterKey(base64: oldText) else {
            throw RotationFailure(description: "\(currentFile.path) does not hold a base64 32-byte master key")
        }
        let new: MasterKey
        var resumed = false
        var createdPending = false
        if let pendingText = try SecretFile.read(pendingFile) {
            guard let pending = try? MasterKey(base64: pendingText), pending.fingerprint != old.fingerprint else {
                throw RotationFailure(
                    description: "\(pendingFile.path) does not hold a new master key; inspect and remove it")
            }
            if let newKey, newKey.fingerprint != pending.fingerprint {
                throw RotationFailure(
                    description:
                        "an unfinished rotation to master key \(pending.fingerprint) is pending in \(pendingFile.path); "
                        + "run again without --new-key-file to finish it first")
            }
            new = pending
            resumed = true
            logger.notice("finishing an unfinished master key rotation", metadata: ["new": "\(new.fingerprint)"])
        } else {
            new = newKey ?? MasterKey.generate()
            guard new.fingerprint != old.fingerprint else {
                throw RotationFailure(description: "the new master key is the current one (\(old.fingerprint))")
            }
            try SecretFile.create(pendingFile, contents: new.base64)
            try SecretFile.syncDirectory(of: pendingFile)
            createdPending = true
        }

        let count = try await rewrapAll(
            configuration: configuration, from: old, to: new, forgettingOnRefusal: createdPending ? pendingFile : nil,
            logger: logger)

        // The database now needs the new key. Keep the old one for backups, then switch.
        try SecretFile.replace(previousFile, contents: old.base64)
        try SecretFile.move(pendingFile, to: currentFile)
        try SecretFile.syncDirectory(of: currentFile)
        return MasterKeyRotation(
            source: .file, oldFingerprint: old.fingerprint, newFingerprint: new.fingerprint,
            rewrapped: count.rewrapped, alreadyRotated: count.unchanged, resumed: resumed, newKeyFile: currentFile,
            previousKeyFile: previousFile)
    }

    /// Rewraps every tenant data key from `old` to `new` in one transaction. When the database
    /// refuses before COMMIT, `forgettingOnRefusal` (a key file this run created) is removed: nothing
    /// depends on it.
    private static func rewrapAll(
        configuration: AerieConfiguration, from old: MasterKey, to new: MasterKey, forgettingOnRefusal createdFile: URL?,
        logger: Logger
    ) async throws -> DataKeyRewrapCount {
        do {
            return try await rewrapAll(configuration: configuration, from: old, to: new, logger: logger)
        } catch let failure as RotationFailure {
            if let createdFile { try? FileManager.default.removeItem(at: createdFile) }
            throw failure
        }
    }

    private static func rewrapAll(
        configuration: AerieConfiguration, from old: MasterKey, to new: MasterKey, logger: Logger
    ) async throws -> DataKeyRewrapCount {
        try await withRuntimeDatabase(configuration: configuration, logger: logger) { database in
            let count = try await database.tenants.rewrapDataKeys(newFingerprint: new.fingerprint) { id, wrapped in
                switch MasterKey.fingerprint(ofWrapped: wrapped) {
                case new.fingerprint:
                    guard new.opens(wrapped, tenantID: id.rawValue) else {
                        throw RotationFailure(
                            description: "tenant \(id)'s data key does not open under the new master key")
                    }
                    return nil
                case old.fingerprint:
                    return try old.rewrap(wrapped, tenantID: id.rawValue, to: new)
                case let other:
                    throw RotationFailure(
                        description:
                            "tenant \(id)'s data key is wrapped by master key \(other ?? "(unreadable)"), neither the "
                            + "current one (\(old.fingerprint)) nor the new one; nothing was changed")
                }
            }
            // Webhook secrets are wrapped like data keys; one wrapped by neither key is already
            // unusable (its delivery says so) and stays as it is.
            let webhooks = try await database.webhooks.rewrapSecrets { backend, generation, wrapped in
                guard MasterKey.fingerprint(ofWrapped: wrapped) == old.fingerprint else { return nil }
                return try old.rewrapWebhookSecret(wrapped, backendID: backend.rawValue, generation: generation, to: new)
            }
            if webhooks > 0 { logger.info("webhook secrets rewrapped", metadata: ["count": "\(webhooks)"]) }
            return count
        }
    }

    /// Runs `body` with a runtime-role pool on the configured database, or on the embedded
    /// cluster (started for the purpose and stopped again if it was not running).
    static func withRuntimeDatabase<T: Sendable>(
        configuration: AerieConfiguration, logger: Logger, _ body: (AerieDatabase) async throws -> T
    ) async throws -> T {
        try await withCluster(configuration, logger: logger) { cluster in
            let database = AerieDatabase(
                configuration: DatabaseConfiguration(conninfo: cluster.runtimeURL, maxConnections: 1), logger: logger)
            do {
                let result = try await body(database)
                await database.shutdown()
                return result
            } catch {
                await database.shutdown()
                throw error
            }
        }
    }
}
