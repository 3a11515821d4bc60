import AerieTesting
import Testing

/// The test client's reading of an HTTP answer: a `Content-Length` body, a chunked one, one
/// delimited by the close, and what is not an answer. (Its requests are exercised by every
/// ACA-Py interop test and by `DIDCommEndpointTests`, against real servers.)
@Suite(.timeLimit(.minutes(5))) struct LoopbackHTTPTests {
    static func answer(_ text: String) -> [UInt8] { Array(text.utf8) }

    @Test func bodiesAreReadByLengthByChunksOrToTheClose() throws {
        let sized = try LoopbackHTTP.parse(
            Self.answer("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 7\r\n\r\n{\"a\":1}trailing"),
            method: "GET", path: "/x")
        #expect(sized.status == 200 && sized.body == Self.answer("{\"a\":1}"))

        let chunked = try LoopbackHTTP.parse(
            Self.answer("HTTP/1.1 201 Created\r\nTransfer-Encoding: chunked\r\n\r\n4\r\n{\"a\"\r\n3;ext=1\r\n:1}\r\n0\r\n\r\n"),
            method: "POST", path: "/x")
        #expect(chunked.status == 201 && chunked.body == Self.answer("{\"a\":1}"))

        let closed = try LoopbackHTTP.parse(Self.answer("HTTP/1.0 202 Accepted\r\n\r\nall of it"), method: "POST", path: "/")
        #expect(closed.status == 202 && closed.body == Self.answer("all of it"))

        let empty = try LoopbackHTTP.parse(Self.answer("HTTP/1.1 204 No Content\r\n\r\n"), method: "DELETE", path: "/")
        #expect(empty.status == 204 && empty.body.isEmpty)
    }

    @Test func whatIsNotAnAnswerIsAnErrorNamingTheRequest() {
        for bad in ["", "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n", "SSH-2.0-OpenSSH\r\n\r\n", "HTTP/1.1 abc OK\r\n\r\n",
                    "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n9\r\nab"] {
            let error = #expect(throws: LoopbackHTTP.Failure.self) { try LoopbackHTTP.parse(Self.answer(bad), method: "GET", path: "/status") }
            #expect(error?.description.contains("GET /status") == true, "\(bad.debugDescription): \(String(describing: error))")
        }
    }

    /// A peer that closes without answering, one that never answers and a port nobody listens on
    /// each end the call with an error naming it (the silent one at the call's timeout); a URL
    /// that is not loopback HTTP is refused.
    @Test func aPeerThatDoesNotAnswerEndsTheCall() async throws {
        let closing = try await LoopbackListener.start(closingAccepted: true)
        let silent = try await LoopbackListener.start(closingAccepted: false)
        let unused = try ACAPyAgent.freePort()
        defer { Task { await closing.stop(); await silent.stop() } }

        let closed = await #expect(throws: LoopbackHTTP.Failure.self) {
            try await LoopbackHTTP.request("GET", port: closing.port, path: "/status")
        }
        #expect(closed?.description.contains("GET /status") == true, "\(String(describing: closed))")

        let hung = await #expect(throws: LoopbackHTTP.Failure.self) {
            try await LoopbackHTTP.request("POST", port: silent.port, path: "/", body: [1, 2, 3], timeout: 1)
        }
        #expect(hung?.description.contains("POST /: reading the answer of") == true && hung?.description.contains("no answer within 1.0 s") == true, "\(String(describing: hung))")

        let refused = await #expect(throws: LoopbackHTTP.Failure.self) {
            try await LoopbackHTTP.request("GET", port: unused, path: "/")
        }
        #expect(refused?.description.contains("GET /: connect to 127.0.0.1:\(unused)") == true, "\(String(describing: refused))")
        #expect(await #expect(throws: LoopbackHTTP.Failure.self) { try await LoopbackHTTP.request("GET", url: "http://example.org/") } != nil)
    }
}
