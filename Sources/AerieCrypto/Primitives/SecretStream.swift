import CSodium

/// libsodium `crypto_secretstream_xchacha20poly1305`: a sequence of messages under one key, each
/// authenticated with its position, so a reader detects a message dropped, repeated, reordered or
/// altered, and (by the `final` tag the writer puts on the last one) a stream cut short. Every
/// message may carry associated data (a file's header, so the header cannot be swapped either).
///
/// The state holds key material: it lives in memory of its own, wiped when the stream goes. Not
/// `Sendable`: one task writes or reads a stream.
public enum SecretStream {
    public static let keyByteCount = 32
    public static let headerByteCount = 24
    /// Bytes a message grows by (its tag byte and MAC).
    public static let overheadByteCount = 17

    /// Writes a stream: `header` goes first, then each `push`'s output.
    public final class Writer {
        private let state: UnsafeMutablePointer<crypto_secretstream_xchacha20poly1305_state>
        public let header: [UInt8]
        private var finished = false

        public init(key: SecretBytes) throws {
            guard key.count == keyByteCount else { throw CryptoError(.invalidKey, "a stream key must be 32 bytes") }
            Sodium.ensureReady()
            let state = UnsafeMutablePointer<crypto_secretstream_xchacha20poly1305_state>.allocate(capacity: 1)
            var header = [UInt8](repeating: 0, count: headerByteCount)
            key.withUnsafeBytes { k in
                _ = header.withUnsafeMutableBytes { h in crypto_secretstream_xchacha20poly1305_init_push(state, u8m(h), u8(k)) }
            }
            self.state = state
            self.header = header
        }

        /// `message` sealed as the next of the stream; `final` marks the last one (nothing may follow).
        public func push(_ message: [UInt8], associatedData: [UInt8], final: Bool) throws -> [UInt8] {
            guard !finished else { throw CryptoError(.invalidMessage, "the stream is already finished") }
            finished = final
            let tag = final ? crypto_secretstream_xchacha20poly1305_tag_final() : crypto_secretstream_xchacha20poly1305_tag_message()
            return [UInt8](unsafeUninitializedCapacity: message.count + overheadByteCount) { out, initialized in
                message.withUnsafeBytes { m in
                    associatedData.withUnsafeBytes { ad in
                        _ = crypto_secretstream_xchacha20poly1305_push(
                            state, u8m(out), nil, u8(m), UInt64(m.count), u8(ad), UInt64(ad.count), tag)
                    }
                }
                initialized = message.count + overheadByteCount
            }
        }

        deinit {
            sodium_memzero(state, MemoryLayout<crypto_secretstream_xchacha20poly1305_state>.size)
            state.deallocate()
        }
    }

    /// Reads a stream written by `Writer`, message by message.
    public final class Reader {
        private let state: UnsafeMutablePointer<crypto_secretstream_xchacha20poly1305_state>
        /// Whether the message read last was the writer's last.
        public private(set) var finished = false

        /// Throws `decryption_failed` for a header that is not a stream's.
        public init(key: SecretBytes, header: [UInt8]) throws {
            guard key.count == keyByteCount else { throw CryptoError(.invalidKey, "a stream key must be 32 bytes") }
            guard header.count == headerByteCount else { throw CryptoError(.decryptionFailed, "a stream header is 24 bytes") }
            Sodium.ensureReady()
            let state = UnsafeMutablePointer<crypto_secretstream_xchacha20poly1305_state>.allocate(capacity: 1)
            self.state = state
            let rc = key.withUnsafeBytes { k in
                header.withUnsafeBytes { h in crypto_secretstream_xchacha20poly1305_init_pull(state, u8(h), u8(k)) }
            }
            guard rc == 0 else {
                state.deallocate()
                throw CryptoError(.decryptionFailed, "the stream header is invalid")
            }
        }

        /// The next message, opened. Throws `decryption_failed` for a message that is altered,
        /// out of place, sealed under another key or with other associated data, or that follows
        /// the final one. The plaintext is `SecretBytes`: it is a tenant's data.
        public func pull(_ sealed: [UInt8], associatedData: [UInt8]) throws -> SecretBytes {
            guard !finished else { throw CryptoError(.decryptionFailed, "data follows the end of the stream") }
            guard sealed.count >= overheadByteCount else { throw CryptoError(.decryptionFailed, "a stream message is too short") }
            var tag: UInt8 = 0
            var rc: Int32 = 0
            let plain = SecretBytes(count: sealed.count - overheadByteCount) { out in
                rc = sealed.withUnsafeBytes { c in
                    associatedData.withUnsafeBytes { ad in
                        crypto_secretstream_xchacha20poly1305_pull(
                            state, u8m(out), nil, &tag, u8(c), UInt64(c.count),
                            u8(ad), UInt64(ad.count))
                    }
                }
            }
            guard rc == 0 else { throw CryptoError(.decryptionFailed, "a stream message does not open (altered, reordered or wrong key)") }
            finished = tag == crypto_secretstream_xchacha20poly1305_tag_final()
            return plain
        }

        deinit {
            sodium_memzero(state, MemoryLayout<crypto_secretstream_xchacha20poly1305_state>.size)
            state.deallocate()
        }
    }
}
