import AerieCore
import AerieCrypto
import AerieStore
import Foundation
import Logging
import ServiceLifecycle
import Synchronization

/// This process's end of server push: LISTENs on `aerie_events` (the schema's triggers NOTIFY
/// there in the transaction that stores a message or changes a connection's state, whichever
/// process ran it) and sends each event to the subscribed sessions of that event's tenant only,
/// through each filter (`types`, full `@type` or the download's short kind, applies to messages only; `pairwiseDids` to both kinds). A full session queue drops its notifications; nobody waits for it.
///
/// The same channel carries credential changes (schema/0007: rotate, suspend, resume, rewrap,
/// delete): each one clears that tenant's entries in the `CredentialCache` and ends the
/// subscriptions of the tenant's sessions whose token is no longer the current one (they are told
/// with `session.revoked` and answer `unauthenticated` from then on). Connection events (insert
/// and state change, schema/0004; any other change and delete, schema/0028) and credential events
/// clear what they name in the caches (`ChannelCaches`, each invalidation in one place). Each
/// payload is decoded once (`ChannelEvent`) and dispatched by its case. A credential change during an
/// outage sent its NOTIFY to nobody, so when the LISTEN is back every push subscription's
/// credential is checked against the database again and the stale ones end as above.
final class EventHub: EventSubscriptions, Service, Sendable {
    static let channel = "aerie_events"

    private struct Subscription: Sendable {
        let session: any SessionHandle
        let filter: EventFilter
    }

    /// Keyed by tenant first, so an event only ever looks at its own tenant's sessions.
    private let subscriptions = Mutex<[TenantID: [UInt64: Subscription]]>([:])
    private let sessionTenants = Mutex<[UInt64: TenantID]>([:])
    private let logger: Logger
    private let listener = Mutex<PostgresEventListener?>(nil)
    /// How long `subscribe` waits for the LISTEN to be in place.
    static let listenWait: Duration = .seconds(10)
    static let revokedMethod = "session.revoked"
    let caches: ChannelCaches
    /// Whether a tenant is active and `tokenHash` is still its token (a database read).
    private let credentialIsCurrent: @Sendable (TenantID, [UInt8]) async throws -> Bool

    /// The event log's part of the channel (schema/0017): told of each logged event's NOTIFY (time
    /// to number it), of each `positions` NOTIFY (numbered events to stream), and when the LISTEN
    /// comes back (whatever was missed meanwhile is in the log).
    private let eventLog: EventStreams?
    /// How each kind is pushed, as the plugins that own the kinds present it.
    private let presenters: EventPresenters
    /// Plugins' observers of committed events, by kind (`observe`), installed while the server is built.
    private let observers = Mutex<[String: [@Sendable (TenantID, JSONValue) -> Void]]>([:])
    /// Signalled each time the LISTEN is (back) in place: `run` re-checks the subscriptions.
    private let listening: AsyncStream<Void>
    /// How long a failed re-check waits before it runs again.
    static let recheckRetry: Duration = .seconds(1)

    init(
        conninfo: String, logger: Logger, caches: ChannelCaches = ChannelCaches(),
        credentialIsCurrent: @escaping @Sendable (TenantID, [UInt8]) async throws -> Bool = { _, _ in true },
        eventLog: EventStreams? = nil, presenters: EventPresenters
    ) {
        self.presenters = presenters
        self.logger = logger
        self.caches = caches
        self.credentialIsCurrent = credentialIsCurrent
        self.eventLog = eventLog
        let (listening, listeningAgain) = AsyncStream.makeStream(of: Void.self, bufferingPolicy: .bufferingNewest(1))
        self.listening = listening
        let listener = PostgresEventListener(
            conninfo: conninfo, channel: Self.channel, logger: logger,
            listeningChanged: { [caches, eventLog] listening in
                caches.listenerChanged(listening: listening)
                if listening {
                    eventLog?.eventsCommitted()
                    listeningAgain.yield()
                }
            }
        ) { [weak self] payload in
            self?.deliver(payload)
        }
        self.listener.withLock { $0 = listener }
    }

    func run() async throws {
        let listener = self.listener.withLock { $0 }
        listener?.start()
        await cancelWhenGracefulShutdown {
            for await _ in self.listening {
                while await !self.recheckSubscriptions() {
                    guard (try? await Task.sleep(for: Self.recheckRetry)) != nil else { return }
                }
            }
        }
        listener?.stop()
    }

    /// Checks the credential of every push subscription against the database (once per tenant
    /// and token) and ends those no longer valid; false when the database could not answer (the
    /// caller tries again).
    private func recheckSubscriptions() async -> Bool {
        let targets = subscriptions.withLock { all in all.flatMap { tenant, sessions in sessions.values.map { (tenant, $0.session) } } }
        var verdicts: [CredentialKey: Bool] = [:]
        for (tenant, session) in targets {
            guard session.tenantID == tenant, let tokenHash = session.credentialTokenHash else { continue }
            let key = CredentialKey(tenant: tenant, tokenHash: tokenHash)
            let current: Bool
            if let known = verdicts[key] {
                current = known
            } else {
                do {
                    current = try await credentialIsCurrent(tenant, tokenHash)
                } catch {
                    logger.warning("push subscriptions not re-checked yet", metadata: ["error": "\(String(reflecting: error))"])
                    return false
                }
                verdicts[key] = current
            }
            if !current { revoke(session, tokenHash: tokenHash, reason: "the token is no longer valid (tenant suspended, deleted or token rotated)") }
        }
        return true
    }

    private struct CredentialKey: Hashable {
        let tenant: TenantID
        let tokenHash: [UInt8]
    }

