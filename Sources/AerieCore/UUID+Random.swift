import Foundation

extension UUID {
    /// A new random (version 4, RFC 9562) UUID, as `UUID.random()` makes, from the system generator
    /// (`getrandom` on Linux). Foundation's `UUID.random()` opens, reads and closes `/dev/urandom` for
    /// each one on Linux: three system calls and a file descriptor per id, several ids per
    /// connection. Every id Aerie makes uses this.
    public static func random() -> UUID {
        var generator = SystemRandomNumberGenerator()
        var words = (generator.next() as UInt64, generator.next() as UInt64)
        return withUnsafeMutableBytes(of: &words) { bytes in
            bytes[6] = bytes[6] & 0x0f | 0x40  // version 4
            bytes[8] = bytes[8] & 0x3f | 0x80  // variant 10
            return UUID(
                uuid: (
                    bytes[0], bytes[1], bytes[2], bytes[3], bytes[4], bytes[5], bytes[6], bytes[7],
                    bytes[8], bytes[9], bytes[10], bytes[11], bytes[12], bytes[13], bytes[14], bytes[15]
                ))
        }
    }
}
