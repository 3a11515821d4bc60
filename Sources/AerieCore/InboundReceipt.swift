import Foundation
import Synchronization

/// How an inbound message reaches the mailbox exactly once. The handler that handles the message
/// stores it with `claim(in:)` inside its own write transaction, so storing and handling commit
/// together or not at all; a copy that was already handled is reported, and the handler then
/// does nothing. A handler that never claims gets its message stored by the inbound pipeline.
public final class InboundReceipt: Sendable {
    /// The message as it will be stored (its connection is filled in when claimed).
    public let message: MailboxMessage
    /// The recipient as remembered when the pipeline opened the message with it
    /// (`InboundRoute.opensWithRememberedRecipient`): a queued store then checks it in its insert
    /// and fails with `ConnectionAsRead.changed`, storing nothing, when it is no longer so.
    public let asRead: RecipientAsRead?
    /// The last claim, and the status it stored the message with (nil: not known, a copy stored before).
    private let outcome = Mutex<(claim: InboundClaim?, status: String?)>((nil, nil))

    /// Thrown by `claim` when the recipient key is gone (its connection deleted while the
    /// message was being opened): the message is refused, nothing is stored.
    public struct RecipientGone: Error {}

    public init(message: MailboxMessage, asRead: RecipientAsRead? = nil) {
        self.message = message
        self.asRead = asRead
    }

    /// Stores the message in `tx`, linked to `connection` when the handler already holds it,
    /// else to the connection of its recipient key. Answers whether to handle it: false when this
    /// copy was handled before (a duplicate).
    public func claim(in tx: any TenantTransaction, connection known: UUID? = nil) throws -> Bool {
        var stored = message
        if stored.connectionId == nil { stored.connectionId = known }
        if stored.connectionId == nil {
            let connection = try tx.connections.findByMyVerkey(stored.recipientVerkey)
            if connection == nil, try tx.keys.sealedSecret(verkey: stored.recipientVerkey) == nil { throw RecipientGone() }
            stored.connectionId = connection?.id
        }
        let claim = try tx.mailbox.claim(stored)
        var status: String? = nil
        if case .new = claim { status = stored.status }
        outcome.withLock { [status] in $0 = (claim, status) }
        return claim.isToHandle
    }

    /// Queues the store of the message as a first copy, linked to `connection`, with `status`
    /// instead of the message's own when given (`MailboxRepository.claimQueued`): it travels with
    /// the transaction's next statement. Counts as `.new` unless that statement throws
    /// `InboundClaim.storedBefore`.
    public func claimQueued(in tx: any TenantTransaction, connection: UUID, status: String? = nil) throws {
        var stored = message
        if stored.connectionId == nil { stored.connectionId = connection }
        if let status { stored.status = status }
        try tx.mailbox.claimQueued(stored, asRead: asRead)
        outcome.withLock { $0 = (.new(stored.uid), stored.status) }
    }

    /// What the last `claim` found, nil when none ran.
    public var claimed: InboundClaim? { outcome.withLock { $0.claim } }

    /// The stored message's uid when its status is still to be set to `status`; nil when the last
    /// claim stored it with that status already (or none ran).
    public func uid(toMark status: String) -> UUID? {
        outcome.withLock { $0.status == status ? nil : $0.claim?.uid }
    }
}

/// A message's recipient as the inbound pipeline took it from memory rather than the database
/// (`InboundRoute.opensWithRememberedRecipient`): the connection as read then, and the tenant's
/// wrapped data key as read with it. A store carrying it inserts only if, in the database at that
/// moment, the connection is still so (its state and `updatedAt`, our key its key and held) and
/// the tenant active with that key.
public struct RecipientAsRead: Sendable {
    public var connection: ConnectionRecord
    public var wrappedDataKey: [UInt8]

    public init(connection: ConnectionRecord, wrappedDataKey: [UInt8]) {
        self.connection = connection
        self.wrappedDataKey = wrappedDataKey
    }
}

extension TenantDatabase {
    /// Stores `receipt`'s message as handled when nothing else is written with it (a handler
    /// that did not claim it): the insert alone, one round trip without `BEGIN` or `COMMIT`,
    /// committed at its Sync, its event announced after that (`announceEventsAfterCommit`), so
    /// messages stored at once share their commits' flushes. A rerun after a lost connection, or
    /// a copy stored before, finds the stored row and claims it in a transaction of its own
    /// (`claim(in:)`: a duplicate, or one to handle now). Answers the claim. A receipt `asRead`
    /// whose recipient is no longer as read throws `ConnectionAsRead.changed`, nothing stored.
    public func store(_ receipt: InboundReceipt) async throws -> InboundClaim? {
        if let connection = receipt.message.connectionId {
            do {
                try await rerunnableTransaction { tx in
                    try tx.announceEventsAfterCommit()
                    try receipt.claimQueued(in: tx, connection: connection)
                }
                return receipt.claimed
            } catch where InboundClaim.isStoredBefore(error) {
                // Claimed below, on the stored copy.
            }
        }
        return try await transaction { tx in
            _ = try receipt.claim(in: tx)
            return receipt.claimed
        }
    }

    /// One transaction that runs `body` and stores `receipt`'s message (if any) linked to
    /// `connection`, exactly once. `body` calls `claim` where the message is to be stored (after
    /// locking the connection) and does nothing more when it answers false (a copy handled
    /// before). The first try queues the store ahead of `body`'s first statement (so a first copy
    /// costs no round trip of its own) and `claim` answers true; if a copy was stored before,
    /// that try is void and `body` runs again in a new transaction with the real `claim`. Either
    /// way the message and `body`'s writes commit together or not at all. `handledAs`: the status
    /// `body` gives a first copy it handles (it must, whenever it commits after `claim` answered
    /// true); the store ahead writes it with that status, and `receipt.uid(toMark:)` answers nil,
    /// so no UPDATE follows. A copy found stored before keeps its status until `body` marks it.
    public func transaction<T: Sendable>(
        storing receipt: InboundReceipt?, linkedTo connection: UUID, handledAs status: String? = nil,
        _ body: @escaping @Sendable (any TenantTransaction, _ claim: () throws -> Bool) throws -> T
    ) async throws -> T {
        guard let receipt else { return try await transaction { tx in try body(tx) { true } } }
        do {
            return try await transaction { tx in
                try receipt.claimQueued(in: tx, connection: connection, status: status)
                return try body(tx) { true }
            }
        } catch where InboundClaim.isStoredBefore(error) {
            return try await transaction { tx in try body(tx) { try receipt.claim(in: tx, connection: connection) } }
        }
    }
}

extension InboundMessage {
    /// Stores this message in `tx` if it came through the inbound pipeline (see `InboundReceipt`);
    /// answers whether to handle it. A message given by other means (a backend's
    /// `connections.updateStateWithMessage`) is always handled.
    public func claim(in tx: any TenantTransaction) throws -> Bool {
        try receipt?.claim(in: tx) ?? true
    }
}
