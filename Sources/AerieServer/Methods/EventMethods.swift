import AerieCore
import AerieStore

/// `events.*`: a backend session's durable event stream (issue 14). `events.subscribe` streams
/// the events of the backend's tenants as `events.event` notifications in position order, first
/// those already in the log after `after`, then live; `events.ack` records how far the backend has
/// processed, so the log can be pruned before the retention ends.
struct EventMethods: AeriePlugin {
    static let name = "events"

    let streams: EventStreams

    /// Positions are read as any JSON value and checked here, so a fraction, an exponent or a
    /// number past 64 bits gets an answer naming the field.
    struct SubscribeParams: Codable, Sendable, DocumentedParams {
        var after: JSONValue?
        static let documentation = [
            ParamDoc(
                "after", "integer", required: false,
                "stream the events after this position (the last one received); default: the position last acknowledged")
        ]
    }

    struct AckParams: Codable, Sendable, DocumentedParams {
        var position: JSONValue
        static let documentation = [ParamDoc("position", "integer", "the last position processed")]
    }

    struct Subscribed: Codable, Sendable {
        /// The stream starts after this position.
        var after: Int64
        /// The highest position assigned when the stream started.
        var head: Int64
    }

    struct Acknowledged: Codable, Sendable {
        var position: Int64
    }

    struct Unsubscribed: Codable, Sendable {
        var unsubscribed: Bool
    }

    /// A position from the caller: 0 up to the log's head (a position never assigned is a
    /// client's mistake, for example a position of another database).
    static func validPosition(_ raw: JSONValue, field: String, head: Int64) throws -> Int64 {
        guard case .int(let value) = raw else {
            throw AerieError.invalidParams("\(field) must be an integer position", field: field)
        }
        guard value >= 0 else { throw AerieError.invalidParams("\(field) must be 0 or more", field: field) }
        guard value <= head else {
            throw AerieError.invalidParams("\(field) \(value) is past the last position assigned (\(head))", field: field)
        }
        return value
    }

    func register(with router: inout MethodRouter) throws {
        let streams = self.streams
        let log = streams.log

        try router.register(
            "events.subscribe",
            summary: "Streams the backend's tenants' events (events.event) in position order from after `after`, then live.",
            access: .backend
        ) { (params: SubscribeParams, context: CallContext) in
            guard case .backend(let backend) = context.principal, let tokenHash = context.session.credentialTokenHash else {
                throw AerieError(.forbidden, "this method needs a backend session")
            }
            let head = try await log.head()
            let after: Int64
            if let requested = params.after, requested != .null {
                after = try Self.validPosition(requested, field: "after", head: head)
            } else {
                after = try await log.acknowledged(backend: backend)
            }
            try streams.subscribe(session: context.session, backend: backend, tokenHash: tokenHash, after: after)
            return Subscribed(after: after, head: head)
        }

        try router.register("events.unsubscribe", summary: "Ends this session's event stream.", access: .backend) {
            (_: NoParams, context: CallContext) in
            Unsubscribed(unsubscribed: streams.unsubscribe(sessionID: context.session.id))
        }

        try router.register(
            "events.ack",
            summary: "Records that the backend processed its events up to `position`; the log may prune them.",
            access: .backend
        ) { (params: AckParams, context: CallContext) in
            guard case .backend(let backend) = context.principal else {
                throw AerieError(.forbidden, "this method needs a backend session")
            }
            let position = try Self.validPosition(params.position, field: "position", head: try await log.head())
            return Acknowledged(position: try await log.acknowledge(backend: backend, position: position))
        }
    }
}
