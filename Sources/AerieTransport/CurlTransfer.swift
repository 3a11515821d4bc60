import CCurl
import Synchronization

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// What libcurl's C callbacks of one transfer share with the code driving it: the body
/// collected so far, its cap, the address policy and what was refused.
///
/// Only the pool thread running the transfer touches the mutable fields (callbacks run inside
/// `curl_easy_perform` on that thread); `cancelled` is the one field set from elsewhere.
final class CurlTransfer: @unchecked Sendable {
    let policy: AddressPolicy
    let maxBodyBytes: Int
    private(set) var body: [UInt8] = []
    private(set) var bodyTooLarge = false
    /// Addresses the policy refused during this transfer (text form, for logs).
    private(set) var refusedAddresses: [String] = []
    /// A probe (`URLResolver.checkDestination`) resolves and judges addresses but opens no
    /// socket; the addresses the policy allowed are kept here.
    let probeOnly: Bool
    private(set) var permittedAddresses: [String] = []
    let cancelled = Atomic<Bool>(false)

    init(policy: AddressPolicy, maxBodyBytes: Int, probeOnly: Bool = false) {
        self.policy = policy
        self.maxBodyBytes = maxBodyBytes
        self.probeOnly = probeOnly
    }

    /// True when addresses were found and the policy refused every one of them: a refusal no
    /// retry can change.
    var refusedByPolicy: Bool { !refusedAddresses.isEmpty && permittedAddresses.isEmpty }

    /// Called before each request of a redirect chain.
    func resetForNextRequest() {
        body = []
        bodyTooLarge = false
        refusedAddresses = []
        permittedAddresses = []
    }

    /// Installs the callbacks on `easy`. The transfer must outlive every `perform()` of it.
    func install(on easy: CurlEasy) throws {
        let context = Unmanaged.passUnretained(self).toOpaque()
        try easy.set(CURLOPT_WRITEDATA, pointer: context)
        try easy.set(CURLOPT_OPENSOCKETDATA, pointer: context)
        try easy.set(CURLOPT_XFERINFODATA, pointer: context)
        try easy.set(CURLOPT_NOPROGRESS, false)
        guard aerie_curl_setopt_write_function(easy.handle, curlTransferWrite) == CURLE_OK,
            aerie_curl_setopt_opensocket_function(easy.handle, curlTransferOpenSocket) == CURLE_OK,
            aerie_curl_setopt_xferinfo_function(easy.handle, curlTransferProgress) == CURLE_OK
        else { throw URLFetchErrorBox.internal("installing curl callbacks failed") }
    }

    fileprivate func append(_ bytes: UnsafeRawBufferPointer) -> Bool {
        guard body.count + bytes.count <= maxBodyBytes else {
            bodyTooLarge = true
            return false
        }
        body.append(contentsOf: bytes)
        return true
    }

    fileprivate func openSocket(family: Int32, type: Int32, protocol: Int32, address: UnsafePointer<sockaddr>, length: Int)
        -> curl_socket_t
    {
        guard let bytes = Self.addressBytes(family: family, address: address, length: length) else {
            refusedAddresses.append("family \(family)")
            return CURL_SOCKET_BAD
        }
        guard policy.permits(bytes) else {
            refusedAddresses.append(Self.text(bytes))
            return CURL_SOCKET_BAD
        }
        permittedAddresses.append(Self.text(bytes))
        if probeOnly { return CURL_SOCKET_BAD }
        return socket(family, type | Self.closeOnExec, `protocol`)
    }

    #if canImport(Glibc)
    private static let closeOnExec = Int32(bitPattern: UInt32(SOCK_CLOEXEC.rawValue))
    #else
    private static let closeOnExec: Int32 = 0
    #endif

    /// The raw IPv4 (4 bytes) or IPv6 (16 bytes) address of a socket address, or nil for any
    /// other family.
    static func addressBytes(family: Int32, address: UnsafePointer<sockaddr>, length: Int) -> [UInt8]? {
        let raw = UnsafeRawPointer(address)
        switch family {
        case AF_INET where length >= MemoryLayout<sockaddr_in>.size:
            let ipv4 = raw.loadUnaligned(as: sockaddr_in.self)
            return withUnsafeBytes(of: ipv4.sin_addr) { Array($0) }
        case AF_INET6 where length >= MemoryLayout<sockaddr_in6>.size:
            let ipv6 = raw.loadUnaligned(as: sockaddr_in6.self)
            return withUnsafeBytes(of: ipv6.sin6_addr) { Array($0) }
        default:
            return nil
        }
    }

    static func text(_ bytes: [UInt8]) -> String {
        if bytes.count == 4 { return bytes.map(String.init).joined(separator: ".") }
        return stride(from: 0, to: bytes.count, by: 2).map {
            String(UInt16(bytes[$0]) << 8 | UInt16(bytes[$0 + 1]), radix: 16)
        }.joined(separator: ":")
    }
}

// The C callbacks: no captures, the transfer arrives as the user-data pointer.

private func curlTransferWrite(
    _ data: UnsafeMutablePointer<CChar>?, _ size: Int, _ count: Int, _ context: UnsafeMutableRawPointer?
) -> Int {
    guard let context else { return 0 }
    let transfer = Unmanaged<CurlTransfer>.fromOpaque(context).takeUnretainedValue()
    let (total, overflow) = size.multipliedReportingOverflow(by: count)
    guard !overflow else { return 0 }
    if total == 0 { return 0 }
    guard let data else { return 0 }
    // Returning less than `total` makes libcurl stop with CURLE_WRITE_ERROR.
    return transfer.append(UnsafeRawBufferPointer(start: data, count: total)) ? total : 0
}

private func curlTransferOpenSocket(
    _ context: UnsafeMutableRawPointer?, _ purpose: curlsocktype, _ address: UnsafeMutablePointer<curl_sockaddr>?
) -> curl_socket_t {
    guard let context, let address else { return CURL_SOCKET_BAD }
    let transfer = Unmanaged<CurlTransfer>.fromOpaque(context).takeUnretainedValue()
    let entry = address.pointee
    guard let socketAddress = aerie_curl_sockaddr_address(address) else { return CURL_SOCKET_BAD }
    return transfer.openSocket(
        family: entry.family, type: entry.socktype, protocol: entry.protocol, address: socketAddress,
        length: Int(entry.addrlen))
}

private func curlTransferProgress(
    _ context: UnsafeMutableRawPointer?, _ downloadTotal: curl_off_t, _ downloaded: curl_off_t,
    _ uploadTotal: curl_off_t, _ uploaded: curl_off_t
) -> Int32 {
    guard let context else { return 1 }
    let transfer = Unmanaged<CurlTransfer>.fromOpaque(context).takeUnretainedValue()
    // Non-zero aborts the transfer with CURLE_ABORTED_BY_CALLBACK.
    return transfer.cancelled.load(ordering: .relaxed) ? 1 : 0
}
