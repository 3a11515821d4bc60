import AerieCore
import AerieStore
import AerieTesting
import Foundation
import Synchronization
import Testing

/// What the inbound pipeline and the delivery hand-off ask of the store (issue 11 item 3, issue
/// 16): the recipient's key and connection in one read, and outbox rows handed to the delivery
/// service only once committed, under a lease that keeps every scan off them.
@Suite(.timeLimit(.minutes(10))) struct InboundPathStoreTests {
    static let verkeyA = "4koTsSeuhTvYcnNUCpzeazsjzGEh143q1WEDaWKNe8TT"
    static let verkeyB = "BQmpqZg6EAy7ytEaKEEyefAPqSDSKjxvUkXFdV451fYV"
    static let verkeyC = "HZEwrF5NWokpVPaega4bHYjpVvRSuhR2cqNk2T94E4WH"

    static func connection(myVerkey: String, thread: String) -> ConnectionRecord {
        var record = ConnectionRecord(
            invitation: ["@id": .string("inv-\(thread)")], invitationKind: "aries", invitationId: "inv-\(thread)",
            firstRecipientKey: "INVKEY", invitationEndpoint: "http://peer.example/in", label: "Faber")
        record.state = .requested
        record.myDid = "DID-\(thread)"
        record.myVerkey = myVerkey
        record.threadId = thread
        return record
    }

    @Test func inboundRecipientReadsTheFirstHeldKeyWithItsConnection() async throws {
        try await StoreFixture.with { fixture in
            let aID = try await fixture.createTenant("A").id
            let bID = try await fixture.createTenant("B").id
            let a = fixture.runtime.sealed(aID)
            let b = fixture.runtime.sealed(bID)
            let connectionA = Self.connection(myVerkey: Self.verkeyA, thread: "a")
            try await a.transaction { tx in
                try tx.keys.insert(verkey: Self.verkeyA, sealedSecret: [1, 2, 3])
                try tx.keys.insert(verkey: Self.verkeyC, sealedSecret: [7])
                try tx.connections.insert(connectionA)
            }
            try await b.transaction { tx in
                try tx.keys.insert(verkey: Self.verkeyB, sealedSecret: [4, 5])
                try tx.connections.insert(Self.connection(myVerkey: Self.verkeyB, thread: "b"))
            }

            // The first of the keys asked for that A holds, in their order; B's key is not A's.
            let withConnection = try #require(
                try await a.read { try $0.connections.inboundRecipient(verkeys: [Self.verkeyB, Self.verkeyA, Self.verkeyC]) })
            #expect(withConnection.verkey == Self.verkeyA)
            #expect(withConnection.sealedSecret == [1, 2, 3])
            #expect(withConnection.connection?.id == connectionA.id)
            // Its sealed columns are opened like any read of the connection.
            #expect(withConnection.connection?.threadId == "a")
            #expect(withConnection.connection?.firstRecipientKey == "INVKEY")

            let keyOnly = try #require(try await a.read { try $0.connections.inboundRecipient(verkeys: [Self.verkeyC, Self.verkeyA]) })
            #expect(keyOnly.verkey == Self.verkeyC && keyOnly.sealedSecret == [7] && keyOnly.connection == nil)

            // Another tenant's key reads as unknown; so does text that is no verkey at all.
            #expect(try await b.read { try $0.connections.inboundRecipient(verkeys: [Self.verkeyA, Self.verkeyC]) } == nil)
            #expect(try await a.read { try $0.connections.inboundRecipient(verkeys: ["x\"y\\z,{}", "NULL", ""]) } == nil)
            #expect(try await a.read { try $0.connections.inboundRecipient(verkeys: []) } == nil)
            await #expect(throws: AerieError.self) {
                try await a.read { try $0.connections.inboundRecipient(verkeys: Array(repeating: Self.verkeyA, count: 101)) }
            }

            // The endpoint's one round trip before any tenant is known: the owner of the first
            // held key (any tenant's), its wrapped key, and that key with its connection, opened
            // with the owner's sealer (asked for the owner only).
            let directory = fixture.runtime.tenants
            let unknown = Ed25519Like.unknownVerkey
            let asked = Count()
            let sealer: @Sendable (TenantID, [UInt8]) throws -> any ValueSealer = { id, _ in
                asked.value.withLock { $0 += 1 }
                #expect(id == aID)
                return TestKeys.sealer(id)
            }
            let found = try #require(try await directory.inboundRecipient(verkeys: [unknown, Self.verkeyA, Self.verkeyB], recent: true, sealer: sealer))
            #expect(found.tenant == aID)
            #expect(found.activeWrappedDataKey != nil)
            #expect(found.recipient?.verkey == Self.verkeyA && found.recipient?.sealedSecret == [1, 2, 3])
            #expect(found.recipient?.connection?.id == connectionA.id && found.recipient?.connection?.threadId == "a")
            #expect(asked.value.withLock { $0 } == 1)
            // The first key held by anyone names the tenant; its rows are the only ones read.
            let ofB = try #require(try await directory.inboundRecipient(verkeys: [Self.verkeyB, Self.verkeyA], recent: true, sealer: { id, _ in TestKeys.sealer(id) }))
            #expect(ofB.tenant == bID && ofB.recipient?.verkey == Self.verkeyB && ofB.recipient?.connection?.threadId == "b")
            #expect(try await directory.inboundRecipient(verkeys: [unknown, "'; DROP TABLE aerie.tenant_keys; --"], recent: true, sealer: sealer) == nil)
            // A suspended tenant is named without its key, and nothing of it is read or opened.
            #expect(try await directory.setStatus(aID, .suspended))
            let suspended = try #require(try await directory.inboundRecipient(verkeys: [Self.verkeyA], recent: true, sealer: sealer))
            #expect(suspended.tenant == aID && suspended.activeWrappedDataKey == nil && suspended.recipient == nil)
            #expect(asked.value.withLock { $0 } == 1)
        }
    }

    enum Ed25519Like {
        /// Verkey-shaped, held by nobody.
        static let unknownVerkey = "6QSduYdf8Bi6t8PfNm5vNomGWDtXhmMmTRzaciudBXYJ"
    }

    /// Records what the store hands over.
    final class RecordingSignal: OutboxSignal {
        let lease: OutboxLease?
        let handed = Mutex<[(TenantID, [OutboxItem])]>([])

        init(lease: OutboxLease?) { self.lease = lease }

        var enqueueLease: OutboxLease? { lease }

        func committed(_ items: [OutboxItem], tenant: TenantID) {
            handed.withLock { $0.append((tenant, items)) }
        }
    }

    struct Refused: Error {}

    final class Count: Sendable {
        let value = Mutex(0)
    }

    @Test func enqueuedRowsAreHandedOverOnlyOnceCommittedAndLeasedUntilThen() async throws {
        try await StoreFixture.with { fixture in
            let aID = try await fixture.createTenant("A").id
            let bID = try await fixture.createTenant("B").id
            let signal = RecordingSignal(lease: OutboxLease(instance: "handoff-test", seconds: 600))
            let a = fixture.runtime.tenant(aID, outbox: signal).sealing(with: TestKeys.keyring(aID))
            let b = fixture.runtime.sealed(bID)
            let first = OutboxItem(connectionId: nil, endpoint: "http://peer.example/a", envelope: [1])
            let second = OutboxItem(connectionId: nil, endpoint: "http://peer.example/b", envelope: [2])
            try await a.transaction { tx in
                try tx.outbox.enqueue(first)
                try tx.outbox.enqueue(second)
            }
            let handed = signal.handed.withLock { $0 }
            #expect(handed.count == 1)
            #expect(handed.first?.0 == aID)
            #expect(handed.first?.1.map(\.id) == [first.id, second.id])
            #expect(handed.first?.1.allSatisfy { $0.leasedBy == "handoff-test" } == true)

            // A rolled-back transaction hands nothing over (and stores nothing).
            let lost = OutboxItem(connectionId: nil, endpoint: "http://peer.example/c", envelope: [3])
            await #expect(throws: Refused.self) {
                try await a.transaction { tx in
                    try tx.outbox.enqueue(lost)
                    _ = try tx.connections.get(UUID())  // sends the queued insert
                    throw Refused()
                }
            }
            #expect(signal.handed.withLock { $0.count } == 1)
            #expect(try await a.transaction { try $0.outbox.pendingForUpdate(lost.id) } == nil)

            // Leased rows are no scan's, whoever scans: only their holder delivers them, and no
            // claim takes them. A database without the signal still inserts due rows.
            let unleased = OutboxItem(connectionId: nil, endpoint: "http://peer.example/d", envelope: [4])
            try await b.transaction { try $0.outbox.enqueue(unleased) }
            #expect(try await fixture.runtime.dueOutbox(limit: 10).map(\.id) == [unleased.id])
            #expect(try await a.transaction { try $0.outbox.claim(first.id, leaseSeconds: 60) } == nil)

            // The holder died before delivering: its restart takes the leases back and the rows
            // are due for the scan (another server's scan finds them once the lease ends).
            #expect(try await fixture.runtime.releaseOutboxLeases(instance: "handoff-test") == 2)
            #expect(Set(try await fixture.runtime.dueOutbox(limit: 10).map(\.id)) == [first.id, second.id, unleased.id])
            #expect(try await a.transaction { try $0.outbox.claim(first.id, leaseSeconds: 60) }?.envelope == [1])

            // No lease offered (no delivery service, or its backlog is full): due rows, still handed over.
            let dueSignal = RecordingSignal(lease: nil)
            let unleasedA = OutboxItem(connectionId: nil, endpoint: "http://peer.example/e", envelope: [5])
            try await fixture.runtime.tenant(aID, outbox: dueSignal).sealing(with: TestKeys.keyring(aID)).transaction {
                try $0.outbox.enqueue(unleasedA)
            }
            #expect(dueSignal.handed.withLock { $0.first?.1.first?.leasedBy } == .some(nil))
            #expect(try await fixture.runtime.dueOutbox(limit: 10).map(\.id).contains(unleasedA.id))
        }
    }

    /// A Response's transaction stores its message ahead of the connection's lock; a copy stored
    /// before voids that try and the body runs again with the real claim.
    @Test func storingAheadHandlesEachCopyOnce() async throws {
        try await StoreFixture.with { fixture in
            let a = fixture.runtime.sealed(try await fixture.createTenant("A").id)
            let connection = Self.connection(myVerkey: Self.verkeyA, thread: "a")
            try await a.transaction { try $0.connections.insert(connection) }
            func copy() -> InboundReceipt {
                InboundReceipt(
                    message: MailboxMessage(
                        uid: UUID(), connectionId: connection.id, recipientVerkey: Self.verkeyA, senderVerkey: "THEIRS",
                        messageId: "response-1", type: "https://didcomm.org/connections/1.0/response", threadId: "a",
                        payload: ["@id": "response-1"]))
            }
            let runs = Count()
            @Sendable func handle(_ receipt: InboundReceipt) async throws -> Bool {
                try await a.transaction(storing: receipt, linkedTo: connection.id) { tx, claim in
                    runs.value.withLock { $0 += 1 }
                    guard try tx.connections.getForUpdate(connection.id) != nil else { throw Refused() }
                    guard try claim() else { return false }
                    try tx.settings.set("handled", to: .int((try tx.settings.get("handled")?.intValue ?? 0) + 1))
                    return true
                }
            }

            // The first copy: one run, stored linked and handled, with the body's writes.
            let first = copy()
            #expect(try await handle(first))
            #expect(runs.value.withLock { $0 } == 1)
            #expect(first.claimed == .new(first.message.uid))
            let stored = try #require(try await a.transaction { try $0.mailbox.get(first.message.uid) })
            #expect(stored.connectionId == connection.id)

            // A second copy: the queued store fails, the body runs again and is told not to handle.
            let second = copy()
            #expect(try await handle(second) == false)
            #expect(runs.value.withLock { $0 } == 3)
            #expect(second.claimed == .alreadyHandled(first.message.uid))
            #expect(try await a.transaction { try $0.mailbox.get(second.message.uid) } == nil)
            #expect(try await a.transaction { try $0.settings.get("handled") } == .int(1))

            // A body that fails after the store stores nothing: the message is not lost as handled.
            let failing = InboundReceipt(
                message: MailboxMessage(
                    uid: UUID(), connectionId: connection.id, recipientVerkey: Self.verkeyA, senderVerkey: "THEIRS",
                    messageId: "response-2", type: "https://didcomm.org/connections/1.0/response", threadId: "a",
                    payload: ["@id": "response-2"]))
            await #expect(throws: Refused.self) {
                try await a.transaction(storing: failing, linkedTo: connection.id) { tx, claim in
                    _ = try tx.connections.getForUpdate(connection.id)
                    _ = try claim()
                    throw Refused()
                }
            }
            #expect(try await a.transaction { try $0.mailbox.get(failing.message.uid) } == nil)
            // Stored unhandled by a failed attempt, a copy resumes it (the store ahead conflicts).
            _ = try await a.transaction { tx in
                try tx.mailbox.recordHandlingFailure(failing.message, error: "down", maxAttempts: 3, backoffSeconds: 1)
            }
            let retry = InboundReceipt(message: failing.message)
            #expect(try await handle(retry))
            #expect(retry.claimed == .resumed(failing.message.uid))
            #expect(try await a.transaction { try $0.settings.get("handled") } == .int(2))
        }
    }

    /// A message no handler claimed (a basic message) is stored handled in one round trip; a
    /// copy finds it (a duplicate); one stored unhandled by a failed attempt is resumed. The
    /// other tenant's copy of the same message is a row of its own.
    @Test func storingAloneIsOneRoundTripAndEachCopyIsStoredOnce() async throws {
        try await StoreFixture.with(maxConnections: 1) { fixture in
            let a = fixture.runtime.sealed(try await fixture.createTenant("A").id)
            let b = fixture.runtime.sealed(try await fixture.createTenant("B").id)
            let connection = Self.connection(myVerkey: Self.verkeyA, thread: "a")
            try await a.transaction { try $0.connections.insert(connection) }
            try await b.transaction { try $0.connections.insert(connection) }
            let roundTrips = { try await fixture.runtime.pool.withConnection { $0.roundTripCount } }
            func copy(_ id: String) -> InboundReceipt {
                InboundReceipt(
                    message: MailboxMessage(
                        uid: UUID(), connectionId: connection.id, recipientVerkey: Self.verkeyA, senderVerkey: "THEIRS",
                        messageId: id, type: "https://didcomm.org/basicmessage/1.0/message", threadId: nil,
                        payload: ["@id": .string(id), "content": "hi"]))
            }
            let first = copy("m-1")
            let before = try await roundTrips()
            #expect(try await a.store(first) == .new(first.message.uid))
            #expect(try await roundTrips() - before == 1)
            let stored = try #require(try await a.read { try $0.mailbox.get(first.message.uid) })
            #expect(stored.connectionId == connection.id && stored.status == MailboxMessage.received)
            #expect(stored.payload == ["@id": "m-1", "content": "hi"])

            let again = copy("m-1")
            #expect(try await a.store(again) == .alreadyHandled(first.message.uid))
            #expect(try await a.read { try $0.mailbox.get(again.message.uid) } == nil)
            let others = copy("m-1")
            #expect(try await b.store(others) == .new(others.message.uid))
            #expect(try await a.read { try $0.mailbox.get(others.message.uid) } == nil)

            let failed = copy("m-2")
            _ = try await a.transaction { tx in
                try tx.mailbox.recordHandlingFailure(failed.message, error: "down", maxAttempts: 3, backoffSeconds: 1)
            }
            let retry = InboundReceipt(message: failed.message)
            #expect(try await a.store(retry) == .resumed(failed.message.uid))
            #expect(try await a.store(copy("m-2")) == .alreadyHandled(failed.message.uid))
        }
    }

    /// A handler that marks what it handles reviewed (a Response) has the store ahead write it
    /// reviewed, so no UPDATE follows (`uid(toMark:)` nil). A copy found stored before, a resumed
    /// one, keeps its status for the body to mark. The other tenant's copy of the same message
    /// (same key and `@id`) is a row of its own, stored as its own call asked.
    @Test func storingAheadAsReviewedNeedsNoMark() async throws {
        try await StoreFixture.with { fixture in
            let a = fixture.runtime.sealed(try await fixture.createTenant("A").id)
            let b = fixture.runtime.sealed(try await fixture.createTenant("B").id)
            let connection = Self.connection(myVerkey: Self.verkeyA, thread: "a")
            try await a.transaction { try $0.connections.insert(connection) }
            try await b.transaction { try $0.connections.insert(connection) }
            func copy(_ id: String) -> InboundReceipt {
                InboundReceipt(
                    message: MailboxMessage(
                        uid: UUID(), connectionId: connection.id, recipientVerkey: Self.verkeyA, senderVerkey: "THEIRS",
                        messageId: id, type: "https://didcomm.org/connections/1.0/response", threadId: "a",
                        payload: ["@id": .string(id)]))
            }
            @Sendable func handle(_ receipt: InboundReceipt, in db: any TenantDatabase, as status: String?) async throws -> UUID? {
                try await db.transaction(storing: receipt, linkedTo: connection.id, handledAs: status) { tx, claim in
                    _ = try tx.connections.getForUpdate(connection.id)
                    guard try claim() else { return nil }
                    let toMark = receipt.uid(toMark: MailboxMessage.reviewed)
                    if let toMark { try tx.mailbox.updateStatusQueued(toMark, to: MailboxMessage.reviewed) }
                    return toMark
                }
            }
            let first = copy("response-1")
            #expect(try await handle(first, in: a, as: MailboxMessage.reviewed) == nil)
            #expect(first.claimed == .new(first.message.uid))
            #expect(try await a.transaction { try $0.mailbox.get(first.message.uid) }?.status == MailboxMessage.reviewed)
            // B's copy without `handledAs`: stored received, then marked by the body.
            let other = copy("response-1")
            #expect(try await handle(other, in: b, as: nil) == other.message.uid)
            #expect(try await b.transaction { try $0.mailbox.get(other.message.uid) }?.status == MailboxMessage.reviewed)
            #expect(try await a.transaction { try $0.mailbox.get(other.message.uid) } == nil)
            #expect(try await b.transaction { try $0.mailbox.get(first.message.uid) } == nil)

            // Stored unhandled by a failed attempt (received), a copy resumes it: the body marks it.
            let failed = copy("response-2")
            _ = try await a.transaction { tx in
                try tx.mailbox.recordHandlingFailure(failed.message, error: "down", maxAttempts: 3, backoffSeconds: 1)
            }
            #expect(try await a.transaction { try $0.mailbox.get(failed.message.uid) }?.status == MailboxMessage.received)
            let retry = InboundReceipt(message: failed.message)
            #expect(try await handle(retry, in: a, as: MailboxMessage.reviewed) == failed.message.uid)
            #expect(retry.claimed == .resumed(failed.message.uid))
            #expect(try await a.transaction { try $0.mailbox.get(failed.message.uid) }?.status == MailboxMessage.reviewed)
            // A handled copy again: nothing to handle, nothing to mark.
            let again = copy("response-1")
            #expect(try await handle(again, in: a, as: MailboxMessage.reviewed) == nil)
            #expect(again.claimed == .alreadyHandled(first.message.uid))
        }
    }
}
