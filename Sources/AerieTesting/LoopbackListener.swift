import NIOCore
import NIOPosix
import Synchronization

/// A TCP listener on a loopback address (127.0.0.1 unless told; port 0, read back) that counts the connections it accepts and
/// closes each at once (shows whether anything tried to reach an address at all), or keeps them
/// open and says nothing (a peer that stops answering).
public final class LoopbackListener: Sendable {
    public let port: Int
    private let channel: any Channel
    private let counter: Counter

    private final class Counter: Sendable {
        let value = Atomic<Int>(0)
    }

    /// Connections accepted so far.
    public var connections: Int { counter.value.load(ordering: .relaxed) }

    private init(port: Int, channel: any Channel, counter: Counter) {
        self.port = port
        self.channel = channel
        self.counter = counter
    }

    /// `host` another loopback address (127.0.0.2...) stands for another machine: outbound
    /// delivery counts every port of one address as one destination.
    public static func start(closingAccepted: Bool = true, host: String = "127.0.0.1") async throws -> LoopbackListener {
        let counter = Counter()
        let channel = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .childChannelInitializer { channel in
                counter.value.add(1, ordering: .relaxed)
                return closingAccepted ? channel.close() : channel.eventLoop.makeSucceededVoidFuture()
            }
            .bind(host: host, port: 0).get()
        return LoopbackListener(port: channel.localAddress?.port ?? 0, channel: channel, counter: counter)
    }

    public func stop() async {
        try? await channel.close()
    }
}
