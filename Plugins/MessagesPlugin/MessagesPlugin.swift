import AerieCore
import AerieCrypto
import Foundation

/// `messages.*`: the tenant mailbox of seed 002 (download, status updates), and the inbound
/// message types it keeps for the application.
public struct MessagesPlugin: AeriePlugin {
    public static let name = "messages"

    public let mailbox: MessageMailbox
    /// Server push; without it `messages.subscribe` is not offered.
    public let events: (any EventSubscriptions)?
    /// Sends `messages.send` and `messages.sendText` (the server's `ConnectionSendService`).
    public let sender: any ConnectionSender

    public init(mailbox: MessageMailbox = MessageMailbox(), events: (any EventSubscriptions)? = nil, sender: any ConnectionSender) {
        self.mailbox = mailbox
        self.events = events
        self.sender = sender
    }

    public func register(presenters: inout EventPresenterRegistry) throws {
        try presenters.presentEvents(ofKind: "message", with: MessageEvents.received)
        try presenters.presentEvents(ofKind: "delivery", with: MessageEvents.delivery)
    }

    public func register(with router: inout MethodRouter) throws {
        let mailbox = self.mailbox
        let sender = self.sender
        try router.register(
            "messages.download",
            summary: "The seed's download: [{pairwiseDID, msgs: [{statusCode, payload, senderDID, uid, type, refMsgId, deliveryDetails, "
                + "decryptedPayload}]}], oldest first, filters combined; one page of at most limit (default 100, max 500) messages. "
                + "To page through more, use messages.downloadPage, which answers the same array with a nextCursor."
        ) { (params: DownloadParams, tenant: TenantContext) in
            try await mailbox.download(try params.query(), tenant: tenant)
        }
        try router.register(
            "messages.downloadPage",
            summary: "messages.download with paging: {messages: <the download array>, nextCursor}; nextCursor is null after the last page. "
                + "Messages arriving later appear on later pages."
        ) { (params: DownloadParams, tenant: TenantContext) in
            try await mailbox.downloadPage(try params.query(), tenant: tenant)
        }
        try router.register(
            "messages.updateStatus",
            summary: "Sets the status (MS-106: reviewed) of messages per connection, in one transaction: {updated, notFound: [{pairwiseDID, uids}]}; "
                + "uids that are not the connection's messages are reported and change nothing. Repeating it is harmless."
        ) { (params: UpdateStatusParams, tenant: TenantContext) -> JSONValue in
            let (status, messages) = try params.validated()
            return try await mailbox.updateStatus(status, messages: messages, tenant: tenant)
        }
        try router.register(
            "messages.send",
            summary: "Sends a DIDComm v1 message over an established connection: packed authcrypt with the connection's keys, "
                + "forward-wrapped through the peer's routing keys, recorded and queued in one transaction. Answers {uid, @id, "
                + "statusCode: MS-101}; the record is listed by messages.download (status MS-101 queued, MS-102 taken by the "
                + "peer's endpoint, MS-105 delivery failed with the reason in deliveryDetails) and the outcome is pushed as "
                + "messages.delivered / messages.deliveryFailed. Refused: not_found (no such connection, deleted), conflict "
                + "(not established, @id already sent), invalid_params (shape, size, replyTo)."
        ) { (params: SendParams, tenant: TenantContext) in
            let ids = try SendIds.parse(connectionId: params.connectionId, replyTo: params.replyTo)
            return try await Self.send(try OutgoingMessage.validated(params.message), ids: ids, with: sender, tenant: tenant)
        }
        try router.register(
            "messages.sendText",
            summary: "Sends a basicmessage/1.0 (RFC 0095) with content and sent_time over an established connection; otherwise "
                + "as messages.send: {uid, @id, statusCode: MS-101}."
        ) { (params: SendTextParams, tenant: TenantContext) in
            let ids = try SendIds.parse(connectionId: params.connectionId, replyTo: params.replyTo)
            return try await Self.send(try OutgoingMessage.basicMessage(content: params.content), ids: ids, with: sender, tenant: tenant)
        }
        if let events {
            try router.register(
                "messages.subscribe",
                summary: "Pushes notifications to this session for the calling tenant: messages.received {pairwiseDID, uid, type}, "
                    + "connections.stateChanged {connectionId, state, stateName}, and for messages it sent messages.delivered "
                    + "{pairwiseDID, uid, type, statusCode: MS-102} / messages.deliveryFailed {..., statusCode: MS-105, reason}; "
                    + "types filters messages, pairwiseDids all. "
                    + "Calling it again replaces the filter. A slow reader gets one messages.overflow and loses notifications until it "
                    + "catches up. Answers {subscribed: true} once events from then on will arrive."
            ) { (params: SubscribeParams, context: CallContext) -> JSONValue in
                guard case .tenant(let tenant) = context.principal else {
                    throw AerieError(.forbidden, "this method needs a tenant session")
                }
                try await events.subscribe(context.session, tenant: tenant.tenantID, filter: try params.filter())
                return ["subscribed": true]
            }
            try router.register(
                "messages.unsubscribe", summary: "Stops the notifications of messages.subscribe on this session: {unsubscribed}."
            ) { (_: NoParams, context: CallContext) -> JSONValue in
                guard case .tenant = context.principal else {
                    throw AerieError(.forbidden, "this method needs a tenant session")
                }
                return ["unsubscribed": .bool(events.unsubscribe(context.session))]
            }
        }
        // Stored by the inbound endpoint, nothing more (so a peer's may open with its recipient
        // as remembered, `registerStoredInbound`). A type a protocol plugin installed before this
        // one handles (present-proof's request) is its own, and still lands in the mailbox when
        // that plugin claims it.
        for type in MessageKind.mailboxTypes where router.inboundRoute(for: type) == nil {
            try router.registerStoredInbound(type)
        }
    }

    /// One path for both methods: `sender` records and queues the message.
    static func send(
        _ message: JSONValue, ids: (connection: UUID, replyTo: UUID?), with sender: any ConnectionSender, tenant: TenantContext
    ) async throws -> SentResult {
        guard let sent = try await sender.send(message, on: ids.connection, replyTo: ids.replyTo, tenant: tenant) else {
            throw AerieError.internalError(details: "a send without a condition sent nothing")
        }
        return SentResult(
            uid: sent.uid.lowercasedString, messageId: sent.messageId, connectionId: ids.connection.lowercasedString,
            pairwiseDID: sent.connection.myDid, statusCode: MailboxMessage.queued, threadId: sent.threadId)
    }
}
