import AerieCore
import AerieCrypto
import AerieStore
import AerieTransport
import Foundation
import Logging
import Metrics
import NIOPosix
import ServiceLifecycle

/// Turns a packed inbound DIDComm message into a handled one, reading each thing once: parses
/// the envelope, finds the tenant by recipient key (one read), then the recipient's sealed key and
/// its connection (one read, `ConnectionRepository.inboundRecipient`), opens it (once more for a
/// `forward` addressed to us), checks the sender against that connection and hands all of it to
/// the plugin that registered the type, which stores the message in the mailbox (once per
/// recipient key and `@id`) in the transaction that handles it (`handle`, `InboundReceipt`).
struct InboundProcessor: Sendable {
    let database: AerieDatabase
    let contexts: TenantContexts
    let router: MethodRouter
    /// Told of a peer's first message to a connection waiting for it, and of a connection whose
    /// inbound message could not be handled in the end.
    let hooks: ConnectionHooks
    var logger: Logger
    /// Handling attempts of one inbound message before its connection fails.
    let maxHandlingAttempts: Int
    /// The wait before the first retry of a failed handling; doubles per attempt.
    let handlingBackoff: Duration
    /// Runs the parsing done before the sender is known (`InboundParsing`).
    let parsing: InboundParsing
    /// How fast strangers' Requests are taken, per invitation and per sender key.
    let requestRates: RequestRateLimits
    /// `aerie_inbound_messages_total{outcome}`.
    private let outcomes = MetricHandles { values in
        Counter(label: "aerie_inbound_messages_total", dimensions: [("outcome", values[0])])
    }
    /// `aerie_inbound_recipient_rereads_total`: messages opened with a recipient remembered as
    /// read whose store found it changed, then read again from the database and processed again.
    private let rereads = Counter(label: "aerie_inbound_recipient_rereads_total")
    /// `aerie_invitation_refusals_total{reason}`: strangers' Requests refused, by
    /// `InboundRefusal.Reason` (counted here, in memory: a flood of refusals writes nothing).
    private let refusals = MetricHandles { values in
        Counter(label: "aerie_invitation_refusals_total", dimensions: [("reason", values[0])])
    }

    init(
        database: AerieDatabase, contexts: TenantContexts, router: MethodRouter, hooks: ConnectionHooks, logger: Logger,
        maxHandlingAttempts: Int,
        handlingBackoff: Duration, parsing: InboundParsing, requestRates: RequestRateLimits
    ) {
        self.database = database
        self.contexts = contexts
        self.router = router
        self.hooks = hooks
        self.logger = logger
        self.maxHandlingAttempts = maxHandlingAttempts
        self.handlingBackoff = handlingBackoff
        self.parsing = parsing
        self.requestRates = requestRates
    }

    enum Outcome: Sendable, Equatable {
        case accepted
        case duplicate
        case rejected(status: Int, reason: String)
        /// For a tenant moving or moved away: 503 with `Retry-After` (`unknownRecipient`).
        case movedAway(retryAfterSeconds: Int)
        /// Opened with a recipient remembered as read whose store found it changed (or failed),
        /// nothing stored: `process` reads it from the database and processes the message again,
        /// so no peer is answered this (were one, 503: it sends again).
        case recipientChanged

        /// `accepted`, `duplicate`, `refused` (4xx: not for us, does not open, unsupported),
        /// `failed` (5xx: could not be stored; the peer may retry) or `moved`.
        var metricName: String {
            switch self {
            case .accepted: "accepted"
            case .duplicate: "duplicate"
            case .rejected(let status, _): status < 500 ? "refused" : "failed"
            case .movedAway: "moved"
            case .recipientChanged: "failed"
            }
        }

        var httpStatus: Int {
            switch self {
            case .accepted, .duplicate: 202
            case .rejected(let status, _): status
            case .movedAway, .recipientChanged: 503
            }
        }
    }

    /// Recipients of one envelope looked up at most (the sender writes that list).
    static let maxRecipients = 20

    /// Every refusal (400) is answered no sooner than this after the body arrived, so the time
    /// to an answer does not tell a key that is hosted here (looked up, opened, its connection
    /// read) from one that is not (one lookup) or from garbage (refused at once). Waiting costs
    /// no CPU; the inbound connection cap bounds how many wait.
    static let refusalFloor: Duration = .milliseconds(25)

