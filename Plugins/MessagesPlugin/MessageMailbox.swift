import AerieCore
import Foundation

/// The tenant mailbox as the SDK sees it: download grouped by connection, status updates.
public struct MessageMailbox: Sendable {
    public init() {}

    /// `messages.download`: one page in arrival order, grouped by connection.
    func download(_ query: MailboxQuery, tenant: TenantContext) async throws -> JSONText {
        let entries = try await page(query, tenant: tenant)
        return JSONText(reservingCapacity: Self.estimatedSize(entries)) { Self.writeGrouped(entries, into: &$0) }
    }

    /// `messages.downloadPage`: `{messages: <the download's array>, nextCursor}`, the cursor
    /// after the page when it is full, else null.
    func downloadPage(_ query: MailboxQuery, tenant: TenantContext) async throws -> JSONText {
        let entries = try await page(query, tenant: tenant)
        let next = entries.count == query.limit ? entries.last.map { MailboxCursor.encode($0.position) } : nil
        return JSONText(reservingCapacity: Self.estimatedSize(entries) + 64) { writer in
            writer.object { members in
                members.member("messages") { Self.writeGrouped(entries, into: &$0) }
                members.member("nextCursor") { writer in
                    if let next { writer.string(next) } else { writer.null() }
                }
            }
        }
    }

    /// About what a page's text takes: each message's fixed members and its payload, escaped.
    static func estimatedSize(_ entries: [MailboxEntry]) -> Int {
        entries.reduce(16) { $0 + 320 + $1.payloadJSON.utf8.count * 9 / 8 }
    }

    private func page(_ query: MailboxQuery, tenant: TenantContext) async throws -> [MailboxEntry] {
        // One statement: a read (one round trip) rather than a transaction (two).
        try await tenant.database.read { tx in try tx.mailbox.download(query) }
    }

    /// `[{msgs: [...], pairwiseDID}]`, connections in the order of their first message, written
    /// as text straight away (members in sorted order, as `JSONValue.serialized()` has them): a
    /// page of hundreds of messages built no dictionary per message.
    static func writeGrouped(_ entries: [MailboxEntry], into writer: inout JSONWriter) {
        // Indices of each connection's entries; a page's entries of one connection mostly follow
        // each other, so the last group is tried before the dictionary.
        var groups: [(pairwiseDid: String, entries: [Int])] = []
        var groupOf: [String: Int] = [:]
        for (index, entry) in entries.enumerated() {
            if let last = groups.indices.last, groups[last].pairwiseDid == entry.pairwiseDid {
                groups[last].entries.append(index)
            } else if let group = groupOf[entry.pairwiseDid] {
                groups[group].entries.append(index)
            } else {
                groupOf[entry.pairwiseDid] = groups.count
                groups.append((entry.pairwiseDid, [index]))
            }
        }
        // A page holds few distinct types: each is classified once.
        var kinds = KindMemo()
        writer.array { items in
            for group in groups {
                items.item { writer in
                    writer.object { members in
                        members.member("msgs") { writer in
                            writer.array { messages in
                                for index in group.entries {
                                    messages.item { writeMessage(entries[index], kinds: &kinds, into: &$0) }
                                }
                            }
                        }
                        members.member("pairwiseDID", string: group.pairwiseDid)
                    }
                }
            }
        }
    }

    /// One message in the seed's shape: `{decryptedPayload, deliveryDetails, [direction],
    /// payload, refMsgId, senderDID, statusCode, type, uid}`. `decryptedPayload` is the payload's
    /// JSON text as a string (the sealed row's own text of it, passed on unparsed); `payload`
    /// exists for the SDK's sake. `refMsgId` is the thread the message answers, when it names
    /// one other than itself. A message the tenant sent has our pairwise DID as `senderDID`,
    /// `direction: "sent"`, and, when its delivery failed, `deliveryDetails: [{reason,
    /// statusCode: "MS-105"}]`; received ones have no `direction`.
    static func writeMessage(_ entry: MailboxEntry, kinds: inout KindMemo, into writer: inout JSONWriter) {
        let m = entry.message
        let sent = m.direction == .sent
        writer.object { members in
            members.member("decryptedPayload", string: entry.payloadJSON)
            members.member("deliveryDetails") { writer in
                writer.array { details in
                    if let reason = m.deliveryError {
                        details.item { writer in
                            writer.object { detail in
                                detail.member("reason", string: reason)
                                detail.member("statusCode", string: m.status)
                            }
                        }
                    }
                }
            }
            if sent { members.member("direction", string: "sent") }
            members.member("payload") { $0.null() }
            members.member("refMsgId") { writer in
                if let thread = m.threadId, thread != m.messageId { writer.string(thread) } else { writer.null() }
            }
            members.member("senderDID") { writer in
                if let did = sent ? entry.pairwiseDid : entry.theirDid { writer.string(did) } else { writer.null() }
            }
            members.member("statusCode", string: m.status)
            members.member("type", string: kinds.kind(of: entry.payloadType ?? m.type))
            members.member("uid", string: m.uid.lowercasedString)
        }
    }

    /// `MessageKind.classify` memoised over a page: the last type, then a dictionary.
    struct KindMemo {
        private var last: (type: String, kind: String)?
        private var known: [String: String] = [:]

        mutating func kind(of type: String) -> String {
            if let last, last.type == type { return last.kind }
            let kind: String
            if let known = known[type] {
                kind = known
            } else {
                kind = MessageKind.classify(type)
                known[type] = kind
            }
            last = (type, kind)
            return kind
        }
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