    /// Ends `session`'s push and tells it why; its calls answer `unauthenticated` from then on.
    private func revoke(_ session: any SessionHandle, tokenHash: [UInt8], reason: String) {
        remove(sessionID: session.id)
        session.revokeCredential(
            ifStill: tokenHash, method: Self.revokedMethod, params: ["code": "unauthenticated", "reason": .string(reason)])
    }

    /// Whether the LISTEN connection is up now (readiness and the `aerie_listen_up` metric).
    var isListening: Bool { listener.withLock { $0?.isListening ?? false } }

    var hearsCommits: Bool { isListening }

    func observe(kind: String, _ observer: @escaping @Sendable (TenantID, JSONValue) -> Void) {
        observers.withLock { $0[kind, default: []].append(observer) }
    }

    func subscribe(_ session: any SessionHandle, tenant: TenantID, filter: EventFilter) async throws {
        // Push goes to sessions authenticated as the tenant; a backend session acting for it per
        // call has no tenant of its own to push to.
        guard session.tenantID == tenant else {
            throw AerieError(
                .invalidRequest, "push subscriptions need a session authenticated with the tenant's own token, not a backend's")
        }
        let previous = sessionTenants.withLock { map in
            defer { map[session.id] = tenant }
            return map[session.id]
        }
        subscriptions.withLock { all in
            if let previous, previous != tenant { all[previous]?[session.id] = nil }
            all[tenant, default: [:]][session.id] = Subscription(session: session, filter: filter)
        }
        if previous == nil {
            let id = session.id
            session.onClose { [weak self] in self?.remove(sessionID: id) }
        }
        let clock = ContinuousClock()
        let deadline = clock.now.advanced(by: Self.listenWait)
        while !isListening {
            guard clock.now < deadline else {
                throw AerieError(.internalError, "server push is not available right now (database listener down)")
            }
            try await Task.sleep(for: .milliseconds(20))
        }
        // A rotate or suspend committed after the caller's credential check but before the
        // subscription was in place sent its event too early to end it: check once more, now
        // that any later change will find the subscription.
        if let tokenHash = session.credentialTokenHash, !(try await credentialIsCurrent(tenant, tokenHash)) {
            remove(sessionID: session.id)
            throw AerieError(.unauthenticated, "the token is no longer valid (tenant suspended, deleted or token rotated)")
        }
    }

    /// A credential of `tenant` changed: `current` is the fingerprint of its valid token
    /// (`TokenHasher.fingerprint`), nil when the tenant is suspended or deleted. Runs for every
    /// NOTIFY, and in the process that made the change as soon as it committed.
    func credentialChanged(tenant: TenantID, current: String?) {
        caches.credentialChanged(tenant: tenant)
        let targets = subscriptions.withLock { all in all[tenant].map { Array($0.values) } ?? [] }
        for target in targets {
            let session = target.session
            guard session.tenantID == tenant, let tokenHash = session.credentialTokenHash else { continue }
            if let current, TokenHasher.fingerprint(ofHash: tokenHash) == current { continue }
            revoke(session, tokenHash: tokenHash, reason: current == nil ? "the tenant was suspended or deleted" : "the token was rotated")
        }
    }

    @discardableResult
    func unsubscribe(_ session: any SessionHandle) -> Bool {
        remove(sessionID: session.id)
    }

    @discardableResult
    private func remove(sessionID: UInt64) -> Bool {
        guard let tenant = sessionTenants.withLock({ $0.removeValue(forKey: sessionID) }) else { return false }
        subscriptions.withLock { all in
            all[tenant]?[sessionID] = nil
            if all[tenant]?.isEmpty == true { all[tenant] = nil }
        }
        return true
    }

    /// One NOTIFY payload (`ChannelEvent` lists them), dispatched by what it is.
    func deliver(_ payload: String) {
        guard let event = ChannelEvent(payload: payload) else {
            logger.warning("unreadable event payload", metadata: ["payload": "\(payload.prefix(200))"])
            return
        }
        switch event {
        case .positions:
            eventLog?.positionsAdvanced()
        case .credentialChanged(let tenant, let current):
            credentialChanged(tenant: tenant, current: current)
        case .connectionChanged(let tenant, let connectionId):
            caches.connectionChanged(tenant: tenant, connectionId: connectionId, state: nil)
        case .keysDeleted(let tenant, let verkey):
            caches.keysDeleted(tenant: tenant, verkey: verkey)
        case .connectionState(let tenant, let connectionId, let state, let data):
            caches.connectionChanged(tenant: tenant, connectionId: connectionId, state: state)
            published(tenant: tenant, kind: ChannelEvent.connectionStateKind, data: data)
        case .tenantEvent(let tenant, let kind, let data):
            published(tenant: tenant, kind: kind, data: data)
        }
    }

    /// An event of the tenant's: the log numbers it, the plugins' observers hear it and the
    /// tenant's subscribed sessions are pushed it as its kind's presenter shows it, through each
    /// session's filter.
    private func published(tenant: TenantID, kind: String, data event: JSONValue) {
        eventLog?.eventsCommitted()
        for observer in observers.withLock({ $0[kind] ?? [] }) { observer(tenant, event) }
        let targets = subscriptions.withLock { all in all[tenant].map { Array($0.values) } ?? [] }
        guard !targets.isEmpty else { return }
        guard let shown = presenters.present(kind: kind, data: event), let method = shown.pushMethod else { return }
        let pairwise = event["pairwiseDID"]?.stringValue
        for target in targets {
            // Re-authenticated as someone else (or revoked) since subscribing: not theirs.
            guard target.session.tenantID == tenant else { continue }
            if let wanted = target.filter.types, let types = shown.types, !types.contains(where: wanted.contains) { continue }
            if let dids = target.filter.pairwiseDids, !(pairwise.map(dids.contains) ?? false) { continue }
            target.session.notify(method: method, params: shown.fields)
        }
    }
}
