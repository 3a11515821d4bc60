import AerieCore
import Foundation

/// The SDK's message statuses.
enum MessageStatus {
    static let all: Set<String> = ["MS-101", "MS-102", "MS-103", "MS-104", "MS-105", "MS-106"]

    static func validated(_ code: String, field: String) throws -> String {
        guard all.contains(code) else {
            throw AerieError.invalidParams("\(field) must be one of MS-101..MS-106", field: field)
        }
        return code
    }
}

/// `messages.download` and `messages.downloadPage`.
struct DownloadParams: Decodable, Sendable, DocumentedParams {
    static let defaultLimit = 100
    static let maxLimit = 500
    static let maxFilterItems = 1000

    var status: JSONValue?
    var uids: JSONValue?
    var pairwiseDids: JSONValue?
    var cursor: String?
    var limit: Int?

    static let documentation = [
        ParamDoc("status", "string|string[]", required: false, "status code(s) MS-101..MS-106; default MS-103"),
        ParamDoc("uids", "string|string[]", required: false, "message uids (a list, or comma-separated as the SDK passes them; empty: any)"),
        ParamDoc("pairwiseDids", "string|string[]", required: false, "our pairwise DIDs of the connections (list or comma-separated)"),
        ParamDoc("cursor", "string", required: false, "nextCursor of a previous page"),
        ParamDoc("limit", "integer", required: false, "page size, 1..500, default 100"),
    ]

    func query() throws -> MailboxQuery {
        let statuses = try (Self.list(status, field: "status") ?? [MailboxMessage.received]).map {
            try MessageStatus.validated($0, field: "status")
        }
        let uids = try Self.list(uids, field: "uids")?.map { text in
            guard let uid = UUID(text: text) else { throw AerieError.invalidParams("uids must be message uids", field: "uids") }
            return uid
        }
        let limit = limit ?? Self.defaultLimit
        guard (1...Self.maxLimit).contains(limit) else {
            throw AerieError.invalidParams("limit must be between 1 and \(Self.maxLimit)", field: "limit")
        }
        return MailboxQuery(
            statuses: statuses, uids: uids, pairwiseDids: try Self.list(pairwiseDids, field: "pairwiseDids"),
            after: try cursor.map(MailboxCursor.decode), limit: limit)
    }

    /// A string (one value, or comma-separated values) or an array of strings; nil when absent or empty.
    static func list(_ value: JSONValue?, field: String) throws -> [String]? {
        let items: [String]
        switch value {
        case nil, .null?: return nil
        case .string(let text)?:
            items = text.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }
        case .array(let values)?:
            items = try values.map {
                guard let text = $0.stringValue else { throw AerieError.invalidParams("\(field) must hold strings", field: field) }
                return text
            }
        default: throw AerieError.invalidParams("\(field) must be a string or a list of strings", field: field)
        }
        // The SDK passes "" for "no filter".
        if items.isEmpty { return nil }
        guard items.count <= maxFilterItems else {
            throw AerieError.invalidParams("\(field) may name at most \(maxFilterItems) values", field: field)
        }
        return items
    }
}

/// `messages.updateStatus`: the SDK's `updateMessages(status, [{pairwiseDID, uids}])`.
struct UpdateStatusParams: Decodable, Sendable, DocumentedParams {
    static let maxConnections = 100
    static let maxUids = 1000

    struct Item: Decodable, Sendable {
        var pairwiseDID: String
        var uids: [String]
    }

    var status: String
    var messages: [Item]

    static let documentation = [
        ParamDoc("status", "string", "the new status, MS-101..MS-106 (MS-106: reviewed)"),
        ParamDoc("messages", "array", "[{pairwiseDID, uids}]: at most 100 connections and 1000 uids in all"),
    ]

    func validated() throws -> (status: String, messages: [Item]) {
        let status = try MessageStatus.validated(status, field: "status")
        guard messages.count <= Self.maxConnections else {
            throw AerieError.invalidParams("messages may name at most \(Self.maxConnections) connections", field: "messages")
        }
        guard messages.reduce(0, { $0 + $1.uids.count }) <= Self.maxUids else {
            throw AerieError.invalidParams("messages may name at most \(Self.maxUids) uids", field: "messages")
        }
        return (status, messages)
    }
}

/// `messages.subscribe`: optional filters, as lists or comma-separated strings like the download's.
struct SubscribeParams: Decodable, Sendable, DocumentedParams {
    var types: JSONValue?
    var pairwiseDids: JSONValue?

    static let documentation = [
        ParamDoc("types", "string|string[]", required: false, "message types for messages.received (default: all)"),
        ParamDoc("pairwiseDids", "string|string[]", required: false, "our pairwise DIDs of the connections (default: all)"),
    ]

    func filter() throws -> EventFilter {
        EventFilter(
            types: try DownloadParams.list(types, field: "types").map { Set($0.map(InboundMessage.normalizedType)) },
            pairwiseDids: try DownloadParams.list(pairwiseDids, field: "pairwiseDids").map(Set.init))
    }
}

/// `messages.send`.
struct SendParams: Decodable, Sendable, DocumentedParams {
    var connectionId: String
    var message: JSONValue
    var replyTo: String?

    static let documentation = [
        ParamDoc("connectionId", "string", "an established connection (state 4 accepted or 5 reused)"),
        ParamDoc(
            "message", "object",
            "the DIDComm v1 message: @type (a message type URI) and body; @id filled in when missing; at most 64 KiB"),
        ParamDoc("replyTo", "string", required: false, "uid of a message of the same connection: sets ~thread.thid to its thread"),
    ]
}

/// `messages.sendText`.
struct SendTextParams: Decodable, Sendable, DocumentedParams {
    var connectionId: String
    var content: String
    var replyTo: String?

    static let documentation = [
        ParamDoc("connectionId", "string", "an established connection (state 4 accepted or 5 reused)"),
        ParamDoc("content", "string", "the text, 1 to 32768 bytes"),
        ParamDoc("replyTo", "string", required: false, "uid of a message of the same connection: sets ~thread.thid to its thread"),
    ]
}

/// Ids of the send params, checked before any work.
enum SendIds {
    static func parse(connectionId: String, replyTo: String?) throws -> (connection: UUID, replyTo: UUID?) {
        guard let connection = UUID(text: connectionId) else {
            throw AerieError.invalidParams("connectionId must be a connection id (UUID)", field: "connectionId")
        }
        let reply = try replyTo.map { text -> UUID in
            guard let uid = UUID(text: text) else {
                throw AerieError.invalidParams("replyTo must be a message uid", field: "replyTo")
            }
            return uid
        }
        return (connection, reply)
    }
}

/// What `messages.send` and `messages.sendText` answer.
struct SentResult: Encodable, Sendable {
    var uid: String
    var messageId: String
    var connectionId: String
    var pairwiseDID: String?
    var statusCode: String
    var threadId: String?

    enum CodingKeys: String, CodingKey {
        case uid, messageId = "@id", connectionId, pairwiseDID, statusCode, threadId
    }
}
