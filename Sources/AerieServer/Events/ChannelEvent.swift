import AerieCore
import AerieCrypto
import AerieStore
import Foundation

/// One NOTIFY payload of `aerie_events`, decoded once (`EventHub.deliver`) into what it means.
enum ChannelEvent: Sendable, Equatable {
    /// `{kind: "positions", upTo}` (schema/0017): numbered events of the log to stream.
    case positions
    /// `{tenant, kind: "credential", active, credential}` (schema/0007: rotate, suspend, resume,
    /// rewrap, delete): `current` is the fingerprint of the valid token, nil when the tenant is
    /// suspended or deleted. Not logged, not pushed.
    case credentialChanged(TenantID, current: String?)
    /// `{tenant, kind: "connectionChanged", connectionId?}` (schema/0028): a connection row
    /// changed other than in its state, or was deleted (no `connectionId`: several rows of the
    /// tenant). Only the caches hear it.
    case connectionChanged(TenantID, connectionId: UUID?)
    /// `{tenant, kind: "keysDeleted", verkey?}` (schema/0038): keys of the tenant deleted.
    /// Only `RecentRecipients` hears it.
    case keysDeleted(TenantID, verkey: String?)
    /// An event of the tenant's, logged, observed and pushed as its kind's presenter shows it:
    /// `{tenant, kind: "message", uid, type, pairwiseDID}`, `{tenant, kind: "delivery", uid,
    /// status, type, pairwiseDID, reason}` (schema/0016), `{tenant, kind: "delivery", outboxId,
    /// connectionId, status, messageUid}` (the event log's only, schema/0017, 0033), or any kind
    /// a plugin presents.
    case tenantEvent(TenantID, kind: String, data: JSONValue)
    /// `{tenant, kind: "connection", connectionId, state, pairwiseDID}` (schema/0004): a
    /// connection inserted or its state changed; the caches hear it, then it goes on as a
    /// `tenantEvent`.
    case connectionState(TenantID, connectionId: UUID?, state: String?, data: JSONValue)

    static let connectionStateKind = "connection"

    /// Nil for a payload that is none of the above.
    init?(payload: String) {
        guard let event = try? JSONValue(parsing: payload), let kind = event["kind"]?.stringValue else { return nil }
        if kind == "positions" {
            self = .positions
            return
        }
        guard let tenant = event["tenant"]?.stringValue.flatMap(TenantID.init) else { return nil }
        switch kind {
        case "credential":
            self = .credentialChanged(tenant, current: event["active"] == .bool(true) ? (event["credential"]?.stringValue ?? "") : nil)
        case "connectionChanged":
            self = .connectionChanged(tenant, connectionId: event["connectionId"]?.stringValue.flatMap { UUID(text: $0) })
        case "keysDeleted":
            self = .keysDeleted(tenant, verkey: event["verkey"]?.stringValue)
        case Self.connectionStateKind:
            self = .connectionState(
                tenant, connectionId: event["connectionId"]?.stringValue.flatMap { UUID(text: $0) },
                state: event["state"]?.stringValue, data: event)
        default:
            self = .tenantEvent(tenant, kind: kind, data: event)
        }
    }
}

/// The caches the channel keeps true, each invalidation written once: the session credentials
/// (`CredentialCache`), `connections.get` answers (`ConnectionViewCache`), the connections sent
/// over (`ConnectionSendCache`), the inbound recipients held in memory (`RecentRecipients`) and the box
/// shared keys (`BoxSharedKeys`). The listener's state drives all but the last: they serve
/// nothing while the LISTEN is down.
struct ChannelCaches: Sendable {
    var credentials: CredentialCache = .off
    var connectionViews: ConnectionViewCache = .off
    var sendingConnections: ConnectionSendCache = .off
    var recentRecipients: RecentRecipients = .off

    func listenerChanged(listening: Bool) {
        credentials.listenerChanged(listening: listening)
        connectionViews.listenerChanged(listening: listening)
        sendingConnections.listenerChanged(listening: listening)
        recentRecipients.listenerChanged(listening: listening)
    }

    /// A credential of `tenant` changed (or the tenant was suspended, deleted, rewrapped).
    func credentialChanged(tenant: TenantID) {
        credentials.invalidate(tenant: tenant)
        connectionViews.invalidate(tenant: tenant)
        sendingConnections.invalidate(tenant: tenant)
        recentRecipients.forget(tenant: tenant)
        BoxSharedKeys.shared.invalidate(scope: tenant.rawValue)
    }

    /// A connection of `tenant` changed (nil: several); `state` when it was a state change
    /// (`RecentRecipients` keeps the entry its own insert made).
    func connectionChanged(tenant: TenantID, connectionId: UUID?, state: String?) {
        if let connectionId {
            connectionViews.invalidate(tenant: tenant, keys: CollectionOfOne(connectionId))
            sendingConnections.invalidate(tenant: tenant, keys: CollectionOfOne(connectionId))
        } else {
            connectionViews.invalidate(tenant: tenant)
            sendingConnections.invalidate(tenant: tenant)
        }
        recentRecipients.connectionChanged(tenant: tenant, connectionId: connectionId, state: state)
    }

    /// Keys of `tenant` were deleted (nil: possibly several).
    func keysDeleted(tenant: TenantID, verkey: String?) {
        if let verkey {
            recentRecipients.forget(tenant: tenant, verkeys: CollectionOfOne(verkey))
        } else {
            recentRecipients.forget(tenant: tenant)
        }
    }
}