    /// The inbound endpoint's answer to a POSTed body: its HTTP status, a refusal no sooner than
    /// `refusalFloor`. (A return-routed reply read by the delivery service goes to `process`
    /// directly: no peer is timing it.)
    func answer(_ envelope: [UInt8]) async -> HTTPListener.Answer {
        let received = ContinuousClock.now
        let outcome = await process(envelope)
        if case .rejected(400, _) = outcome {
            let remaining = Self.refusalFloor - (ContinuousClock.now - received)
            if remaining > .zero { try? await Task.sleep(for: remaining) }
        }
        var answer = HTTPListener.Answer(status: outcome.httpStatus)
        if case .movedAway(let seconds) = outcome { answer.retryAfterSeconds = seconds }
        return answer
    }

    func process(_ envelope: [UInt8]) async -> Outcome {
        // Everything logged about this message, here and in the tenant's context, carries one id.
        var this = self
        this.logger[metadataKey: "request"] = "\(RequestID.make())"
        let logger = this.logger
        let outcome: Outcome
        do {
            outcome = try await this.process(envelope, depth: 0)
        } catch let error as AerieError {
            logger.warning("inbound message failed", metadata: ["error": "\(String(reflecting: error))"])
            outcome = .rejected(status: error.code == .quotaExceeded ? 503 : 500, reason: error.message)
        } catch {
            logger.warning("inbound message failed", metadata: ["error": "\(String(reflecting: error))"])
            outcome = .rejected(status: 500, reason: "internal error")
        }
        if case .rejected(let status, let reason) = outcome {
            logger.info("inbound message refused", metadata: ["status": "\(status)", "reason": "\(reason)"])
        } else if case .movedAway(let seconds) = outcome {
            logger.info("inbound message for a moved tenant: retry later", metadata: ["retryAfter": "\(seconds)"])
        }
        outcomes(outcome.metricName).increment()
        return outcome
    }

    /// `remembered`: whether the recipient may come from memory (`RecentRecipients`); false
    /// when processing again after a remembered one was found changed.
    private func process(_ envelope: [UInt8], depth: Int, remembered: Bool = true) async throws -> Outcome {
        let parsed: DIDCommEnvelope
        do {
            parsed = try await parsing.parse(envelope.count) { try DIDCommEnvelope(parsing: envelope) }
        } catch {
            return .rejected(status: 400, reason: "not a DIDComm v1 envelope")
        }
        // Only canonical base58 verkeys are looked up: the recipient list is the sender's to write.
        let kids = Self.candidateRecipients(parsed.recipientKids)
        // The first recipient key held here names the tenant, which must be active; its key, the
        // key's sealed secret and its connection come in the same round trip.
        guard let owner = try await recipient(kids, recent: remembered), let wrapped = owner.activeWrappedDataKey,
            var recipient = owner.recipient
        else { return try await unknownRecipient(kids) }
        var tenant = contexts.context(for: owner.tenant, wrappedDataKey: wrapped, logger: logger)
        let unpacked: UnpackedMessage
        do {
            unpacked = try await tenant.keys.unpack(parsed, as: recipient.verkey, sealedSecret: recipient.sealedSecret)
        } catch let error as CryptoError {
            return .rejected(status: 400, reason: "the message does not open: \(error.code)")
        }
        let plaintext = unpacked.plaintext
        let parsedMessage = try? await parsing.parse(plaintext.count) { try JSONValue(parsing: plaintext) }
        let message: JSONValue
        let type: String
        let messageId: String
        let threadId: String?
        let route: MethodRouter.InboundRoute
        switch Self.read(parsedMessage, plaintext: plaintext, depth: depth, router: router) {
        case .refuse(let reason):
            return .rejected(status: 400, reason: reason)
        case .forward(let inner):
            return try await process(inner, depth: depth + 1, remembered: remembered)
        case .handle(let body, let t, let id, let thread, let r):
            (message, type, messageId, threadId, route) = (body, t, id, thread, r)
        }
        var fromMemory = owner.remembered
        if let origin = fromMemory, !Self.opens(route, rememberedAs: origin) {
            // Read again from the database (`InboundSenders.openWithRecentRecipient`,
            // `InboundRoute.opensWithRememberedRecipient`).
            guard let read = try await readAgain(kids, verkey: recipient.verkey) else { return try await unknownRecipient(kids) }
            (recipient, tenant, fromMemory) = (read.recipient, read.tenant, nil)
        }
        var authenticated = try await authenticate(
            sender: unpacked.senderVerkey, connection: recipient.connection, route: route, tenant: tenant)
        if authenticated == nil, fromMemory == .read {
            // Refused by the connection as remembered, which may be older than the database's
            // (the peer rotated to this key): judged again on the row as stored.
            guard let read = try await readAgain(kids, verkey: recipient.verkey) else { return try await unknownRecipient(kids) }
            (recipient, tenant, fromMemory) = (read.recipient, read.tenant, nil)
            authenticated = try await authenticate(
                sender: unpacked.senderVerkey, connection: recipient.connection, route: route, tenant: tenant)
        }
        guard let (connection, sender) = authenticated else {
            return .rejected(status: 400, reason: "no recipient of this message is known here")
        }
        // A recipient as remembered: its store checks it is still so (`InboundReceipt.asRead`).
        let asRead = fromMemory == .read ? RecipientAsRead(connection: connection, wrappedDataKey: wrapped) : nil
        if route.senders.areStrangers, let senderVerkey = unpacked.senderVerkey,
            let limit = requestRates.admit(tenant: tenant.tenantID, invitation: connection.id, sender: senderVerkey)
        {
            return refused(InboundRefusal(limit, "too many requests: \(limit.rawValue)"))
        }
        let uid = UUID.random()
        let receipt = InboundReceipt(
            message: MailboxMessage(
                uid: uid, connectionId: connection.id, recipientVerkey: unpacked.recipientVerkey,
                senderVerkey: unpacked.senderVerkey, messageId: messageId, type: type, threadId: threadId, payload: message),
            asRead: asRead)
        let inbound = InboundMessage(
            type: type, id: messageId, body: message, senderVerkey: unpacked.senderVerkey,
            recipientVerkey: unpacked.recipientVerkey, uid: uid, receipt: receipt,
            connection: connection, sender: sender, recipientSealedSecret: recipient.sealedSecret)
        let outcome = await handle(inbound, route: route, tenant: tenant)
        if case .recipientChanged = outcome {
            rereads.increment()
            tenant.logger.debug("remembered recipient changed: read again", metadata: ["connection": "\(connection.id.lowercasedString)"])
            return try await process(envelope, depth: depth, remembered: false)
        }
        return outcome
    }

