import Synchronization

/// A short random-looking id carried in the `request` log metadata of everything one JSON-RPC
/// call or one inbound DIDComm message logs, so an operator can pick that request's lines out of
/// the rest.
public enum RequestID {
    /// Drawn once per process; each id is a counter mixed with it, so no id repeats within a
    /// process and making one costs no system call (`UInt64.random` asked the kernel each time).
    private static let key = UInt64.random(in: .min ... .max)
    private static let counter = Atomic<UInt64>(0)

    /// 16 hex digits (64 bits): unique enough to grep for, short enough to read.
    public static func make() -> String {
        hex(mix(counter.add(1, ordering: .relaxed).newValue))
    }

    /// SplitMix64's finalizer over the counter offset by `key`: a bijection, so distinct counters
    /// give distinct ids.
    static func mix(_ count: UInt64) -> UInt64 {
        var z = count &* 0x9E37_79B9_7F4A_7C15 &+ key
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }

    static func hex(_ value: UInt64) -> String {
        String(unsafeUninitializedCapacity: 16) { buffer in
            let digits: StaticString = "0123456789abcdef"
            for index in 0..<16 {
                let nibble = Int((value >> UInt64(60 - 4 * index)) & 0xF)
                buffer[index] = digits.utf8Start[nibble]
            }
            return 16
        }
    }
}
