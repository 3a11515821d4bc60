import AerieTesting
import Logging
import ServiceLifecycle
import Testing

@testable import AerieTransport

/// `HTTPListener` (as the DIDComm endpoint) with a handler slower than the request deadline: the peer gets a 503 it
/// may retry and the connection closes, while the handler's own answer is dropped unseen.
@Suite(.timeLimit(.minutes(10))) struct HTTPListenerLimitsTests {
    @Test func slowHandlerAnswers503AtTheRequestDeadline() async throws {
        var limits = HTTPListener.Limits()
        limits.requestTimeout = .seconds(1)
        // The handler answers only when the test lets it, well after the deadline.
        let (release, releaser) = AsyncStream.makeStream(of: Void.self)
        let server = HTTPListener(
            configuration: HTTPListener.Configuration(host: "127.0.0.1", port: 0, limits: limits),
            logger: Logger(label: "test"),
            didcomm: { _ in
                for await _ in release {}
                return (202, nil)
            })
        let group = ServiceGroup(services: [server], gracefulShutdownSignals: [], logger: Logger(label: "test"))
        try await withThrowingTaskGroup(of: Void.self) { tasks in
            tasks.addTask { try await group.run() }
            let port = try await server.listeningPort()
            let client = try await RawLineClient.connect(port: port)
            try await client.send("POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\n{}")
            let status = try await client.readLine()
            #expect(status?.hasPrefix("HTTP/1.1 503") == true, "\(status ?? "nil")")
            #expect(await client.waitForClose())
            await client.close()

            releaser.finish()  // the handler's late answer is dropped
            try await Task.sleep(for: .milliseconds(200))
            await group.triggerGracefulShutdown()
            try await tasks.waitForAll()
        }
    }
}
