import Foundation

/// A stored connection (RFC 0160, either role). Invitee: what the invitation said, our pairwise
/// key, and the peer's key and endpoint once its Response arrived. Inviter: an invitation we made
/// (state `initialized`, `myVerkey` the invitation key) until a Request arrives; then the
/// connection it made (`responded`, our new pairwise key, the invitee's key from the Request),
/// `accepted` on the invitee's first authenticated message.
public struct ConnectionRecord: Sendable, Hashable, Codable {
    /// Which side of the handshake we are.
    public enum Role: String, Sendable, Hashable, Codable {
        case invitee, inviter
    }

    /// The connection states, with the SDK's numbers (DESIGN.md).
    public enum State: String, Sendable, Hashable, Codable, CaseIterable {
        case initialized, requested, responded, accepted, reused, failed, deleted

        /// The SDK's number: 1 initialized, 2 requested, 3 responded, 4 accepted; others have none
        /// in the SDK and get 5 (reused), 0 (failed), 6 (deleted).
        public var number: Int {
            switch self {
            case .initialized: 1
            case .requested: 2
            case .responded: 3
            case .accepted: 4
            case .reused: 5
            case .failed: 0
            case .deleted: 6
            }
        }
    }

    public var id: UUID
    public var state: State
    /// The invitation JSON object as received.
    public var invitation: JSONValue
    public var invitationKind: String
    public var invitationId: String?
    public var publicDid: String?
    /// The invitation's first recipient key (base58): the key the Response must be signed by.
    public var firstRecipientKey: String?
    public var invitationEndpoint: String?
    public var invitationRoutingKeys: [String]
    public var myDid: String?
    public var myVerkey: String?
    /// The Request's `@id`, which the Response carries as `~thread.thid`.
    public var threadId: String?
    public var theirDid: String?
    public var theirVerkey: String?
    public var theirEndpoint: String?
    public var theirRoutingKeys: [String]
    public var label: String?
    public var logoUrl: String?
    public var goal: String?
    public var goalCode: String?
    public var failureReason: String?
    public var problemReport: JSONValue?
    /// The handshake used, e.g. `https://didcomm.org/connections/1.0` or
    /// `https://didcomm.org/didexchange/1.1`; nil until connect (and in older exports).
    public var handshakeProtocol: String?
    /// Nil: invitee (every record before the inviter role existed).
    public var role: Role?
    /// Inviter: whether the invitation makes a connection per Request (it stays `initialized`).
    public var multiUse: Bool?
    /// Inviter: the backend's own name for the invitation and the connections it makes.
    public var alias: String?
    /// Our DID rotation (RFC 0794) sent to the peer and not yet acknowledged: until its `ack`,
    /// `myVerkey` still sends and both keys receive.
    public var rotation: PendingRotation?
    public var createdAt: Date
    public var updatedAt: Date

    public init(
        id: UUID = UUID.random(), state: State = .initialized, invitation: JSONValue, invitationKind: String,
        invitationId: String? = nil, publicDid: String? = nil, firstRecipientKey: String? = nil,
        invitationEndpoint: String? = nil, invitationRoutingKeys: [String] = [], myDid: String? = nil,
        myVerkey: String? = nil, threadId: String? = nil, theirDid: String? = nil, theirVerkey: String? = nil,
        theirEndpoint: String? = nil, theirRoutingKeys: [String] = [], label: String? = nil, logoUrl: String? = nil,
        goal: String? = nil, goalCode: String? = nil, failureReason: String? = nil, problemReport: JSONValue? = nil,
        handshakeProtocol: String? = nil, role: Role? = nil, multiUse: Bool? = nil, alias: String? = nil,
        rotation: PendingRotation? = nil, createdAt: Date = Date(), updatedAt: Date = Date()
    ) {
        self.id = id
        self.state = state
        self.invitation = invitation
        self.invitationKind = invitationKind
        self.invitationId = invitationId
        self.publicDid = publicDid
        self.firstRecipientKey = firstRecipientKey
        self.invitationEndpoint = invitationEndpoint
        self.invitationRoutingKeys = invitationRoutingKeys
        self.myDid = myDid
        self.myVerkey = myVerkey
        self.threadId = threadId
        self.theirDid = theirDid
        self.theirVerkey = theirVerkey
        self.theirEndpoint = theirEndpoint
        self.theirRoutingKeys = theirRoutingKeys
        self.label = label
        self.logoUrl = logoUrl
        self.goal = goal
        self.goalCode = goalCode
        self.failureReason = failureReason
        self.problemReport = problemReport
        self.handshakeProtocol = handshakeProtocol
        self.role = role
        self.multiUse = multiUse
        self.alias = alias
        self.rotation = rotation
        self.createdAt = createdAt
        self.updatedAt = updatedAt
    }
}

