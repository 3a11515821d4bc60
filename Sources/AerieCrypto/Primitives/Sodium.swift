import CSodium

/// libsodium's one-time initialisation. Every entry point that calls into libsodium first
/// touches `Sodium.ready`; Swift runs a static initialiser exactly once, thread-safely.
package enum Sodium {
    static let ready: Void = {
        // sodium_init returns 0 on first success, 1 if already initialised, -1 on failure.
        precondition(sodium_init() >= 0, "libsodium failed to initialise")
    }()

    @inline(__always) package static func ensureReady() { _ = ready }
}
