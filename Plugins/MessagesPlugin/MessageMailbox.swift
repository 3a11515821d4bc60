import AerieCore
import Foundation

/// The tenant mailbox as the SDK sees it: download grouped by connection, status updates.
public struct MessageMailbox: Sendable {
    public init() {}

    /// One page in arrival order, and the cursor after it when the page is full.
    func download(_ query: MailboxQuery, tenant: TenantContext) async throws -> (connections: JSONValue, nextCursor: String?) {
        // One statement: a read (one round trip) rather than a transaction (two).
        let entries = try await tenant.database.read { tx in try tx.mailbox.download(query) }
        let next = entries.count == query.limit ? entries.last.map { MailboxCursor.encode($0.position) } : nil
        return (Self.grouped(entries), next)
    }

    /// `[{pairwiseDID, msgs: [...]}]`, connections in the order of their first message.
    static func grouped(_ entries: [MailboxEntry]) -> JSONValue {
        var order: [String] = []
        var groups: [String: [JSONValue]] = [:]
        // A page holds few distinct types: each is classified once.
        var kinds: [String: String] = [:]
        for entry in entries {
            if groups[entry.pairwiseDid] == nil { order.append(entry.pairwiseDid) }
            groups[entry.pairwiseDid, default: []].append(view(entry, kinds: &kinds))
        }
        return .array(order.map { ["pairwiseDID": .string($0), "msgs": .array(groups[$0] ?? [])] })
    }

    /// One message in the seed's shape. `refMsgId` is the thread the message answers, when it
    /// names one other than itself; `payload` exists for the SDK's sake. A message the tenant sent
    /// has our pairwise DID as `senderDID`, `direction: "sent"`, and, when its delivery failed,
    /// `deliveryDetails: [{statusCode: "MS-105", reason}]`; received ones are as before.
    /// `kinds` memoises `MessageKind.classify` over a page.
    static func view(_ entry: MailboxEntry, kinds: inout [String: String]) -> JSONValue {
        let m = entry.message
        let rawType = entry.payloadType ?? m.type
        let kind: String
        if let known = kinds[rawType] {
            kind = known
        } else {
            kind = MessageKind.classify(rawType)
            kinds[rawType] = kind
        }
        let refMsgId: JSONValue = m.threadId.flatMap { $0 == m.messageId ? nil : JSONValue.string($0) } ?? .null
        let sent = m.direction == .sent
        var view: JSONValue = [
            "statusCode": .string(m.status),
            "payload": .null,
            "senderDID": (sent ? entry.pairwiseDid : entry.theirDid).map(JSONValue.string) ?? .null,
            "uid": .string(m.uid.lowercasedString),
            "type": .string(kind),
            "refMsgId": refMsgId,
            "deliveryDetails": .array(
                m.deliveryError.map { [["statusCode": .string(m.status), "reason": .string($0)]] } ?? []),
            "decryptedPayload": .string(entry.payloadJSON),
        ]
        if sent, case .object(var fields) = view {
            fields["direction"] = "sent"
            view = .object(fields)
        }
        return view
    }

    /// Sets `status` on the listed messages, all in one transaction; uids that are not the
    /// tenant's messages on that connection come back under `notFound` and change nothing.
    func updateStatus(_ status: String, messages: [UpdateStatusParams.Item], tenant: TenantContext) async throws -> JSONValue {
        let outcome = try await tenant.database.transaction { tx -> (updated: Int, notFound: [(String, [String])]) in
            var updated = 0
            var notFound: [(String, [String])] = []
            for item in messages {
                var seen = Set<String>()
                let requested = item.uids.filter { seen.insert($0.lowercased()).inserted }
                let uids = requested.compactMap { UUID(text: $0) }
                let matched = Set(try tx.mailbox.updateStatus(uids, pairwiseDid: item.pairwiseDID, to: status))
                updated += matched.count
                let missing = requested.filter { UUID(text: $0).map { !matched.contains($0) } ?? true }
                if !missing.isEmpty { notFound.append((item.pairwiseDID, missing)) }
            }
            return (updated, notFound)
        }
        return [
            "updated": .int(Int64(outcome.updated)),
            "notFound": .array(outcome.notFound.map { ["pairwiseDID": .string($0.0), "uids": .array($0.1.map(JSONValue.string))] }),
        ]
    }
}
