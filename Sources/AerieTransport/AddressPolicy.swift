import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Which peer addresses an outbound fetch may connect to.
///
/// Checked on the socket address curl is about to connect, after DNS, so a host name that
/// resolves to a private address (or a redirect to one) is refused like the literal address.
package struct AddressPolicy: Sendable, Hashable {
    /// Allow every address (tests, `AERIE_ALLOW_PRIVATE_URLS=1`).
    package var allowPrivateAddresses: Bool
    /// Addresses allowed even when not public, as 4 or 16 raw bytes. For tests that need one
    /// local server reachable while every other local address stays refused.
    package var exceptions: Set<[UInt8]>
    /// Networks allowed even when not public: an operator's private peers
    /// (`AERIE_ALLOWED_NETWORKS`) or webhook receivers (`AERIE_WEBHOOK_ALLOWED_NETWORKS`), without
    /// opening every private address.
    package var allowedNetworks: [IPNetwork]
    /// The setting that fills `allowedNetworks`, named in refusals.
    package var allowedNetworksSetting: String

    package init(
        allowPrivateAddresses: Bool, allowedNetworks: [IPNetwork] = [], allowedNetworksSetting: String = "AERIE_ALLOWED_NETWORKS",
        exceptions: Set<[UInt8]> = []
    ) {
        self.allowPrivateAddresses = allowPrivateAddresses
        self.allowedNetworks = allowedNetworks
        self.allowedNetworksSetting = allowedNetworksSetting
        self.exceptions = exceptions
    }

    /// Whether connecting to `address` (4 bytes IPv4 or 16 bytes IPv6) is allowed.
    package func permits(_ address: [UInt8]) -> Bool {
        allowPrivateAddresses || exceptions.contains(address) || allowedNetworks.contains { $0.contains(address) }
            || Self.isPublic(address)
    }

    /// What a refusal tells the operator to change, for error messages.
    package var refusalHint: String {
        "this server does not send to loopback, private or other non-public addresses unless allowed with \(allowedNetworksSetting) (CIDR list)"
    }

    /// True for a globally routable unicast address. Refused: unspecified, loopback, private
    /// (RFC 1918, ULA), CGNAT, link-local, multicast, broadcast, documentation, benchmarking and
    /// reserved ranges, and IPv6 forms that embed any of those IPv4 addresses (mapped,
    /// compatible, NAT64, 6to4).
    package static func isPublic(_ address: [UInt8]) -> Bool {
        switch address.count {
        case 4: return isPublicIPv4(address[0], address[1], address[2], address[3])
        case 16: return isPublicIPv6(address)
        default: return false
        }
    }

    private static func isPublicIPv4(_ a: UInt8, _ b: UInt8, _ c: UInt8, _ d: UInt8) -> Bool {
        switch (a, b, c) {
        case (0, _, _): return false  // "this network", 0.0.0.0
        case (10, _, _): return false  // private
        case (100, 64...127, _): return false  // CGNAT 100.64/10
        case (127, _, _): return false  // loopback
        case (169, 254, _): return false  // link-local
        case (172, 16...31, _): return false  // private
        case (192, 0, 0), (192, 0, 2): return false  // IETF protocol assignments, TEST-NET-1
        case (192, 88, 99): return false  // deprecated 6to4 relay anycast
        case (192, 168, _): return false  // private
        case (198, 18...19, _): return false  // benchmarking
        case (198, 51, 100), (203, 0, 113): return false  // TEST-NET-2, TEST-NET-3
        case (224...255, _, _): return false  // multicast, reserved, broadcast
        default: return true
        }
    }

    private static func isPublicIPv6(_ bytes: [UInt8]) -> Bool {
        let first10Zero = bytes[0..<10].allSatisfy { $0 == 0 }
        // ::ffff:a.b.c.d (mapped) and ::a.b.c.d (compatible, includes :: and ::1).
        if first10Zero, (bytes[10] == 0xFF && bytes[11] == 0xFF) || (bytes[10] == 0 && bytes[11] == 0) {
            return isPublicIPv4(bytes[12], bytes[13], bytes[14], bytes[15])
        }
        // 64:ff9b::/96 NAT64 and 64:ff9b:1::/48 local-use NAT64.
        if bytes[0] == 0x00, bytes[1] == 0x64, bytes[2] == 0xFF, bytes[3] == 0x9B {
            if bytes[4] == 0, bytes[5] == 1 { return false }
            return isPublicIPv4(bytes[12], bytes[13], bytes[14], bytes[15])
        }
        // 2002::/16 6to4 embeds an IPv4 address.
        if bytes[0] == 0x20, bytes[1] == 0x02 {
            return isPublicIPv4(bytes[2], bytes[3], bytes[4], bytes[5])
        }
        if bytes[0] == 0xFF { return false }  // multicast ff00::/8
        if bytes[0] & 0xFE == 0xFC { return false }  // unique local fc00::/7
        if bytes[0] == 0xFE, bytes[1] & 0xC0 == 0x80 { return false }  // link-local fe80::/10
        if bytes[0] == 0xFE, bytes[1] & 0xC0 == 0xC0 { return false }  // site-local fec0::/10 (deprecated)
        if bytes[0] == 0x20, bytes[1] == 0x01, bytes[2] == 0x0D, bytes[3] == 0xB8 { return false }  // documentation
        if bytes[0] == 0x01, bytes[1] == 0x00, bytes[2...7].allSatisfy({ $0 == 0 }) { return false }  // discard 100::/64
        // Only global unicast 2000::/3 is routable on the Internet.
        return bytes[0] & 0xE0 == 0x20
    }
}

