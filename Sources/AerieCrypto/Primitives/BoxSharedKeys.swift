import Synchronization

/// `crypto_box` shared keys (`crypto_box_beforenm`: the X25519 Diffie-Hellman, hashed), kept per
/// tenant (`scope`) for a pair of keys: our Ed25519 verkey and the peer's X25519 public key. A
/// connection flow boxes between the same two keys several times (the Response opened, the trust
/// ping packed, every later message each way), and each `crypto_box_easy` / `crypto_box_open_easy`
/// recomputes the scalar multiplication; with the shared key kept, a repeated pair costs only the
/// cipher. The same bytes on the wire: `crypto_box_easy` is `beforenm` then `easy_afternm`.
///
/// These are secrets derived from the tenant's private keys:
/// - an entry is reachable only with our key pair in hand (the caller opened it from the key
///   wallet for this call) and its tenant: the tenant is part of the key, so two tenants holding
///   the same key pair never share an entry, and how fast one tenant's message opens says nothing
///   about another's peers;
/// - stored in `SecretBytes` (zeroed when released), never printed or logged;
/// - bounded: two generations of at most `capacity / 2` entries; a full current generation
///   becomes the previous one and the older one is dropped (zeroed once no call holds it);
///   a hit in the previous generation moves the entry back;
/// - dropped for a tenant on each of its credential events (rotate, suspend, delete: the event
///   hub's NOTIFY, every server process) and for one of our keys when the wallet deletes it;
/// - an open only keeps its shared key once the box authenticated, so a stranger's messages with
///   made-up sender keys can churn the cache (a recomputation) but not fill it with their keys.
package final class BoxSharedKeys: Sendable {
    package static let shared = BoxSharedKeys(capacity: 4096)

    private struct Key: Hashable {
        let scope: String
        let ourVerkey: [UInt8]
        let theirPublicKey: [UInt8]
    }

    private struct State {
        var current: [Key: SecretBytes] = [:]
        var previous: [Key: SecretBytes] = [:]
    }

    private let state = Mutex(State())
    private let halfCapacity: Int

    /// `capacity` 0 keeps nothing (every call computes).
    package init(capacity: Int) { self.halfCapacity = max(0, capacity / 2) }

    /// The shared key of `our` (the key pair's verkey, its X25519 secret from `ourSecret`) and
    /// `theirPublicKey` (X25519) in `scope`; computed and kept on a miss. Throws `invalidKey` for a
    /// low-order public key (as `crypto_box_easy` refuses it).
    package func sharedKey(
        scope: String, ourVerkey: [UInt8], ourSecret: () -> SecretBytes, theirPublicKey: [UInt8]
    ) throws -> SecretBytes {
        let key = Key(scope: scope, ourVerkey: ourVerkey, theirPublicKey: theirPublicKey)
        if let known = lookup(key) { return known }
        let computed = try Box.sharedKey(publicKey: theirPublicKey, secret: ourSecret())
        store(computed, for: key)
        return computed
    }

    /// The kept shared key, or nil; `remember` keeps one the caller computed and verified.
    package func lookup(scope: String, ourVerkey: [UInt8], theirPublicKey: [UInt8]) -> SecretBytes? {
        lookup(Key(scope: scope, ourVerkey: ourVerkey, theirPublicKey: theirPublicKey))
    }

    package func remember(_ sharedKey: SecretBytes, scope: String, ourVerkey: [UInt8], theirPublicKey: [UInt8]) {
        store(sharedKey, for: Key(scope: scope, ourVerkey: ourVerkey, theirPublicKey: theirPublicKey))
    }

    /// Drops every entry of `scope` (the tenant's credential changed: it may be gone).
    package func invalidate(scope: String) {
        drop { $0.scope == scope }
    }

    /// Drops the entries of one of our keys in `scope` (the wallet deleted it).
    package func invalidate(scope: String, ourVerkey: [UInt8]) {
        drop { $0.scope == scope && $0.ourVerkey == ourVerkey }
    }

    /// Dropped entries zero themselves once no call holds them (`SecretBytes`).
    private func drop(where matches: (Key) -> Bool) {
        state.withLock { state in
            guard state.current.keys.contains(where: matches) || state.previous.keys.contains(where: matches) else { return }
            state.current = state.current.filter { !matches($0.key) }
            state.previous = state.previous.filter { !matches($0.key) }
        }
    }

    /// Entries held (tests).
    package var count: Int { state.withLock { $0.current.count + $0.previous.count } }

    private func lookup(_ key: Key) -> SecretBytes? {
        guard halfCapacity > 0 else { return nil }
        return state.withLock { state in
            if let known = state.current[key] { return known }
            guard let known = state.previous.removeValue(forKey: key) else { return nil }
            Self.insert(known, for: key, into: &state, halfCapacity: halfCapacity)
            return known
        }
    }

    private func store(_ value: SecretBytes, for key: Key) {
        guard halfCapacity > 0 else { return }
        state.withLock { Self.insert(value, for: key, into: &$0, halfCapacity: halfCapacity) }
    }

    private static func insert(_ value: SecretBytes, for key: Key, into state: inout State, halfCapacity: Int) {
        if state.current[key] == nil, state.current.count >= halfCapacity {
            state.previous = state.current
            state.current = [:]
        }
        state.current[key] = value
    }
}
