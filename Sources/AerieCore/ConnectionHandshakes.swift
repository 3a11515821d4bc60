import Foundation

/// Why a stored connection matches an invitation (seeds 001, 003, 004), the strongest first.
public enum InvitationMatch: String, Sendable, Hashable, Codable {
    /// The very same invitation (`@id`).
    case id
    /// Another invitation from the same inviter (public DID).
    case publicDid
    /// Another invitation from the same inviter (first recipient key).
    case recipientKey
}

/// A stored connection an invitation matches, and why.
public struct ExistingConnection: Sendable, Hashable {
    public var record: ConnectionRecord
    public var match: InvitationMatch

    public init(record: ConnectionRecord, match: InvitationMatch) {
        self.record = record
        self.match = match
    }
}

/// What the connections plugin offers the plugins built on top of it (out-of-band): reading
/// invitations, duplicate detection and the handshakes. The server hands the connections plugin's
/// implementation to those plugins, so they depend on AerieCore only, never on each other.
public protocol ConnectionHandshakes: Sendable {
    /// Reads an invitation given as JSON (object or text, or an invitation URL) or as a URL
    /// (decoded, or fetched when short). Exactly one of the two.
    func readInvitation(_ invitation: JSONValue?, url: String?) async throws -> Invitation
    /// The tenant's stored connection the invitation matches, if any (the same `@id` first),
    /// read inside the caller's transaction.
    func existingConnection(for invitation: Invitation, in tx: any TenantTransaction) throws -> ExistingConnection?
    /// A new connection record for the invitation, state `initialized`, not stored.
    func newRecord(for invitation: Invitation) -> ConnectionRecord
    /// Throws `unsupported_invitation` unless `connect` can run a handshake for this invitation.
    func checkConnectable(_ invitation: Invitation) throws
    /// Stores a new connection for the invitation (state `initialized`).
    func create(_ invitation: Invitation, tenant: TenantContext) async throws -> ConnectionRecord
    /// Stores `record` (from `newRecord`) and connects it in one transaction, in which
    /// `alsoStore` also runs with the connected record; or, when the tenant already has a
    /// connection for this invitation (taken under the tenant's lock on its `@id`), answers that
    /// one with `existing` and stores nothing.
    /// `didMethod`: our DID's method in a didexchange Request (nil: the handshake's default).
    func createAndConnect(
        _ record: ConnectionRecord, label: String?, didMethod: PeerDIDMethod?, tenant: TenantContext,
        alsoStore: @escaping @Sendable (ConnectionRecord, any TenantTransaction) throws -> Void
    ) async throws -> (record: ConnectionRecord, existing: Bool)
    /// Makes the pairwise key and sends the handshake request (state `requested`), a didexchange
    /// one with our DID in `didMethod` (nil: the handshake's default).
    func connect(_ id: UUID, label: String?, didMethod: PeerDIDMethod?, tenant: TenantContext) async throws -> ConnectionRecord
    /// Waits, at most `timeout`, while the handshake is under way (`requested`, `responded`);
    /// answers the connection after it, or throws `timeout` and leaves it as it is.
    func waitForHandshake(_ connection: ConnectionRecord, timeout: Duration, tenant: TenantContext) async throws
        -> ConnectionRecord
    /// Inviter role: stores a new invitation of ours (a fresh invitation key of the tenant, the
    /// record in state `initialized`, role `inviter`), whose JSON `build` writes from that key
    /// (base58), the server's public endpoint and its default label. The connections plugin
    /// answers the Requests it gets, within `limits`.
    func storeInvitation(
        kind: Invitation.Kind, multiUse: Bool, alias: String?, limits: InvitationUseLimits, tenant: TenantContext,
        build: @Sendable (_ invitationKey: String, _ endpoint: String, _ defaultLabel: String) throws -> JSONValue
    ) async throws -> ConnectionRecord
    /// The tenant's invitation DID record in `method` (made on first use): an open multi-use
    /// invitation of ours whose invitation's one `services` entry (the DID as invitations carry
    /// it) out-of-band invitations may name as their service.
    func invitationDID(method: PeerDIDMethod, tenant: TenantContext) async throws -> ConnectionRecord
    /// Sending over the tenant's established connections.
    var sender: any ConnectionSender { get }
    /// The label our invitations and Requests carry when the caller gives none.
    var defaultLabel: String { get }
    func load(_ id: UUID, tenant: TenantContext) async throws -> ConnectionRecord
    /// Applies `move` to `connection` (locked by the caller's transaction, or new for
    /// `.connectionless`) through the connections state machine, writes it in `tx` and marks the
    /// mailbox row that caused it reviewed. Throws `conflict` when the move does not apply.
    /// Call `committed` once `tx` has committed.
    func move(_ move: ConnectionMove, _ connection: ConnectionRecord, reviewed mailboxUid: UUID?, in tx: any TenantTransaction)
        throws -> ConnectionRecord
    /// Wakes this process's waiters on the connection (after a commit that changed it, or changed
    /// what a waiter's `check` reads).
    func committed(_ connection: ConnectionRecord, tenant: TenantContext)
    /// Runs `check` until it answers, woken by `committed` for the connection (and every 100 ms,
    /// for changes another process made); nil after `timeout`.
    func waitFor<T: Sendable>(
        _ connectionId: UUID, timeout: Duration, tenant: TenantContext, check: @Sendable () async throws -> T?
    ) async throws -> T?
}
