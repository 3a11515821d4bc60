import Foundation
import NIOCore
import NIOHTTP1
import NIOPosix
import Synchronization

/// A tiny HTTP/1.1 server on 127.0.0.1, port 0, with the routes the resolver tests need.
///
/// - `/json`: an invitation as JSON (406 unless `Accept: application/json`)
/// - `/redirect/N`: N relative redirects, then `/json`
/// - `/to?url=U`: one redirect to U (percent-encoded)
/// - `/invite-redirect`: a redirect to `http://203.0.113.7/welcome?c_i=…` (a refused address)
/// - `/bytes/N`: N bytes with Content-Length; `/chunked/N`: N bytes, chunked, no length
/// - `/slow`: answers after `slowAnswer` (30 s), longer than any test waits for it
/// - `/html`: a web page
final class TestHTTPServer: Sendable {
    static let invitationJSON =
        #"{"@type":"https://didcomm.org/connections/1.0/invitation","@id":"short-1","label":"Short","recipientKeys":["9NR9NYh5z5HHu6nLHnQWXczUqRwrdoL4KBUWvo2fE6vj"],"serviceEndpoint":"https://faber.example.org/didcomm"}"#
    static var inviteLocation: String {
        "http://203.0.113.7/welcome?c_i=" + Data(invitationJSON.utf8).base64EncodedString()
    }

    /// When `/slow` answers: a fetch that ends well before it did not wait for the answer.
    static let slowAnswer: TimeAmount = .seconds(30)

    let channel: any Channel
    let port: Int
    private let log = Mutex<[String]>([])
    private let accepted: AcceptCount

    /// Paths requested so far, in order.
    var requests: [String] { log.withLock { $0 } }

    /// TCP connections accepted so far.
    var connections: Int { accepted.value.load(ordering: .relaxed) }

    private final class AcceptCount: Sendable {
        let value = Atomic<Int>(0)
    }

    private init(channel: any Channel, accepted: AcceptCount) {
        self.channel = channel
        self.accepted = accepted
        self.port = channel.localAddress?.port ?? 0
    }

    static func start() async throws -> TestHTTPServer {
        let box = Mutex<TestHTTPServer?>(nil)
        let accepted = AcceptCount()
        let channel = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .serverChannelOption(ChannelOptions.socketOption(.so_reuseaddr), value: 1)
            .childChannelInitializer { channel in
                accepted.value.add(1, ordering: .relaxed)
                return channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.configureHTTPServerPipeline()
                    try channel.pipeline.syncOperations.addHandler(
                        RouteHandler { path in box.withLock { $0?.record(path) } })
                }
            }
            .bind(host: "127.0.0.1", port: 0).get()
        let server = TestHTTPServer(channel: channel, accepted: accepted)
        box.withLock { $0 = server }
        return server
    }

    func url(_ path: String, host: String = "127.0.0.1") -> String { "http://\(host):\(port)\(path)" }

    func shutdown() async {
        try? await channel.close()
    }

    /// Waits until `path` was requested (a request's head fully read), failing after `timeout`.
    func waitForRequest(_ path: String, timeout: Duration = .seconds(10)) async throws {
        let deadline = ContinuousClock.now + timeout
        while !requests.contains(path) {
            guard ContinuousClock.now < deadline else {
                throw TimedOut(description: "\(path) was not requested within \(timeout); requests: \(requests)")
            }
            try await Task.sleep(for: .milliseconds(10))
        }
    }

    struct TimedOut: Error, CustomStringConvertible {
        let description: String
    }

    private func record(_ path: String) { log.withLock { $0.append(path) } }
}

