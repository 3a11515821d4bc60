import AerieTransport
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// The address classification the SSRF guard applies to every socket curl opens.
@Suite(.timeLimit(.minutes(10))) struct AddressPolicyTests {
    static func bytes(_ text: String) -> [UInt8] {
        if text.contains(":") {
            var address = in6_addr()
            precondition(inet_pton(AF_INET6, text, &address) == 1, text)
            return withUnsafeBytes(of: address) { Array($0) }
        }
        var address = in_addr()
        precondition(inet_pton(AF_INET, text, &address) == 1, text)
        return withUnsafeBytes(of: address) { Array($0) }
    }

    @Test(arguments: [
        "0.0.0.0", "0.1.2.3", "10.0.0.1", "10.255.255.255", "100.64.0.1", "100.127.255.254", "127.0.0.1",
        "127.1.2.3", "169.254.169.254", "172.16.0.1", "172.31.255.255", "192.0.0.8", "192.0.2.1", "192.168.1.1",
        "198.18.0.1", "198.19.255.255", "198.51.100.7", "203.0.113.7", "224.0.0.1", "239.255.255.250",
        "240.0.0.1", "255.255.255.255",
        "::", "::1", "::ffff:127.0.0.1", "::ffff:10.1.2.3", "::ffff:169.254.169.254", "::127.0.0.1",
        "64:ff9b::7f00:1", "64:ff9b:1::1", "2002:7f00:1::1", "2002:c0a8:101::1", "fc00::1", "fd12:3456::1",
        "fe80::1", "febf::1", "fec0::1", "ff02::1", "ff05::2", "2001:db8::1", "100::1", "4000::1",
    ])
    func refused(address: String) {
        #expect(!AddressPolicy.isPublic(Self.bytes(address)))
        #expect(!AddressPolicy(allowPrivateAddresses: false).permits(Self.bytes(address)))
        #expect(AddressPolicy(allowPrivateAddresses: true).permits(Self.bytes(address)))
    }

    @Test(arguments: [
        "1.1.1.1", "8.8.8.8", "100.63.255.255", "100.128.0.1", "172.15.255.255", "172.32.0.1", "192.167.1.1",
        "192.169.0.1", "198.17.0.1", "198.20.0.1", "223.255.255.254", "11.0.0.1", "126.255.255.255",
        "2606:4700:4700::1111", "2001:4860:4860::8888", "::ffff:8.8.8.8", "64:ff9b::808:808", "2002:808:808::1",
    ])
    func allowed(address: String) {
        #expect(AddressPolicy.isPublic(Self.bytes(address)))
    }

    @Test func otherFamiliesAndExceptions() {
        #expect(!AddressPolicy.isPublic([]))
        #expect(!AddressPolicy.isPublic([1, 2, 3]))
        let policy = AddressPolicy(allowPrivateAddresses: false, exceptions: [[127, 0, 0, 1]])
        #expect(policy.permits([127, 0, 0, 1]))
        #expect(!policy.permits([127, 0, 0, 2]))
    }

    @Test func allowedNetworksAdmitOnlyTheirAddresses() throws {
        let policy = AddressPolicy(
            allowPrivateAddresses: false, allowedNetworks: try IPNetwork.parseList("10.20.0.0/16, fd00:20::/32,192.168.1.7"))
        #expect(policy.permits(Self.bytes("10.20.3.4")))
        #expect(policy.permits(Self.bytes("::ffff:10.20.3.4")))  // the IPv4-mapped form of an allowed address
        #expect(!policy.permits(Self.bytes("10.21.0.1")))
        #expect(policy.permits(Self.bytes("fd00:20:ffff::1")))
        #expect(!policy.permits(Self.bytes("fd00:21::1")))
        #expect(policy.permits(Self.bytes("192.168.1.7")))
        #expect(!policy.permits(Self.bytes("192.168.1.8")))
        #expect(!policy.permits(Self.bytes("127.0.0.1")))
        #expect(policy.permits(Self.bytes("8.8.8.8")))  // public addresses stay allowed
    }

    @Test func networkParsing() throws {
        #expect(IPNetwork("10.1.2.3/8")?.description == "10.0.0.0/8")
        #expect(IPNetwork("10.1.2.3")?.description == "10.1.2.3/32")
        #expect(IPNetwork("fd00::1/8")?.description == "fd00:0:0:0:0:0:0:0/8")
        #expect(IPNetwork("0.0.0.0/0")?.contains(Self.bytes("1.2.3.4")) == true)
        for bad in ["", "10.0.0.0/33", "fd00::/129", "10.0.0.0/-1", "10.0.0/8", "example.org", "10.0.0.0/8/8", "::1/+1",
            "10.0.0.0/0x8", String(repeating: "1", count: 1000)] {
            #expect(IPNetwork(bad) == nil, "\(bad)")
        }
        #expect(throws: IPNetwork.InvalidNetwork.self) { try IPNetwork.parseList("10.0.0.0/8,nonsense") }
        #expect(try IPNetwork.parseList(" , ").isEmpty)
    }
}
