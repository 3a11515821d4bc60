import AerieCore
import AerieCrypto
import Foundation
import Logging
import Synchronization

/// The server's master keys: the one that wraps new tenants' data keys, and any other it can
/// unwrap with. A wrapped data key names its master key (fingerprint), so unwrapping picks the
/// right one.
///
/// With a file-based key (`AERIE_HOME/master-key`), a data key wrapped by a master key the
/// server lacks makes it re-read the key files (at most once a second): a running server
/// follows `aerie-admin keys rotate-master` without a restart, and an unfinished rotation's
/// `master-key.new` is usable too. A key from `AERIE_MASTER_KEY` changes only on restart.
final class MasterKeyring: Sendable {
    private struct State {
        /// `keys[0]` wraps new data keys.
        var keys: [MasterKey]
        var lastReload: ContinuousClock.Instant?
    }

    private let state: Mutex<State>
    /// `AERIE_HOME`, when the keys come from files.
    private let home: URL?
    static let reloadInterval: Duration = .seconds(1)

    init(keys: [MasterKey], home: URL?) {
        precondition(!keys.isEmpty)
        self.state = Mutex(State(keys: keys, lastReload: nil))
        self.home = home
    }

    /// Loads `AERIE_MASTER_KEY`, or `AERIE_HOME/master-key` (created on first start) plus an
    /// unfinished rotation's `master-key.new`.
    static func load(_ secrets: AerieConfiguration.Secrets, home: URL, logger: Logger) throws -> MasterKeyring {
        if let base64 = secrets.masterKeyBase64 {
            do {
                return MasterKeyring(keys: [try MasterKey(base64: base64)], home: nil)
            } catch {
                throw AerieConfiguration.Invalid(description: "AERIE_MASTER_KEY must be the base64 of 32 bytes")
            }
        }
        var keys = try readKeyFiles(home)
        if keys.isEmpty {
            let key = MasterKey.generate()
            try SecretFile.create(MasterKeyFiles.current(home), contents: key.base64)
            keys = [key]
        } else if keys.count > 1 {
            logger.warning(
                "a master key rotation did not finish; run `aerie-admin keys rotate-master` again to complete it",
                metadata: ["pending": "\(MasterKeyFiles.pending(home).path)"])
        }
        return MasterKeyring(keys: keys, home: home)
    }

    /// `master-key`, then `master-key.new` if present (never `master-key.old`).
    static func readKeyFiles(_ home: URL) throws -> [MasterKey] {
        var keys: [MasterKey] = []
        for file in [MasterKeyFiles.current(home), MasterKeyFiles.pending(home)] {
            guard let text = try SecretFile.read(file) else { continue }
            do {
                let key = try MasterKey(base64: text)
                if !keys.contains(where: { $0.fingerprint == key.fingerprint }) { keys.append(key) }
            } catch {
                throw AerieConfiguration.Invalid(description: "\(file.path) does not hold a base64 32-byte master key")
            }
        }
        return keys
    }

    /// The key that wraps new tenants' data keys.
    var current: MasterKey { state.withLock { $0.keys[0] } }

    var fingerprints: [String] { state.withLock { $0.keys.map(\.fingerprint) } }

    /// The key with `fingerprint`, re-reading the key files once if it is not known yet.
    func key(fingerprint: String) -> MasterKey? {
        if let key = known(fingerprint) { return key }
        reloadIfDue()
        return known(fingerprint)
    }

    /// Makes the key with `fingerprint` the one that wraps new data keys (the database's tenants
    /// use it: a rotation happened). Nil when the server does not have it.
    func adopt(fingerprint: String) -> MasterKey? {
        guard let key = key(fingerprint: fingerprint) else { return nil }
        state.withLock { state in
            state.keys.removeAll { $0.fingerprint == fingerprint }
            state.keys.insert(key, at: 0)
        }
        return key
    }

    /// Unwraps a tenant's data key with whichever master key wrapped it.
    func unwrap(_ wrapped: [UInt8], tenantID: TenantID) throws -> DataKey {
        guard let fingerprint = MasterKey.fingerprint(ofWrapped: wrapped) else {
            return try current.unwrap(wrapped, tenantID: tenantID.rawValue)  // throws: not a wrapped key
        }
        guard let key = key(fingerprint: fingerprint) else {
            throw CryptoError(
                .wrongMasterKey,
                "data key was wrapped by master key \(fingerprint), which this server does not have",
                details: "server master keys: \(fingerprints.joined(separator: ", "))")
        }
        return try key.unwrap(wrapped, tenantID: tenantID.rawValue)
    }

    private func known(_ fingerprint: String) -> MasterKey? {
        state.withLock { $0.keys.first { $0.fingerprint == fingerprint } }
    }

    private func reloadIfDue() {
        guard let home else { return }
        let now = ContinuousClock.now
        let due = state.withLock { state in
            if let last = state.lastReload, now - last < Self.reloadInterval { return false }
            state.lastReload = now
            return true
        }
        guard due, let files = try? Self.readKeyFiles(home), let newest = files.first else { return }
        state.withLock { state in
            // The file named master-key is the current key; keep the others for unwrapping.
            let others = state.keys.filter { key in !files.contains { $0.fingerprint == key.fingerprint } }
            state.keys = [newest] + files.dropFirst() + others
        }
    }
}