private final class RouteHandler: ChannelInboundHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias OutboundOut = HTTPServerResponsePart

    private let record: @Sendable (String) -> Void
    private var head: HTTPRequestHead?

    init(record: @escaping @Sendable (String) -> Void) { self.record = record }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head(let head): self.head = head
        case .body: break
        case .end:
            guard let head else { return }
            record(head.uri)
            route(head, context: context)
        }
    }

    private func route(_ head: HTTPRequestHead, context: ChannelHandlerContext) {
        let parts = head.uri.split(separator: "?", maxSplits: 1)
        let path = parts.first.map(String.init) ?? "/"
        let query = parts.count == 2 ? String(parts[1]) : ""
        let segments = path.split(separator: "/").map(String.init)
        switch (segments.first ?? "", segments.count) {
        case ("json", 1):
            guard head.headers["accept"] == ["application/json"] else {
                return respond(context, status: .notAcceptable, body: "want application/json")
            }
            respond(context, status: .ok, contentType: "application/json", body: TestHTTPServer.invitationJSON)
        case ("redirect", 2):
            let remaining = Int(segments[1]) ?? 0
            redirect(context, to: remaining > 1 ? "/redirect/\(remaining - 1)" : "/json")
        case ("to", 1):
            let target = query.hasPrefix("url=") ? String(query.dropFirst(4)).removingPercentEncoding() : "/"
            redirect(context, to: target)
        case ("invite-redirect", 1):
            redirect(context, to: TestHTTPServer.inviteLocation)
        case ("bytes", 2):
            respond(context, status: .ok, body: String(repeating: "x", count: Int(segments[1]) ?? 0))
        case ("chunked", 2):
            respondChunked(context, count: Int(segments[1]) ?? 0)
        case ("slow", 1):
            let bound = NIOLoopBound((self, context), eventLoop: context.eventLoop)
            context.eventLoop.scheduleTask(in: TestHTTPServer.slowAnswer) {
                let (handler, context) = bound.value
                handler.respond(context, status: .ok, contentType: "application/json", body: TestHTTPServer.invitationJSON)
            }
        case ("busy", 2):
            // 503 with `Retry-After: <segment>` (seconds, or an HTTP date percent-encoded).
            var headers = HTTPHeaders()
            headers.add(name: "retry-after", value: segments[1].removingPercentEncoding())
            respond(context, status: .serviceUnavailable, headers: headers, body: "busy")
        case ("html", 1):
            respond(context, status: .ok, contentType: "text/html", body: "<html><body>hello</body></html>")
        default:
            respond(context, status: .notFound, body: "no such route")
        }
    }

    private func redirect(_ context: ChannelHandlerContext, to location: String) {
        var headers = HTTPHeaders()
        headers.add(name: "location", value: location)
        respond(context, status: .found, headers: headers, body: "moved")
    }

    private func respond(
        _ context: ChannelHandlerContext, status: HTTPResponseStatus, contentType: String = "text/plain",
        headers extra: HTTPHeaders = [:], body: String
    ) {
        var headers = extra
        headers.add(name: "content-type", value: contentType)
        headers.add(name: "content-length", value: String(body.utf8.count))
        context.write(wrapOutboundOut(.head(HTTPResponseHead(version: .http1_1, status: status, headers: headers))), promise: nil)
        context.write(wrapOutboundOut(.body(.byteBuffer(ByteBuffer(string: body)))), promise: nil)
        context.writeAndFlush(wrapOutboundOut(.end(nil)), promise: nil)
    }

    private func respondChunked(_ context: ChannelHandlerContext, count: Int) {
        var headers = HTTPHeaders()
        headers.add(name: "content-type", value: "application/json")
        headers.add(name: "transfer-encoding", value: "chunked")
        context.write(wrapOutboundOut(.head(HTTPResponseHead(version: .http1_1, status: .ok, headers: headers))), promise: nil)
        var sent = 0
        while sent < count {
            let size = min(4096, count - sent)
            context.write(wrapOutboundOut(.body(.byteBuffer(ByteBuffer(repeating: UInt8(ascii: "y"), count: size)))), promise: nil)
            sent += size
        }
        context.writeAndFlush(wrapOutboundOut(.end(nil)), promise: nil)
    }
}

extension String {
    fileprivate func removingPercentEncoding() -> String {
        var out: [UInt8] = []
        var bytes = utf8.makeIterator()
        while let byte = bytes.next() {
            if byte == UInt8(ascii: "%"), let high = bytes.next(), let low = bytes.next(),
                let value = UInt8(String(decoding: [high, low], as: UTF8.self), radix: 16)
            {
                out.append(value)
            } else {
                out.append(byte)
            }
        }
        return String(decoding: out, as: UTF8.self)
    }
}
