import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// One HTTP/1.1 request to a server on 127.0.0.1 (ACA-Py's admin API, Aerie's inbound endpoint),
/// over a plain blocking socket on a thread of its own (`offPool`), `Connection: close`.
/// Foundation's `URLSession` drove the same calls through libcurl's multi interface and dispatch
/// sources: its threads took up to a quarter of a core while ten calls ran at once, on the two
/// cores the measured processes share.
public enum LoopbackHTTP {
    public struct Response: Sendable {
        public let status: Int
        public let body: [UInt8]
        /// By lower-cased name.
        public var headers: [String: String] = [:]
    }

    public struct Failure: Error, CustomStringConvertible {
        public let description: String
    }

    /// Largest answer read (ACA-Py's admin answers are a few kilobytes).
    static let maxResponseBytes = 16 << 20

    public static func request(
        _ method: String, port: Int, path: String, body: [UInt8]? = nil, contentType: String? = nil,
        timeout: TimeInterval = 20
    ) async throws -> Response {
        var head = "\(method) \(path) HTTP/1.1\r\nHost: 127.0.0.1:\(port)\r\nConnection: close\r\n"
        if let contentType { head += "Content-Type: \(contentType)\r\n" }
        if body != nil || method == "POST" || method == "PUT" { head += "Content-Length: \(body?.count ?? 0)\r\n" }
        let request = Array((head + "\r\n").utf8) + (body ?? [])
        let raw = try await offPool { try exchange(request, port: port, timeout: timeout, naming: "\(method) \(path)") }
        return try parse(raw, method: method, path: path)
    }

    /// `request` for a URL `http://127.0.0.1:<port><path>`.
    public static func request(
        _ method: String, url: String, body: [UInt8]? = nil, contentType: String? = nil, timeout: TimeInterval = 20
    ) async throws -> Response {
        guard let parts = URLComponents(string: url), parts.scheme == "http", parts.host == "127.0.0.1",
            let port = parts.port
        else { throw Failure(description: "LoopbackHTTP takes http://127.0.0.1:<port> URLs only, not \(url)") }
        var path = parts.percentEncodedPath.isEmpty ? "/" : parts.percentEncodedPath
        if let query = parts.percentEncodedQuery { path += "?" + query }
        return try await request(method, port: port, path: path, body: body, contentType: contentType, timeout: timeout)
    }

    /// Sends `request` and reads until the server closes (or the answer passes the cap).
    /// `naming` (the method and path) leads every error.
    private static func exchange(_ request: [UInt8], port: Int, timeout: TimeInterval, naming: String) throws -> [UInt8] {
        func failure(_ what: String) -> Failure {
            let cause = errno == EAGAIN || errno == EWOULDBLOCK ? "no answer within \(timeout) s" : String(cString: strerror(errno))
            return Failure(description: "\(naming): \(what) 127.0.0.1:\(port): \(cause)")
        }
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw failure("socket for") }
        defer { close(fd) }
        var limit = timeval(tv_sec: Int(timeout), tv_usec: Int((timeout - timeout.rounded(.down)) * 1e6))
        _ = setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &limit, socklen_t(MemoryLayout<timeval>.size))
        _ = setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &limit, socklen_t(MemoryLayout<timeval>.size))
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = in_addr_t(UInt32(0x7F00_0001).bigEndian)
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard connected == 0 else { throw failure("connect to") }
        var sent = 0
        while sent < request.count {
            let n = request.withUnsafeBytes { send(fd, $0.baseAddress! + sent, request.count - sent, Int32(MSG_NOSIGNAL)) }
            guard n > 0 else { throw failure("send to") }
            sent += n
        }
        var answer: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 65_536)
        while true {
            let n = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress!, $0.count, 0) }
            if n == 0 { return answer }
            guard n > 0 else { throw failure("reading the answer of") }
            answer += buffer[0..<n]
            guard answer.count <= maxResponseBytes else {
                throw Failure(description: "\(naming): the answer of 127.0.0.1:\(port) is over \(maxResponseBytes) bytes")
            }
        }
    }

    /// The status and the body (its `Content-Length`, or chunked, or up to the close).
    package static func parse(_ raw: [UInt8], method: String, path: String) throws -> Response {
        let separator: [UInt8] = Array("\r\n\r\n".utf8)
        guard let end = raw.firstRange(of: separator) else {
            throw Failure(description: "\(method) \(path): no complete HTTP head in \(raw.count) bytes")
        }
        let lines = String(decoding: raw[..<end.lowerBound], as: UTF8.self).components(separatedBy: "\r\n")
        let statusWords = lines.first?.split(separator: " ") ?? []
        guard statusWords.count >= 2, statusWords[0].hasPrefix("HTTP/1."), let status = Int(statusWords[1]) else {
            throw Failure(description: "\(method) \(path): not an HTTP status line: \(lines.first ?? "")")
        }
        var headers: [String: String] = [:]
        for line in lines.dropFirst() {
            guard let colon = line.firstIndex(of: ":") else { continue }
            headers[line[..<colon].lowercased()] = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
        }
        var body = Array(raw[end.upperBound...])
        if headers["transfer-encoding"]?.lowercased().contains("chunked") == true {
            body = try dechunk(body, method: method, path: path)
        } else if let length = headers["content-length"].flatMap(Int.init), length <= body.count {
            body = Array(body.prefix(length))
        }
        return Response(status: status, body: body, headers: headers)
    }

    private static func dechunk(_ bytes: [UInt8], method: String, path: String) throws -> [UInt8] {
        var out: [UInt8] = []
        var at = 0
        let crlf: [UInt8] = [13, 10]
        while true {
            guard let line = bytes[at...].firstRange(of: crlf) else { throw Failure(description: "\(method) \(path): a chunk size line is cut") }
            let sizeText = String(decoding: bytes[at..<line.lowerBound], as: UTF8.self).split(separator: ";").first ?? ""
            guard let size = Int(sizeText.trimmingCharacters(in: .whitespaces), radix: 16), size >= 0 else {
                throw Failure(description: "\(method) \(path): bad chunk size \(sizeText)")
            }
            at = line.upperBound
            if size == 0 { return out }
            guard at + size <= bytes.count else { throw Failure(description: "\(method) \(path): a chunk is cut") }
            out += bytes[at..<(at + size)]
            at += size + 2
        }
    }
}
