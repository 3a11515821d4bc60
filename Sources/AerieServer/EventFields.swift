import AerieCore
import MessagesPlugin

/// What clients are shown of one event (a NOTIFY payload or a row of the event log, which carry
/// the same fields): the one mapping, used by the tenant push (`messages.received`,
/// `connections.stateChanged`) and the backend stream (`events.event`).
enum EventFields {
    /// A message's fields: `{pairwiseDID, uid, type}`, `type` the download's short kind where
    /// there is one. Also returns the types a push filter may name (full `@type` and short kind).
    static func message(_ data: JSONValue) -> (fields: JSONValue, types: [String])? {
        guard let uid = data["uid"]?.stringValue, let messageType = data["type"]?.stringValue else { return nil }
        let kind = MessageKind.classify(messageType)
        let fields: JSONValue = [
            "pairwiseDID": data["pairwiseDID"]?.stringValue.map(JSONValue.string) ?? .null, "uid": .string(uid),
            "type": .string(kind),
        ]
        return (fields, [messageType, kind])
    }

    /// A connection state change: `{connectionId, state, stateName}` (`state` the seed's number).
    static func connection(_ data: JSONValue) -> JSONValue? {
        guard let id = data["connectionId"]?.stringValue, let name = data["state"]?.stringValue,
            let state = ConnectionRecord.State(rawValue: name)
        else { return nil }
        return ["connectionId": .string(id), "state": .int(Int64(state.number)), "stateName": .string(name)]
    }

    /// A delivery that ended: `{outboxId, connectionId, status, messageUid}` (`sent` or
    /// `failed`; `messageUid` the sent message it carried, null for protocol messages).
    static func delivery(_ data: JSONValue) -> JSONValue? {
        guard let id = data["outboxId"]?.stringValue, let status = data["status"]?.stringValue else { return nil }
        return [
            "outboxId": .string(id), "connectionId": data["connectionId"]?.stringValue.map(JSONValue.string) ?? .null,
            "status": .string(status), "messageUid": data["messageUid"]?.stringValue.map(JSONValue.string) ?? .null,
        ]
    }

    /// The fields of any logged kind (nil: unknown kind or malformed).
    static func fields(kind: String, data: JSONValue) -> JSONValue? {
        switch kind {
        case "message": message(data)?.fields
        case "connection": connection(data)
        case "delivery": delivery(data)
        default: nil
        }
    }
}
