import Foundation

/// What the server tells the plugin that owns connection state, apart from routing: that it gave
/// up on something a connection needed, and that a peer's message reached a connection waiting
/// for one. Plugins register here (`AeriePlugin.register(hooks:)`); the inbound pipeline and the
/// delivery service hold the frozen value.
public struct ConnectionHooks: Sendable {
    /// Told when the server gives up on something a connection needed (an outbound message it
    /// could not deliver, an inbound message it could not handle), so the plugin that owns
    /// connection state can fail the connection with `reason`.
    public typealias Failure = @Sendable (_ connectionId: UUID, _ reason: String, TenantContext) async -> Void
    /// Told when an authenticated message of the peer reaches a connection that waits for one
    /// (`ConnectionRecord.awaitsPeerConfirmation`), before its handler runs; answers the
    /// connection after the state change it made (RFC 0160: the inviter's side is `accepted` on
    /// the invitee's first message).
    public typealias PeerConfirmation = @Sendable (ConnectionRecord, TenantContext) async throws -> ConnectionRecord

    private var failureHooks: [Failure] = []
    private var peerConfirmationHooks: [PeerConfirmation] = []

    public init() {}

    /// Lets `plugin` register its hooks.
    public mutating func install(_ plugin: some AeriePlugin) {
        plugin.register(hooks: &self)
    }

    /// Registers a hook the server calls when it gives up on something a connection needed.
    public mutating func onConnectionFailure(_ hook: @escaping Failure) {
        failureHooks.append(hook)
    }

    /// Registers a hook the inbound pipeline calls on a peer's message to a connection that waits
    /// for one.
    public mutating func onPeerConfirmation(_ hook: @escaping PeerConfirmation) {
        peerConfirmationHooks.append(hook)
    }

    /// Runs every connection-failure hook.
    public func connectionFailed(_ connectionId: UUID, reason: String, tenant: TenantContext) async {
        for hook in failureHooks { await hook(connectionId, reason, tenant) }
    }

    /// Runs every peer-confirmation hook in turn; answers the connection as the last one left it.
    public func peerConfirmed(_ connection: ConnectionRecord, tenant: TenantContext) async throws -> ConnectionRecord {
        var current = connection
        for hook in peerConfirmationHooks { current = try await hook(current, tenant) }
        return current
    }
}
