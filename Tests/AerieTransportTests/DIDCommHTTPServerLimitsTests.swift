import AerieTesting
import Logging
import ServiceLifecycle
import Testing

@testable import AerieTransport

/// `DIDCommHTTPServer` with a handler slower than the request deadline: the peer gets a 503 it
/// may retry and the connection closes, while the handler's own answer is dropped unseen.
@Suite struct DIDCommHTTPServerLimitsTests {
    @Test func slowHandlerAnswers503AtTheRequestDeadline() async throws {
        var limits = DIDCommHTTPServer.Limits()
        limits.requestTimeout = .seconds(1)
        let server = DIDCommHTTPServer(
            configuration: DIDCommHTTPServer.Configuration(host: "127.0.0.1", port: 0, limits: limits),
            logger: Logger(label: "test")
        ) { _ in
            try? await Task.sleep(for: .seconds(2))
            return (202, nil)
        }
        let group = ServiceGroup(services: [server], gracefulShutdownSignals: [], logger: Logger(label: "test"))
        try await withThrowingTaskGroup(of: Void.self) { tasks in
            tasks.addTask { try await group.run() }
            let port = try await server.listeningPort()
            let started = ContinuousClock.now
            let client = try await RawLineClient.connect(port: port)
            try await client.send("POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\n{}")
            let status = await client.readLine()
            #expect(status?.hasPrefix("HTTP/1.1 503") == true, "\(status ?? "nil")")
            #expect(await client.waitForClose())
            #expect(ContinuousClock.now - started < .seconds(2))
            await client.close()

            try await Task.sleep(for: .seconds(2))  // the dropped answer is written meanwhile
            await group.triggerGracefulShutdown()
            try await tasks.waitForAll()
        }
    }
}