/// A DID rotation of ours (RFC 0794) under way: the DID and key we rotate to, and the `@id` of
/// the `rotate` message the peer's `ack` or problem report threads to.
public struct PendingRotation: Sendable, Hashable, Codable {
    public var did: String
    public var verkey: String
    public var messageId: String

    public init(did: String, verkey: String, messageId: String) {
        self.did = did
        self.verkey = verkey
        self.messageId = messageId
    }
}

extension ConnectionRepository {
    /// The connection whose pairwise verkey is `verkey`, locked for update.
    public func findByMyVerkey(_ verkey: String) throws -> ConnectionRecord? {
        try findByMyVerkey(verkey, lock: true)
    }
}

/// `aerie.connections` inside one tenant transaction.
public protocol ConnectionRepository {
    /// Throws `conflict` when the id (or our DID / verkey) is already used: like every write
    /// whose outcome it does not return, it is queued and sent with the transaction's next
    /// statement or its commit, which throw its error.
    /// The insert logs the event of the record's state; a record inserted `requested` (made and
    /// connected in one transaction, `connections.accept`) logs `initialized` first, as if it had
    /// been inserted `initialized` and then moved (schema/0030).
    func insert(_ record: ConnectionRecord) throws
    /// `insert` of a record made elsewhere (`connections.deserialize`): logs the one event of its
    /// state, whichever it is.
    func insertImported(_ record: ConnectionRecord) throws
    func get(_ id: UUID) throws -> ConnectionRecord?
    /// Locks the row for the rest of the transaction (`FOR UPDATE`), for read-modify-write.
    func getForUpdate(_ id: UUID) throws -> ConnectionRecord?
    /// The connection with the sealed secret of its pairwise key (nil when it has none, or the
    /// key is gone), in one statement, without a lock: what a send reads before packing.
    func getWithSealedKey(_ id: UUID) throws -> (record: ConnectionRecord, sealedSecret: [UInt8]?)?
    /// Writes every field but `id` and `createdAt`; sets `updatedAt`. Returns false when absent.
    @discardableResult
    func update(_ record: ConnectionRecord) throws -> Bool
    /// `update` without its outcome, for a row the transaction holds (locked, or inserted in
    /// it): queued, sent with the transaction's next statement or its commit (no round trip of
    /// its own).
    func updateQueued(_ record: ConnectionRecord) throws
    /// Ascending id order after `afterId`, optionally in one state; at most `limit`.
    func list(after afterId: UUID?, state: ConnectionRecord.State?, limit: Int) throws -> [ConnectionRecord]
    /// The oldest connection (not deleted) whose invitation matches by `@id`, public DID or first
    /// recipient key, all already normalised.
    func findMatching(invitationId: String?, publicDid: String?, firstRecipientKey: String?) throws -> ConnectionRecord?
    /// `findMatching` as a queued check: when a connection matches, the transaction fails there
    /// (at its next statement or commit) with `MatchingConnection.exists`, and nothing after the
    /// check is stored. No key given checks nothing.
    func requireNoMatch(invitationId: String?, publicDid: String?, firstRecipientKey: String?) throws
    /// Locks the row of `record`, read earlier without a lock, as a queued check: when the row is
    /// gone or its state or `updatedAt` is no longer what `record` holds (another transaction
    /// changed it since), the transaction fails there (at its next statement or commit) with
    /// `ConnectionAsRead.changed`, and nothing after the check is stored. A write computed from
    /// `record` may then follow without reading the row again. A `record` whose `updatedAt` is
    /// its `createdAt` stands for a row never changed since its insert (read so, or kept as
    /// inserted, whose times the database wrote), and the row must still be unchanged.
    func lockAsRead(_ record: ConnectionRecord) throws
    /// Waits for, then holds until the transaction ends, this tenant's lock on an invitation
    /// `@id`: every transaction that may make a connection for that invitation takes it before
    /// looking for one, so concurrent accepts of one invitation make one connection.
    func lockInvitation(_ invitationId: String) throws
    /// The connection whose pairwise verkey is `verkey` (or the key of its rotation under way),
    /// locked for update when `lock` (a lock only lasts for the transaction: a lookup on its own,
    /// e.g. in `TenantDatabase.read`, takes none).
    func findByMyVerkey(_ verkey: String, lock: Bool) throws -> ConnectionRecord?
    /// The first of `verkeys` (in their order) the tenant holds a key for, with its sealed
    /// private key and the connection whose pairwise verkey it is (or the key of its rotation
    /// under way), in one statement: what the
    /// inbound pipeline reads of a message's recipient.
    func inboundRecipient(verkeys: [String]) throws -> InboundRecipient?
    func findByMyDid(_ did: String) throws -> ConnectionRecord?
    /// Removes the row; returns whether there was one.
    func delete(_ id: UUID) throws -> Bool
}