    /// Whether a message of `route` may be opened with a recipient held in memory as `origin`
    /// (`RecentRecipients`): one kept as inserted by a Response only
    /// (`InboundSenders.openWithRecentRecipient`), one kept as read by a type the pipeline only
    /// stores (`InboundRoute.opensWithRememberedRecipient`, whose store checks it).
    static func opens(_ route: MethodRouter.InboundRoute, rememberedAs origin: RecentRecipients.Origin) -> Bool {
        switch origin {
        case .made: route.senders.openWithRecentRecipient
        case .read: route.opensWithRememberedRecipient
        }
    }

    /// The recipient `verkey` read from the database now, with its tenant's context: nil when it
    /// is no longer the first of `kids` held here, or its tenant is not active.
    private func readAgain(_ kids: [String], verkey: String) async throws -> (recipient: InboundRecipient, tenant: TenantContext)? {
        guard let read = try await recipient(kids, recent: false), let key = read.activeWrappedDataKey,
            let recipient = read.recipient, recipient.verkey == verkey
        else { return nil }
        return (recipient, contexts.context(for: read.tenant, wrappedDataKey: key, logger: logger))
    }

    /// The tenant of the first of `kids` held here, with its key and connection: one round trip
    /// (`TenantDirectory.inboundRecipient`), none for a key this process has just made (`recent`).
    private func recipient(_ kids: [String], recent: Bool) async throws -> InboundOwner? {
        let contexts = self.contexts
        return try await database.tenants.inboundRecipient(
            verkeys: kids, recent: recent, sealer: { id, wrapped in try contexts.sealer(for: id, wrappedDataKey: wrapped) })
    }

    /// What the pipeline does with an opened message, decided without I/O (`read`).
    enum Step {
        /// Refused with this reason (400), nothing stored.
        case refuse(String)
        /// A `forward` addressed to us: process the packed message it carries (one layer only).
        case forward([UInt8])
        /// Handed to `route` once its sender is authenticated: the message, its normalised type,
        /// `@id` and `~thread.thid` (each at most 256 bytes).
        case handle(message: JSONValue, type: String, messageId: String, threadId: String?, route: MethodRouter.InboundRoute)
    }

