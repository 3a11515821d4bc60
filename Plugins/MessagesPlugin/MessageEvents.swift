import AerieCore

/// How clients are shown the events of this plugin's kinds (schema/0016, 0017): a received
/// message, and the outcome of a sent one or of any outbox delivery.
enum MessageEvents {
    /// `message`: `{uid, type, pairwiseDID}` -> `messages.received {pairwiseDID, uid, type}`,
    /// `type` the download's short kind where there is one; a push filter may name the full
    /// `@type` or the short kind.
    static func received(_ data: JSONValue) -> EventPresentation? {
        guard let uid = data["uid"]?.stringValue, let messageType = data["type"]?.stringValue else { return nil }
        let kind = MessageKind.classify(messageType)
        return EventPresentation(
            pushMethod: "messages.received",
            fields: ["pairwiseDID": pairwiseDID(data), "uid": .string(uid), "type": .string(kind)],
            types: [messageType, kind])
    }

    /// `delivery`, in two shapes. A sent message's outcome (NOTIFY only, schema/0016: `{uid,
    /// status, type, pairwiseDID, reason}`) is pushed as `messages.delivered` (MS-102, the peer
    /// took it) or `messages.deliveryFailed` (MS-105, given up, with the reason). The event
    /// log's row of any outbox delivery that ended (`{outboxId, connectionId, status,
    /// messageUid}`) is streamed to backends, not pushed.
    static func delivery(_ data: JSONValue) -> EventPresentation? {
        if let outboxId = data["outboxId"]?.stringValue, let status = data["status"]?.stringValue {
            return EventPresentation(
                pushMethod: nil,
                fields: [
                    "outboxId": .string(outboxId), "connectionId": string(data["connectionId"]),
                    "status": .string(status), "messageUid": string(data["messageUid"]),
                ])
        }
        guard let uid = data["uid"]?.stringValue, let status = data["status"]?.stringValue,
            let messageType = data["type"]?.stringValue
        else { return nil }
        let kind = MessageKind.classify(messageType)
        var fields: [String: JSONValue] = [
            "pairwiseDID": pairwiseDID(data), "uid": .string(uid), "type": .string(kind), "statusCode": .string(status),
        ]
        let failed = status == MailboxMessage.deliveryFailed
        if failed { fields["reason"] = data["reason"]?.stringValue.map(JSONValue.string) ?? .null }
        return EventPresentation(
            pushMethod: failed ? "messages.deliveryFailed" : "messages.delivered", fields: .object(fields),
            types: [messageType, kind])
    }

    private static func pairwiseDID(_ data: JSONValue) -> JSONValue { string(data["pairwiseDID"]) }

    private static func string(_ value: JSONValue?) -> JSONValue { value?.stringValue.map(JSONValue.string) ?? .null }
}