extension ConnectionRecord {
    /// Whether messages can be exchanged: the handshake is done (accepted, or reused by an
    /// out-of-band invitation) and the peer's key and endpoint are known.
    public var isEstablished: Bool {
        (state == .accepted || state == .reused) && myVerkey != nil && theirVerkey != nil && theirEndpoint != nil
    }
}

extension ConnectionRecord {
    /// Whether we made the invitation (inviter role).
    public var isInviter: Bool { role == .inviter }

    /// An invitation of ours still taking Requests at `myVerkey` (the invitation key): a
    /// single-use one until its Request, a multi-use one always.
    public var isOpenInvitation: Bool { role == .inviter && state == .initialized && theirVerkey == nil }

    /// An inviter-side connection that answered the Request and waits for the invitee's first
    /// message (RFC 0160: an ack or any message) to become `accepted`.
    public var awaitsPeerConfirmation: Bool { role == .inviter && state == .responded && theirVerkey != nil }

    /// Made from an out-of-band invitation without `handshake_protocols` (RFC 0434 connectionless,
    /// seed 004 row 4): the peer has our key from no handshake, so what we send it carries our
    /// `~service` (RFC 0056) and the invitation as `~thread.pthid`, for it to answer.
    public var isConnectionless: Bool {
        guard role != .inviter, handshakeProtocol == nil, invitationKind == Invitation.Kind.outOfBand.rawValue else { return false }
        switch invitation["handshake_protocols"] {
        case nil, .null?: return true
        case .array(let offered)?: return offered.isEmpty
        default: return false
        }
    }
}

/// What `ConnectionRepository.lockAsRead` fails its transaction with when the connection
/// changed since it was read.
public enum ConnectionAsRead {
    public static let changed = AerieError(.conflict, "the connection changed while the message was handled", details: changedDetails)
    private static let changedDetails = "the connection is no longer as read (lockAsRead)"

    public static func changed(_ error: any Error) -> Bool {
        (error as? AerieError)?.details == changedDetails
    }
}

/// What `ConnectionRepository.requireNoMatch` fails its transaction with when the tenant has a
/// connection matching the invitation.
public enum MatchingConnection {
    public static let exists = AerieError(
        .conflict, "the tenant already has a connection for this invitation", field: "invitation", details: existsDetails)
    private static let existsDetails = "a connection matches the invitation (requireNoMatch)"

    public static func exists(_ error: any Error) -> Bool {
        (error as? AerieError)?.details == existsDetails
    }
}