    /// Reads an opened message (`message`: its plaintext parsed, nil when it is not JSON) at
    /// `depth` forwards down: a JSON object with `@type` (either prefix), a forward only at the
    /// top, a type some plugin registered, an `@id` of 1-256 bytes and a `~thread.thid` within
    /// `PeerFieldLimits.id`.
    static func read(_ message: JSONValue?, plaintext: [UInt8], depth: Int, router: MethodRouter) -> Step {
        guard let message, case .object = message, let rawType = message["@type"]?.stringValue else {
            return .refuse("the message is not a JSON object with @type")
        }
        let type = InboundMessage.normalizedType(rawType)
        if type == Forward.messageType {
            guard depth == 0, let inner = try? Forward.unwrap(plaintext) else { return .refuse("unusable forward message") }
            return .forward(inner.packed)
        }
        guard let route = router.inboundRoute(for: type) else { return .refuse("unsupported message type \(type.prefix(200))") }
        guard let messageId = message["@id"]?.stringValue, !messageId.isEmpty,
            messageId.utf8.count <= PeerFieldLimits.id.maxBytes
        else {
            return .refuse("the message has no usable @id")
        }
        let threadId = message["~thread"]?["thid"]?.stringValue
        if let threadId, let violation = PeerFieldLimits.id.violation(threadId, name: "~thread.thid") { return .refuse(violation) }
        return .handle(message: message, type: type, messageId: messageId, threadId: threadId, route: route)
    }

    /// Canonical base58 verkeys among an envelope's recipients, at most `maxRecipients`: the
    /// only ones looked up.
    static func candidateRecipients(_ kids: [String]) -> [String] {
        Array(kids.prefix(maxRecipients).filter { (try? KeyReference.verkeyBase58(from: $0)) == $0 })
    }

    /// Sender authentication, the one place it happens: checks that the sender is a key the
    /// connection of the recipient key (read with it) takes this type from
    /// (`InboundSender.authenticate`). Nil (the message is refused, nothing stored) for
    /// anoncrypt, a stranger's key, or a key with no connection; the answer is the same as for an
    /// unknown recipient, so it reveals nothing about which keys are hosted. A peer's message to a
    /// connection waiting for it is first passed to `ConnectionHooks.peerConfirmed`.
    func authenticate(
        sender: String?, connection: ConnectionRecord?, route: MethodRouter.InboundRoute, tenant: TenantContext
    ) async throws -> (ConnectionRecord, InboundSender)? {
        guard sender != nil, var connection,
            let authenticated = InboundSender.authenticate(senderVerkey: sender, connection: connection, accepted: route.senders)
        else { return nil }
        // The peer's first message to an inviter-side connection accepts it, whatever the message
        // (handshake reports excepted: they are about the handshake, not on the connection).
        if authenticated == .peer, route.senders == .peer, connection.awaitsPeerConfirmation {
            connection = try await hooks.peerConfirmed(connection, tenant: tenant)
        }
        return (connection, authenticated)
    }

