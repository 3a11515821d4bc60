import AerieCore
import Foundation

/// A backend's durable event stream (`events.subscribe`), resumed by itself: it keeps the
/// position of the last event it handed out, and after a lost connection (a server restart, a
/// network cut) or a consumer that fell `bufferSize` events behind, it connects again and
/// subscribes after that position. Each event comes out once, in position order.
///
/// ```swift
/// for try await event in AerieEventStream.follow(host: "127.0.0.1", port: 7400, token: backendToken, after: saved) {
///     handle(event)
///     saved = event.position   // and `events.ack` now and then
/// }
/// ```
public enum AerieEventStream {
    /// Failures worth another connection; any other answer ends the stream with its error.
    static let retried: Set<String> = ["connection", "busy", "unavailable", "internal_error"]

    /// One `events.event`.
    public struct Event: Sendable, Equatable {
        public let tenantId: TenantID
        public let position: Int64
        /// `message`, `connection` or `delivery`.
        public let kind: String
        /// The whole notification params (`uid`, `type`, `connectionId`, `stateName`, ...).
        public let fields: JSONValue

        init?(_ params: JSONValue) {
            guard let tenant = params["tenantId"]?.stringValue.flatMap(TenantID.init), case .int(let position)? = params["position"],
                let kind = params["kind"]?.stringValue
            else { return nil }
            tenantId = tenant
            self.position = position
            self.kind = kind
            fields = params
        }
    }

    /// Follows the stream of the backend whose token is `token`, after `after` (nil: after the
    /// position the backend acknowledged). Ends with an error only when the server refuses the
    /// backend (token rotated, backend suspended, bad `after`); connection failures are retried
    /// every `reconnectDelay`. A server that accepts the connection and does not answer the
    /// authentication and the subscription within `setupTimeout` counts as a failure too: the
    /// session is closed and another tried (a client call itself waits without a bound). Ending
    /// the iteration closes the session.
    public static func follow(
        host: String, port: Int, token: String, after: Int64? = nil, bufferSize: Int = 1000,
        reconnectDelay: Duration = .milliseconds(200), setupTimeout: Duration = .seconds(30)
    ) -> AsyncThrowingStream<Event, any Error> {
        let (stream, continuation) = AsyncThrowingStream.makeStream(
            of: Event.self, throwing: (any Error).self, bufferingPolicy: .bufferingOldest(max(1, bufferSize)))
        let task = Task {
            var last = after
            while !Task.isCancelled {
                var session: AerieClient? = nil
                do {
                    let client = try await AerieClient.connect(host: host, port: port)
                    session = client
                    // Closing the session fails the calls waiting on it (a connection error).
                    let unanswered = Task {
                        try await Task.sleep(for: setupTimeout)
                        await client.close()
                    }
                    defer { unanswered.cancel() }
                    try await client.authenticate(token: token)
                    _ = try await client.call("events.subscribe", params: last.map { ["after": .int($0)] } ?? [:])
                    unanswered.cancel()
                    notifications: for await notification in client.notifications {
                        switch notification.method {
                        case "session.revoked":
                            throw AerieClientError(code: -32001, message: "the backend's credential was revoked", data: notification.params)
                        case "events.event":
                            // After a resubscribe the old subscription's last events may still arrive.
                            guard let event = Event(notification.params), event.position > (last ?? Int64.min) else { continue }
                            if case .dropped = continuation.yield(event) {
                                // The consumer is `bufferSize` behind: read the rest from the log later.
                                break notifications
                            }
                            last = event.position
                        default:
                            continue
                        }
                    }
                } catch let error as AerieClientError where !Self.retried.contains(error.stableCode ?? "connection") {
                    await session?.close()
                    continuation.finish(throwing: error)
                    return
                } catch {
                    // Connection lost or refused, server busy or shutting down: try again.
                }
                await session?.close()
                try? await Task.sleep(for: reconnectDelay)
            }
            continuation.finish()
        }
        continuation.onTermination = { _ in task.cancel() }
        return stream
    }
}
