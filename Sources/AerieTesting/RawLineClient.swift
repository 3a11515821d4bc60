import NIOCore
import NIOPosix

/// A bare TCP line client for protocol tests: sends exact bytes, reads lines back as they come,
/// so a test can send garbage, oversize lines or pipelined requests and see the server's answers.
public final class RawLineClient: Sendable {
    private let channel: NIOAsyncChannel<ByteBuffer, ByteBuffer>
    private let lines: AsyncStream<String>
    private let continuation: AsyncStream<String>.Continuation
    private let reader: Task<Void, Never>

    public static func connect(host: String = "127.0.0.1", port: Int) async throws -> RawLineClient {
        let channel = try await ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .channelOption(.socketOption(.tcp_nodelay), value: 1)
            .connect(host: host, port: port) { channel in
                channel.eventLoop.makeCompletedFuture {
                    try NIOAsyncChannel<ByteBuffer, ByteBuffer>(wrappingChannelSynchronously: channel)
                }
            }
        return RawLineClient(channel: channel)
    }

    private init(channel: NIOAsyncChannel<ByteBuffer, ByteBuffer>) {
        self.channel = channel
        (lines, continuation) = AsyncStream.makeStream(of: String.self)
        let continuation = self.continuation
        reader = Task {
            var pending: [UInt8] = []
            do {
                for try await chunk in channel.inbound {
                    pending.append(contentsOf: chunk.readableBytesView)
                    while let newline = pending.firstIndex(of: UInt8(ascii: "\n")) {
                        continuation.yield(String(decoding: pending[..<newline], as: UTF8.self))
                        pending.removeSubrange(...newline)
                    }
                }
            } catch {}
            continuation.finish()
        }
    }

    /// Sends `text` as is (add `\n` yourself).
    public func send(_ text: String) async throws {
        try await send(Array(text.utf8))
    }

    public func send(_ bytes: [UInt8]) async throws {
        try await channel.outbound.write(channel.channel.allocator.buffer(bytes: bytes))
    }

    /// The next line from the server, or nil once the server closed the session.
    public func readLine() async -> String? {
        var iterator = lines.makeAsyncIterator()
        return await iterator.next()
    }

    /// Whether the server closed the session (reads until end of stream; lines left are dropped).
    public func waitForClose() async -> Bool {
        for await _ in lines {}
        return true
    }

    public func close() async {
        channel.outbound.finish()
        try? await channel.channel.close()
        reader.cancel()
    }

    /// A client dropped without `close()` must still finish its writer (NIO traps otherwise).
    deinit {
        channel.outbound.finish()
        channel.channel.close(promise: nil)
    }
}