    /// Runs the plugin's handler, which stores the message in its own write transaction (see
    /// `InboundReceipt`); stores it here when the handler did not. A peer's message whose handler
    /// fails is stored unhandled, with the error, for `InboundRecoveryService` to try again
    /// (`maxHandlingAttempts`, then the connection fails with the reason), and the peer gets 202:
    /// it has nothing to resend. A stranger's message (`InboundSenders.areStrangers`) is kept
    /// only if handled: refused, it is answered 4xx; failed by something that can pass, 503, so
    /// the stranger sends it again; either way nothing of it is stored.
    func handle(_ inbound: InboundMessage, route: MethodRouter.InboundRoute, tenant: TenantContext) async -> Outcome {
        guard let receipt = inbound.receipt else { preconditionFailure("inbound messages carry their receipt") }
        do {
            try await route.handler(inbound, tenant)
            var claim = receipt.claimed
            if claim == nil { claim = try await tenant.database.store(receipt) }
            FaultPoint.reach("inbound.afterStore")
            return claim?.isToHandle == false ? .duplicate : .accepted
        } catch is InboundReceipt.RecipientGone {
            return .rejected(status: 400, reason: "no recipient of this message is known here")
        } catch where receipt.asRead != nil {
            // The recipient as remembered no longer so (`ConnectionAsRead.changed`), or any other
            // failure of its checked store: processed again from the database, where every
            // failure is handled as it always was. Nothing of a remembered recipient is stored
            // but by its checked insert.
            if !ConnectionAsRead.changed(error) {
                tenant.logger.debug("store with a remembered recipient failed", metadata: ["error": "\(String(reflecting: error))"])
            }
            return .recipientChanged
        } catch let refused as InboundSender.Refused {
            return .rejected(status: 400, reason: refused.reason)
        } catch let refusal as InboundRefusal {
            return refused(refusal)
        } catch where route.senders.areStrangers {
            if AerieError.isTransient(error) {
                tenant.logger.notice(
                    "stranger's message not handled, not stored", metadata: ["type": "\(inbound.type)", "error": "\(String(reflecting: error))"])
                return .rejected(status: 503, reason: "the message could not be handled now")
            }
            return refused(InboundRefusal(.malformed, "the message could not be handled: \(Self.describe(error))"))
        } catch {
            let reason = "\(inbound.type.split(separator: "/").suffix(2).joined(separator: "/")) could not be handled: \(Self.describe(error))"
            tenant.logger.warning(
                "inbound message handler failed",
                metadata: ["type": "\(inbound.type)", "uid": "\(inbound.uid.lowercasedString)", "error": "\(String(reflecting: error))"])
            // A message the handler refuses (wrong thread, wrong state, bad signature) is kept but
            // not retried: only failures that can pass (database, internal) are, and only those
            // fail the connection in the end, so a stranger's message cannot fail a connection.
            let transient = AerieError.isTransient(error)
            do {
                let maxAttempts = transient ? self.maxHandlingAttempts : 1
                let backoff = Int(handlingBackoff.components.seconds)
                let recorded = try await tenant.database.transaction { tx -> (attempts: Int, connectionId: UUID?)? in
                    try tx.mailbox.recordHandlingFailure(
                        receipt.message, error: reason, maxAttempts: maxAttempts, backoffSeconds: max(1, backoff))
                }
                if transient, let recorded, recorded.attempts >= maxAttempts, let connectionId = recorded.connectionId {
                    await hooks.connectionFailed(
                        connectionId, reason: "\(reason) (after \(recorded.attempts) attempts)", tenant: tenant)
                }
            } catch let error as AerieError where error.code == .quotaExceeded {
                // The tenant's mailbox is full: nothing stored; 503 tells the peer to retry later.
                tenant.logger.notice("inbound message refused: quota", metadata: ["error": "\(error.message)"])
                return .rejected(status: 503, reason: error.message)
            } catch {
                // Not stored: the peer gets an error and may send it again.
                tenant.logger.warning("inbound handling failure not recorded", metadata: ["error": "\(String(reflecting: error))"])
                return .rejected(status: 500, reason: "the message could not be stored")
            }
            return .accepted
        }
    }

    /// A stranger's Request refused: counted by reason, answered with the reason's status.
    private func refused(_ refusal: InboundRefusal) -> Outcome {
        refusals(refusal.reason.rawValue).increment()
        return .rejected(status: refusal.reason.status, reason: refusal.message)
    }

    /// A handler's failure as the connection's failure reason: an AerieError's safe message,
    /// never internal details.
    static func describe(_ error: any Error) -> String {
        (error as? AerieError)?.message ?? "internal error"
    }
}

/// Where inbound work done before the sender is known runs: parsing the envelope and the
/// message's JSON. Both parsers check every length before decoding and are linear in the input
/// (`DIDCommEnvelope.Limits`).
///
/// A body of at most `inlineLimit` bytes is parsed where it is, on the Swift concurrency pool, in
/// the task already handling its request: the costliest hostile body of that size parses in about
/// 30 µs, where the server spends about 0.75 ms on such a request in all (`aerie-bench hostile`),
/// so a flood of small hostile bodies costs the pool a few per cent more than the requests
/// themselves already do, no task waits behind one parse longer than that, and the requests in
/// flight are bounded by the endpoint's connection cap. An everyday message (a basic message is
/// about 1.5 KiB) thus takes no hop to another thread and back. A bigger body, whose parse grows
/// with its size up to the body limit (about 1 ms per MiB), goes to one dedicated thread per
/// server, so a flood of them takes at most one core and never the pool that answers JSON-RPC;
/// legitimate messages queue behind it for a few milliseconds at most per hostile body. A service
/// so the thread stops with the server: it comes before every service that parses in the group,
/// so it is shut down after them.
package final class InboundParsing: Service {
    /// Bytes of input parsed in place at most.
    package static let inlineLimit = 16 * 1024

    private let threads = NIOThreadPool(numberOfThreads: 1)

    init() {
        threads.start()
    }

    /// Runs `body`, which parses `count` bytes: in place up to `inlineLimit`, else on the
    /// parsing thread.
    func parse<T: Sendable>(_ count: Int, _ body: @escaping @Sendable () throws -> T) async throws -> T {
        if count <= Self.inlineLimit { return try body() }
        return try await threads.runIfActive(body)
    }

    package func run() async throws {
        try? await gracefulShutdown()
        try await threads.shutdownGracefully()
    }

    /// A server whose start failed never ran the service: its thread stops here.
    deinit {
        threads.shutdownGracefully { _ in }
    }
}
