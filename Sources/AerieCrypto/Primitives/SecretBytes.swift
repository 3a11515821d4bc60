import CSodium

/// Secret key material that zeroes itself when released and never prints.
///
/// The bytes live in their own heap buffer (not an `Array`, whose copy-on-write storage could
/// be duplicated behind our back); they are written once while initialising and wiped with
/// `sodium_memzero` in `deinit`. Immutable after init, hence safe to share across tasks.
public final class SecretBytes: @unchecked Sendable {
    private let storage: UnsafeMutableRawBufferPointer  // at least one byte, so never nil-based
    /// The number of secret bytes.
    public let count: Int

    /// Copies `bytes`. The caller should wipe its own copy (see `SecretBytes.wipe`).
    public convenience init(_ bytes: [UInt8]) {
        self.init(count: bytes.count) { buffer in
            bytes.withUnsafeBytes { buffer.copyMemory(from: $0) }
        }
    }

    /// `count` fresh random bytes.
    public static func random(count: Int) -> SecretBytes {
        SecretBytes(count: count) { Random.fill($0) }
    }

    /// Lets `initializer` write the secret straight into zeroing storage.
    package init(count: Int, initializer: (UnsafeMutableRawBufferPointer) throws -> Void) rethrows {
        precondition(count >= 0)
        Sodium.ensureReady()
        self.count = count
        storage = UnsafeMutableRawBufferPointer.allocate(byteCount: max(count, 1), alignment: 16)
        storage.initializeMemory(as: UInt8.self, repeating: 0)
        let slice = UnsafeMutableRawBufferPointer(rebasing: storage[0..<count])
        do {
            try initializer(slice)
        } catch {
            sodium_memzero(storage.baseAddress!, storage.count)
            storage.deallocate()
            throw error
        }
    }

    deinit {
        sodium_memzero(storage.baseAddress!, storage.count)
        storage.deallocate()
    }

    /// Read access for the duration of `body`; do not let the pointer escape.
    public func withUnsafeBytes<R>(_ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R {
        try body(UnsafeRawBufferPointer(rebasing: storage[0..<count]))
    }

    /// Constant-time comparison with another secret.
    public func isEqual(to other: SecretBytes) -> Bool {
        withUnsafeBytes { a in other.withUnsafeBytes { b in ConstantTime.equal(a, b) } }
    }

    /// Wipes an array the caller no longer needs (best effort: only this array's storage).
    public static func wipe(_ bytes: inout [UInt8]) {
        Sodium.ensureReady()
        bytes.withUnsafeMutableBytes { if let base = $0.baseAddress { sodium_memzero(base, $0.count) } }
    }
}

extension SecretBytes: CustomStringConvertible, CustomDebugStringConvertible, CustomReflectable {
    public var description: String { "SecretBytes(<redacted \(count) bytes>)" }
    public var debugDescription: String { description }
    public var customMirror: Mirror { Mirror(self, children: [], displayStyle: .class) }
}