/// An IPv4 or IPv6 network in CIDR notation (`10.1.0.0/16`, `fd00::/8`; a bare address is one
/// host). IPv4 networks also match IPv4-mapped IPv6 addresses (`::ffff:10.1.2.3`).
public struct IPNetwork: Sendable, Hashable, CustomStringConvertible {
    /// 4 or 16 bytes, with the bits past the prefix cleared.
    public let address: [UInt8]
    public let prefixLength: Int

    /// Parses `text`; nil when it is not an address with an optional `/prefix` in range.
    public init?(_ text: String) {
        let parts = text.split(separator: "/", maxSplits: 1, omittingEmptySubsequences: false)
        guard let bytes = Self.parseAddress(String(parts[0])) else { return nil }
        let bits = bytes.count * 8
        let prefix: Int
        if parts.count == 2 {
            guard (1...3).contains(parts[1].count), parts[1].allSatisfy({ ("0"..."9").contains($0) }), let value = Int(parts[1]),
                (0...bits).contains(value)
            else { return nil }
            prefix = value
        } else {
            prefix = bits
        }
        self.address = Self.masked(bytes, prefix: prefix)
        self.prefixLength = prefix
    }

    /// Whether `candidate` (4 or 16 bytes) lies in this network.
    public func contains(_ candidate: [UInt8]) -> Bool {
        var bytes = candidate
        if address.count == 4, bytes.count == 16, bytes[0..<10].allSatisfy({ $0 == 0 }), bytes[10] == 0xFF, bytes[11] == 0xFF {
            bytes = Array(bytes[12..<16])
        }
        guard bytes.count == address.count else { return false }
        return Self.masked(bytes, prefix: prefixLength) == address
    }

    public var description: String {
        let text: String
        if address.count == 4 {
            text = address.map(String.init).joined(separator: ".")
        } else {
            text = stride(from: 0, to: 16, by: 2).map { String(UInt16(address[$0]) << 8 | UInt16(address[$0 + 1]), radix: 16) }
                .joined(separator: ":")
        }
        return "\(text)/\(prefixLength)"
    }

    /// A comma-separated list (`AERIE_ALLOWED_NETWORKS`); throws naming the first bad entry.
    public static func parseList(_ text: String) throws -> [IPNetwork] {
        try text.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }.map { entry in
            guard let network = IPNetwork(entry) else { throw InvalidNetwork(entry: entry) }
            return network
        }
    }

    public struct InvalidNetwork: Error, CustomStringConvertible {
        public var entry: String
        public var description: String { "'\(entry)' is not an IPv4 or IPv6 network in CIDR notation (e.g. 10.0.0.0/8, fd00::/8)" }
    }

    private static func parseAddress(_ text: String) -> [UInt8]? {
        guard !text.isEmpty, text.utf8.count <= 45 else { return nil }
        if let v4 = parseIPv4(text) { return v4 }
        var v6 = in6_addr()
        if inet_pton(AF_INET6, text, &v6) == 1 {
            return withUnsafeBytes(of: &v6) { Array($0) }
        }
        return nil
    }

    /// The four bytes of an IPv4 address written exactly in dotted decimal (four numbers 0-255,
    /// no leading zeros: `inet_pton`'s form); nil for anything else, including the octal,
    /// hexadecimal and short spellings other parsers read as addresses.
    package static func parseIPv4(_ text: String) -> [UInt8]? {
        // A NUL would end the C string early: "1.2.3.4\0.evil.example" is no address.
        guard !text.isEmpty, text.utf8.count <= 15, !text.utf8.contains(0) else { return nil }
        var v4 = in_addr()
        guard inet_pton(AF_INET, text, &v4) == 1 else { return nil }
        return withUnsafeBytes(of: &v4) { Array($0) }
    }

    private static func masked(_ bytes: [UInt8], prefix: Int) -> [UInt8] {
        bytes.enumerated().map { index, byte in
            let bitsHere = min(max(prefix - index * 8, 0), 8)
            return bitsHere == 8 ? byte : byte & ~(UInt8(0xFF) >> bitsHere)
        }
    }
}
