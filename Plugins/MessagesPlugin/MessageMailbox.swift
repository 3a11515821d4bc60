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
        // Entries are passed on borrowed from the buffer: an array subscript copied each one
        // (a retain and a release of every string it holds).
        entries.withUnsafeBufferPointer { entries in
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
    }

    /// One message in the seed's shape: `{decryptedPayload, deliveryDetails, [direction],
    /// payload, refMsgId, senderDID, statusCode, type, uid}`. `decryptedPayload` is the payload's
    /// JSON text as a string (the sealed row's own text of it, passed on unparsed); `payload`
    /// exists for the SDK's sake. `refMsgId` is the thread the message answers, when it names
    /// one other than itself. A message the tenant sent has our pairwise DID as `senderDID`,
    /// `direction: "sent"`, and, when its delivery failed, `deliveryDetails: [{reason,
    /// statusCode: "MS-105"}]`; received ones have no `direction`.
    static func writeMessage(_ entry: MailboxEntry, kinds: inout KindMemo, into writer: inout JSONWriter) {
        let sent = entry.direction == .sent
        writer.object { members in
            members.member(Key.decryptedPayload, string: entry.payloadJSON)
            members.member(Key.deliveryDetails) { writer in
                writer.array { details in
                    if let reason = entry.deliveryError {
                        details.item { writer in
                            writer.object { detail in
                                detail.member(Key.reason, string: reason)
                                detail.member(Key.statusCode, string: entry.status)
                            }
                        }
                    }
                }
            }
            if sent { members.member(Key.direction, string: "sent") }
            members.member(Key.payload, string: nil)
            let answers = entry.threadId.flatMap { $0 != entry.messageId ? $0 : nil }
            members.member(Key.refMsgId, string: answers)
            members.member(Key.senderDID, string: sent ? entry.pairwiseDid : entry.theirDid)
            members.member(Key.statusCode, string: entry.status)
            members.member(Key.type, string: kinds.kind(of: entry))
            members.member(Key.uid, string: entry.uid)
        }
    }

    /// The members of a message (static keys: nothing to escape). `payload` is always null (the
    /// SDK's field).
    private enum Key {
        static let decryptedPayload = JSONKey("decryptedPayload")
        static let deliveryDetails = JSONKey("deliveryDetails")
        static let direction = JSONKey("direction")
        static let payload = JSONKey("payload")
        static let reason = JSONKey("reason")
        static let refMsgId = JSONKey("refMsgId")
        static let senderDID = JSONKey("senderDID")
        static let statusCode = JSONKey("statusCode")
        static let type = JSONKey("type")
        static let uid = JSONKey("uid")
    }

    /// The `type` the answer shows for a message: `MessageKind.classify` of its payload's
    /// `@type`, memoised over a page (the last stored type, then a dictionary). The stored type
    /// is that `@type` with its prefix normalised, which classify normalises anyway: a type it
    /// names a kind of is answered from the stored type alone; only one it does not (answered as
    /// the sender wrote it) reads the payload's own `@type`.
    struct KindMemo {
        private var last: (type: String, kind: String?)?
        private var known: [String: String?] = [:]

        mutating func kind(of entry: MailboxEntry) -> String {
            if let last, last.type == entry.type { return last.kind ?? Self.unnamed(entry) }
            let kind: String?
            if let known = known[entry.type] {
                kind = known
            } else {
                let classified = MessageKind.classify(entry.type)
                kind = classified == entry.type ? nil : classified
                known[entry.type] = kind
            }
            last = (entry.type, kind)
            return kind ?? Self.unnamed(entry)
        }

        /// A type without a short kind: the payload's `@type` as written, else the stored one.
        private static func unnamed(_ entry: MailboxEntry) -> String {
            entry.payloadType.map(MessageKind.classify) ?? entry.type
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
