import AerieCore
import AerieStore
import AerieTesting
import Foundation
import Testing

/// `connections`, `mailbox` and `outbox` on a real PostgreSQL, always with two tenants.
@Suite(.timeLimit(.minutes(10))) struct ConnectionStoreTests {
    static func record(invitationId: String, key: String, publicDid: String? = nil) -> ConnectionRecord {
        ConnectionRecord(
            invitation: ["@id": .string(invitationId)], invitationKind: "aries", invitationId: invitationId,
            publicDid: publicDid, firstRecipientKey: key, invitationEndpoint: "http://peer.example/in",
            invitationRoutingKeys: ["R1"], label: "Faber")
    }

    @Test func connectionsRoundTripPageAndMatch() async throws {
        try await StoreFixture.with { fixture in
            let a = fixture.runtime.sealed(try await fixture.createTenant("A").id)
            let b = fixture.runtime.sealed(try await fixture.createTenant("B").id)
            let first = Self.record(invitationId: "inv-1", key: "KEY1", publicDid: "DIDX")
            let second = Self.record(invitationId: "inv-2", key: "KEY2")
            try await a.transaction { tx in
                try tx.connections.insert(first)
                try tx.connections.insert(second)
            }
            // Same invitation stored by B: a separate row, invisible to A.
            let bCopy = Self.record(invitationId: "inv-1", key: "KEY1")
            try await b.transaction { try $0.connections.insert(bCopy) }

            let loaded = try #require(try await a.transaction { try $0.connections.get(first.id) })
            #expect(loaded.invitation == ["@id": "inv-1"])
            #expect(loaded.invitationRoutingKeys == ["R1"])
            #expect(loaded.state == .initialized)

            var changed = first
            changed.state = .requested
            changed.myDid = "MYDID"
            changed.myVerkey = "MYVERKEY"
            changed.threadId = "req-1"
            changed.problemReport = ["explain": "x"]
            let toWrite = changed
            let updated = try await a.transaction { try $0.connections.update(toWrite) }
            #expect(updated)
            let byKey = try await a.transaction { try $0.connections.findByMyVerkey("MYVERKEY") }
            #expect(byKey?.id == first.id && byKey?.threadId == "req-1" && byKey?.problemReport == ["explain": "x"])
            #expect(try await a.transaction { try $0.connections.findByMyDid("MYDID") }?.id == first.id)
            #expect(try await b.transaction { try $0.connections.findByMyVerkey("MYVERKEY") } == nil)

            // Matching by @id, public DID, first key; B's own row for B.
            #expect(try await a.transaction { try $0.connections.findMatching(invitationId: "inv-2", publicDid: nil, firstRecipientKey: nil) }?.id == second.id)
            #expect(try await a.transaction { try $0.connections.findMatching(invitationId: "new", publicDid: "DIDX", firstRecipientKey: nil) }?.id == first.id)
            #expect(try await a.transaction { try $0.connections.findMatching(invitationId: "new", publicDid: nil, firstRecipientKey: "KEY2") }?.id == second.id)
            #expect(try await a.transaction { try $0.connections.findMatching(invitationId: "new", publicDid: nil, firstRecipientKey: "NONE") } == nil)
            #expect(try await b.transaction { try $0.connections.findMatching(invitationId: "inv-1", publicDid: nil, firstRecipientKey: nil) }?.id == bCopy.id)

            // Keyset paging and the state filter.
            let page1 = try await a.transaction { try $0.connections.list(after: nil, state: nil, limit: 1) }
            let page2 = try await a.transaction { try $0.connections.list(after: page1.last?.id, state: nil, limit: 1) }
            let page3 = try await a.transaction { try $0.connections.list(after: page2.last?.id, state: nil, limit: 1) }
            #expect(Set((page1 + page2).map(\.id)) == [first.id, second.id])
            #expect(page3.isEmpty)
            #expect(try await a.transaction { try $0.connections.list(after: nil, state: .requested, limit: 10) }.map(\.id) == [first.id])
            #expect(try await b.transaction { try $0.connections.list(after: nil, state: nil, limit: 10) }.map(\.id) == [bCopy.id])
        }
    }

    /// Keyset pages of a tenant with many connections, with and without the state filter (each
    /// combination of filters is its own statement): every row once, in id order, none of B's.
    @Test func connectionPagesCoverEveryRowInIdOrder() async throws {
        try await StoreFixture.with { fixture in
            let a = fixture.runtime.sealed(try await fixture.createTenant("A").id)
            let b = fixture.runtime.sealed(try await fixture.createTenant("B").id)
            let records = (0..<250).map { index in
                var record = Self.record(invitationId: "inv-\(index)", key: "KEY\(index)")
                record.state = index.isMultiple(of: 3) ? .accepted : .requested
                return record
            }
            try await a.transaction { tx in for record in records { try tx.connections.insert(record) } }
            let bRecords = (0..<5).map { Self.record(invitationId: "inv-\($0)", key: "KEY\($0)") }
            try await b.transaction { tx in for record in bRecords { try tx.connections.insert(record) } }

            func pages(_ state: ConnectionRecord.State?) async throws -> [[UUID]] {
                var pages: [[UUID]] = []
                var after: UUID? = nil
                while true {
                    let cursor = after
                    let rows: [ConnectionRecord] = try await a.read { tx in try tx.connections.list(after: cursor, state: state, limit: 40) }
                    if rows.isEmpty { return pages }
                    pages.append(rows.map(\.id))
                    after = rows.last?.id
                }
            }
            let inIdOrder = { (ids: [UUID]) in ids.map(\.lowercasedString).sorted() }
            let all = try await pages(nil)
            #expect(all.count == 7 && all.dropLast().allSatisfy { $0.count == 40 })
            #expect(all.flatMap { $0 }.map(\.lowercasedString) == inIdOrder(records.map(\.id)))
            let accepted = try await pages(.accepted)
            #expect(accepted.flatMap { $0 }.map(\.lowercasedString) == inIdOrder(records.filter { $0.state == .accepted }.map(\.id)))
            #expect(accepted.count == 3)
            let bRows: [ConnectionRecord] = try await b.read { tx in try tx.connections.list(after: nil, state: nil, limit: 100) }
            #expect(bRows.map(\.id.lowercasedString) == inIdOrder(bRecords.map(\.id)))
        }
    }

    @Test func mailboxStoresADuplicateDeliveryOnce() async throws {
        try await StoreFixture.with { fixture in
            let a = fixture.runtime.sealed(try await fixture.createTenant("A").id)
            let b = fixture.runtime.sealed(try await fixture.createTenant("B").id)
            let connection = Self.record(invitationId: "inv", key: "K")
            try await a.transaction { try $0.connections.insert(connection) }
            let message = MailboxMessage(
                connectionId: connection.id, recipientVerkey: "MINE", senderVerkey: "THEIRS", messageId: "m-1",
                type: "https://didcomm.org/connections/1.0/response", threadId: "t", payload: ["@id": "m-1"])
            var duplicate = message
            duplicate.uid = UUID()
            let first = try await a.transaction { try $0.mailbox.insert(message) }
            let again = try await a.transaction { [duplicate] in try $0.mailbox.insert(duplicate) }
            #expect(first.inserted && !again.inserted && first.uid == again.uid)
            // Another tenant's mailbox is separate.
            var forB = message
            forB.uid = UUID()
            let bMessage = forB
            let bInserted = try await b.transaction { try $0.mailbox.insert(bMessage) }
            #expect(bInserted.inserted)

            let waiting = try await a.transaction {
                try $0.mailbox.list(connectionId: connection.id, status: MailboxMessage.received, type: nil, limit: 10)
            }
            #expect(waiting.map(\.uid) == [first.uid])
            #expect(waiting.first?.payload == ["@id": "m-1"])
            #expect(try await a.transaction { try $0.mailbox.updateStatus(first.uid, to: MailboxMessage.reviewed) })
            #expect(try await a.transaction { try $0.mailbox.get(first.uid) }?.status == "MS-106")
            #expect(try await b.transaction { try $0.mailbox.get(first.uid) } == nil)
        }
    }

    @Test func outboxDueRowsAcrossTenantsRevealOnlyIds() async throws {
        try await StoreFixture.with { fixture in
            let aID = try await fixture.createTenant("A").id
            let bID = try await fixture.createTenant("B").id
            let a = fixture.runtime.sealed(aID)
            let b = fixture.runtime.sealed(bID)
            let itemA = OutboxItem(connectionId: nil, endpoint: "http://peer.example/a", envelope: [1, 2, 3])
            let itemB = OutboxItem(connectionId: nil, endpoint: "http://peer.example/b", envelope: [4, 5])
            let later = OutboxItem(
                connectionId: nil, endpoint: "http://peer.example/c", envelope: [6], nextAttemptAt: Date().addingTimeInterval(3600))
            try await a.transaction { tx in
                try tx.outbox.enqueue(itemA)
                try tx.outbox.enqueue(later)
            }
            try await b.transaction { try $0.outbox.enqueue(itemB) }

            let due = try await fixture.runtime.dueOutbox(limit: 10)
            #expect(Set(due.map { "\($0.tenant.rawValue)/\($0.id)" }) == ["\(aID.rawValue)/\(itemA.id)", "\(bID.rawValue)/\(itemB.id)"])
            // Each row names its destination; a busy destination's rows are skipped, whoever's.
            #expect(Set(due.map(\.destination)) == ["http://peer.example"])
            #expect(try await fixture.runtime.dueOutbox(limit: 10, busyDestinations: ["http://peer.example"]).isEmpty)
            let other = OutboxItem(connectionId: nil, endpoint: "HTTPS://Other.Example:8443/x?y#z", envelope: [7])
            try await b.transaction { try $0.outbox.enqueue(other) }
            let skipping = try await fixture.runtime.dueOutbox(limit: 10, busyDestinations: ["http://peer.example"])
            #expect(skipping.map(\.id) == [other.id])
            #expect(skipping.first?.destination == "https://other.example:8443")
            try await b.transaction { try $0.outbox.recordFailure(other.id, attempts: 1, nextAttemptAt: nil, error: "test") }
            // Rows themselves stay behind row-level security.
            #expect(try await b.transaction { try $0.outbox.pendingForUpdate(itemA.id) } == nil)
            let loaded = try #require(try await a.transaction { try $0.outbox.pendingForUpdate(itemA.id) })
            #expect(loaded.envelope == [1, 2, 3] && loaded.endpoint == "http://peer.example/a")

            // A claim leases the row: a second poller does not get it.
            #expect(try await a.transaction { try $0.outbox.claim(itemA.id, leaseSeconds: 60) }?.envelope == [1, 2, 3])
            #expect(try await a.transaction { try $0.outbox.claim(itemA.id, leaseSeconds: 60) } == nil)
            #expect(try await a.transaction { try $0.outbox.claim(later.id, leaseSeconds: 60) } == nil)
            try await a.transaction { try $0.outbox.markSent(itemA.id) }
            try await b.transaction {
                try $0.outbox.recordFailure(itemB.id, attempts: 1, nextAttemptAt: Date().addingTimeInterval(3600), error: "down")
            }
            #expect(try await fixture.runtime.dueOutbox(limit: 10).isEmpty)
            try await b.transaction { try $0.outbox.recordFailure(itemB.id, attempts: 2, nextAttemptAt: nil, error: "gave up") }
            #expect(try await b.transaction { try $0.outbox.pendingForUpdate(itemB.id) } == nil)
        }
    }

    @Test func newTablesHaveForcedRowLevelSecurity() async throws {
        try await StoreFixture.with { fixture in
            let rows = try await fixture.asSuperuser { session in
                try session.query(
                    """
                    SELECT relname, relrowsecurity, relforcerowsecurity FROM pg_class
                    WHERE oid IN ('aerie.connections'::regclass, 'aerie.mailbox'::regclass, 'aerie.outbox'::regclass,
                                  'aerie.oob_invitations'::regclass)
                    ORDER BY relname
                    """
                ).allRows()
            }
            #expect(rows == [["connections", "t", "t"], ["mailbox", "t", "t"], ["oob_invitations", "t", "t"], ["outbox", "t", "t"]])
        }
    }

    /// The inviter role, multi-use flag and alias (issue 17) are sealed with the row: they read
    /// back, the database holds none of them in clear, and the other tenant sees no row.
    @Test func inviterFieldsAreSealedAndStayWithTheirTenant() async throws {
        try await StoreFixture.with { fixture in
            let a = fixture.runtime.sealed(try await fixture.createTenant("A").id)
            let b = fixture.runtime.sealed(try await fixture.createTenant("B").id)
            let invitation = ConnectionRecord(
                invitation: ["@id": "ours-1"], invitationKind: "aries", myVerkey: "INVITATIONKEY1", role: .inviter,
                multiUse: true, alias: "front-desk-alias")
            try await a.transaction { try $0.connections.insert(invitation) }
            let loaded = try #require(try await a.transaction { try $0.connections.findByMyVerkey("INVITATIONKEY1") })
            #expect(loaded.role == .inviter && loaded.multiUse == true && loaded.alias == "front-desk-alias")
            #expect(loaded.isOpenInvitation)
            #expect(try await b.transaction { try $0.connections.findByMyVerkey("INVITATIONKEY1") } == nil)
            #expect(try await b.transaction { try $0.connections.get(invitation.id) } == nil)
            let clear = try await fixture.asSuperuser { session in
                try session.query("SELECT count(*) FROM aerie.connections WHERE sealed::text LIKE '%front-desk%' OR label IS NOT NULL")
                    .int(0, 0)
            }
            #expect(clear == 0)
            let sealedBytes = try await fixture.asSuperuser { session in
                try session.query("SELECT sealed FROM aerie.connections").bytes(0, 0) ?? []
            }
            #expect(!String(decoding: sealedBytes, as: UTF8.self).contains("front-desk-alias"))
            #expect(!String(decoding: sealedBytes, as: UTF8.self).contains("inviter"))
        }
    }

    /// The import mark of `insertImported` covers its own insert only: a connection inserted
    /// after it in the same transaction logs `initialized` then `requested`, as any other does.
    /// Two tenants: each log holds only its own transaction's events.
    @Test func theImportMarkEndsWithItsInsert() async throws {
        try await StoreFixture.with { fixture in
            var states: [String: [String]] = [:]
            for label in ["A", "B"] {
                let tenant = try await fixture.createLoggedTenant(label).id
                var imported = Self.record(invitationId: "inv-imported-\(label)", key: "KEY-I-\(label)")
                var next = Self.record(invitationId: "inv-next-\(label)", key: "KEY-N-\(label)")
                imported.state = .requested
                imported.myDid = "DID-I-\(label)"
                imported.myVerkey = "VERKEY-I-\(label)"
                imported.threadId = "thread"
                next.state = .requested
                next.myDid = "DID-N-\(label)"
                next.myVerkey = "VERKEY-N-\(label)"
                next.threadId = "thread"
                let (i, n) = (imported, next)
                try await fixture.runtime.sealed(tenant).transaction { tx in
                    try tx.connections.insertImported(i)
                    try tx.connections.insert(n)
                }
                states[label] = try await fixture.asSuperuser { session in
                    let rows = try session.query(
                        "SELECT data->>'connectionId', data->>'state' FROM aerie.events WHERE tenant_id = $1::uuid ORDER BY id",
                        [.text(tenant.rawValue)])
                    return (0..<rows.rowCount).map { row in
                        (rows.string(row, 0) == i.id.lowercasedString ? "imported " : "next ") + (rows.string(row, 1) ?? "")
                    }
                }
            }
            #expect(states["A"] == ["imported requested", "next initialized", "next requested"])
            #expect(states["B"] == states["A"])
        }
    }

    /// schema/0030: a connection inserted in state `requested` (`connections.accept`, in one
    /// transaction) records the events and NOTIFYs that inserting it `initialized` and updating it
    /// to `requested` did: `initialized` (pairwiseDID null) then `requested`, in id order, the
    /// same payloads but for the connection's id. Other states inserted record one event, as
    /// before; the other tenant's log holds only its own.
    @Test func aConnectionInsertedRequestedLogsInitializedThenRequested() async throws {
        try await StoreFixture.with { fixture in
            let tenantA = try await fixture.createLoggedTenant("A").id
            let tenantB = try await fixture.createLoggedTenant("B").id
            let (heard, listener) = try await fixture.listen()
            defer { listener.stop() }

            @Sendable func requested(_ r: ConnectionRecord) -> ConnectionRecord {
                var next = r
                next.state = .requested
                next.myDid = "DID-\(r.id.lowercasedString.prefix(8))"
                next.myVerkey = "VERKEY-\(r.id.lowercasedString)"
                next.threadId = "thread"
                return next
            }
            // The previous form: inserted initialized, updated to requested, in one transaction.
            let old = Self.record(invitationId: "inv-old", key: "KEY1")
            try await fixture.runtime.sealed(tenantA).transaction { tx in
                try tx.connections.insert(old)
                try tx.connections.updateQueued(requested(old))
            }
            // The new form: inserted requested.
            let new = Self.record(invitationId: "inv-new", key: "KEY2")
            try await fixture.runtime.sealed(tenantA).transaction { tx in try tx.connections.insert(requested(new)) }
            // B: one inserted requested, one inserted in another state (one event).
            let other = Self.record(invitationId: "inv-new", key: "KEY2")
            var responded = Self.record(invitationId: "inv-b", key: "KEY3")
            responded.state = .responded
            let respondedRow = responded
            try await fixture.runtime.sealed(tenantB).transaction { tx in
                try tx.connections.insert(requested(other))
                try tx.connections.insert(respondedRow)
            }
            // An imported `requested` record (connections.deserialize) logs its one state; the
            // setting that says so ends with its transaction.
            let imported = Self.record(invitationId: "inv-imported", key: "KEY4")
            try await fixture.runtime.sealed(tenantB).transaction { tx in try tx.connections.insertImported(requested(imported)) }
            let afterImport = Self.record(invitationId: "inv-after", key: "KEY5")
            try await fixture.runtime.sealed(tenantB).transaction { tx in try tx.connections.insert(requested(afterImport)) }

            let events: @Sendable (TenantID) async throws -> [JSONValue] = { tenant in
                try await fixture.asSuperuser { session in
                    let rows = try session.query(
                        "SELECT kind, data::text, backend_id IS NOT DISTINCT FROM (SELECT backend_id FROM aerie.tenants WHERE id = $1::uuid) FROM aerie.events WHERE tenant_id = $1::uuid ORDER BY id",
                        [.text(tenant.rawValue)])
                    return try (0..<rows.rowCount).map { row in
                        #expect(rows.string(row, 0) == "connection")
                        #expect(rows.bool(row, 2) == true)
                        return try JSONValue(parsing: rows.string(row, 1) ?? "")
                    }
                }
            }
            // Each event with its connection's id and DID replaced, to compare the two forms.
            func shape(_ events: [JSONValue], _ r: ConnectionRecord) -> [String] {
                events.filter { $0["connectionId"]?.stringValue == r.id.lowercasedString }.map {
                    $0.jsonString.replacingOccurrences(of: r.id.lowercasedString, with: "ID")
                        .replacingOccurrences(of: requested(r).myDid!, with: "DID")
                }
            }
            let a = try await events(tenantA)
            #expect(a.count == 4)
            #expect(shape(a, old).count == 2)
            #expect(shape(a, new) == shape(a, old), "\(a)")
            #expect(a.compactMap { $0["state"]?.stringValue } == ["initialized", "requested", "initialized", "requested"])
            #expect(a[2]["pairwiseDID"] == .null && a[3]["pairwiseDID"] == .string(requested(new).myDid!))
            let b = try await events(tenantB)
            #expect(b.compactMap { $0["state"]?.stringValue } == ["initialized", "requested", "responded", "requested", "initialized", "requested"])
            #expect(shape(b, imported).count == 1)
            #expect(shape(b, afterImport) == shape(a, old))
            #expect(b.allSatisfy { $0["connectionId"]?.stringValue != new.id.lowercasedString })

            // The NOTIFYs: the same payloads in the same order for both forms, each tenant's own.
            let notified = try await heard.parsed(kind: "connection", atLeast: 10)
            #expect(notified.count == 10)
            let ofA = notified.filter { $0["tenant"] == .string(tenantA.rawValue) }
            #expect(shape(ofA, new) == shape(ofA, old), "\(ofA)")
            #expect(ofA.compactMap { $0["state"]?.stringValue } == ["initialized", "requested", "initialized", "requested"])
            #expect(notified.filter { $0["tenant"] == .string(tenantB.rawValue) }.compactMap { $0["state"]?.stringValue }
                == ["initialized", "requested", "responded", "requested", "initialized", "requested"])
        }
    }

    /// schema/0031: a mailbox row inserted fires one trigger that counts it (every row, sent
    /// ones too) and then logs and NOTIFYs a received one as a `message` event with its
    /// connection's pairwise DID (looked up by the connection, or by the recipient verkey when
    /// the row names none), as the two triggers it replaced did. Two tenants: each count, log and
    /// NOTIFY is its own tenant's. B has no backend: its message is counted and NOTIFYd, and not
    /// logged (schema/0033: the log is a backend's stream).
    @Test func aMailboxRowIsCountedThenLoggedByOneTrigger() async throws {
        try await StoreFixture.with { fixture in
            let tenantA = try await fixture.createLoggedTenant("A").id
            let tenantB = try await fixture.createTenant("B").id
            let (heard, listener) = try await fixture.listen()
            defer { listener.stop() }

            var connection = Self.record(invitationId: "inv-a", key: "KEY-A")
            connection.state = .requested
            connection.myDid = "DID-A"
            connection.myVerkey = "VERKEY-A"
            connection.threadId = "thread"
            let row = connection
            let a = fixture.runtime.sealed(tenantA)
            try await a.transaction { try $0.connections.insert(row) }
            func message(_ id: String, connection: UUID?, recipient: String) -> MailboxMessage {
                MailboxMessage(
                    connectionId: connection, recipientVerkey: recipient, senderVerkey: "THEIRS", messageId: id,
                    type: "https://didcomm.org/basicmessage/1.0/message", threadId: nil, payload: ["@id": .string(id)])
            }
            let linked = message("m-1", connection: row.id, recipient: "VERKEY-A")
            let byVerkey = message("m-2", connection: nil, recipient: "VERKEY-A")
            var sent = message("m-3", connection: row.id, recipient: "VERKEY-A")
            sent.direction = .sent
            sent.status = MailboxMessage.queued
            let sentRow = sent
            try await a.transaction { tx in
                _ = try tx.mailbox.insert(linked)
                #expect(try tx.mailbox.insertSent(sentRow))
                _ = try tx.mailbox.insert(byVerkey)
            }
            let forB = message("m-1", connection: nil, recipient: "VERKEY-B")
            _ = try await fixture.runtime.sealed(tenantB).transaction { try $0.mailbox.insert(forB) }

            let usage: @Sendable (TenantID) async throws -> [Int] = { tenant in
                try await fixture.asSuperuser { session in
                    let r = try session.query(
                        "SELECT sum(mailbox_messages), (sum(mailbox_bytes) > 0)::int FROM aerie.tenant_usage WHERE tenant_id = $1::uuid",
                        [.text(tenant.rawValue)])
                    return [r.int(0, 0) ?? -1, r.int(0, 1) ?? -1]
                }
            }
            #expect(try await usage(tenantA) == [3, 1])
            #expect(try await usage(tenantB) == [1, 1])
            let messages: @Sendable (TenantID) async throws -> [JSONValue] = { tenant in
                try await fixture.asSuperuser { session in
                    let rows = try session.query(
                        "SELECT data::text FROM aerie.events WHERE tenant_id = $1::uuid AND kind = 'message' ORDER BY id",
                        [.text(tenant.rawValue)])
                    return try (0..<rows.rowCount).map { try JSONValue(parsing: rows.string($0, 0) ?? "") }
                }
            }
            let logA = try await messages(tenantA)
            #expect(logA.map { $0["uid"]?.stringValue } == [linked.uid.lowercasedString, byVerkey.uid.lowercasedString])
            #expect(logA.map { $0["pairwiseDID"] } == [.string("DID-A"), .string("DID-A")])
            #expect(logA.allSatisfy { $0["type"] == "https://didcomm.org/basicmessage/1.0/message" })
            #expect(try await messages(tenantB).isEmpty)

            let notified = try await heard.parsed(kind: "message", atLeast: 3)
            #expect(notified.count == 3)
            #expect(notified.filter { $0["tenant"] == .string(tenantA.rawValue) }.map { $0["uid"]?.stringValue }
                == [linked.uid.lowercasedString, byVerkey.uid.lowercasedString])
            #expect(notified.filter { $0["tenant"] == .string(tenantB.rawValue) }.map { $0["uid"]?.stringValue }
                == [forB.uid.lowercasedString])
            #expect(notified.first { $0["tenant"] == .string(tenantB.rawValue) }?["pairwiseDID"] == .null)
            #expect(notified.allSatisfy { $0["uid"]?.stringValue != sentRow.uid.lowercasedString })
        }
    }
}
