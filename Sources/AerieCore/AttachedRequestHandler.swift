import Foundation

/// A plugin that takes over a request attached to an out-of-band invitation (seed 004: "start the
/// protocol related to the extracted message"): a credential offer, a proof request. The server
/// hands the enabled ones to the out-of-band plugin, which calls the one for the attachment's
/// `@type` in the transaction that stores the invitation's connection and record, so the request
/// is recorded exactly when the invitation is; plugins stay independent of each other.
public protocol AttachedRequestHandler: Sendable {
    /// The message types it takes (`https://didcomm.org/...` form).
    var attachedRequestTypes: Set<String> { get }
    /// Checks `message` before anything is stored (an error refuses the invitation).
    func checkAttached(_ message: JSONValue) throws
    /// Records `message` as received from the inviter of `invitationId` on `connection` (the new,
    /// reused or existing connection, not yet established when a handshake is under way), inside
    /// the out-of-band plugin's transaction `tx`.
    func receiveAttached(_ message: JSONValue, invitationId: String, on connection: ConnectionRecord, in tx: any TenantTransaction)
        throws
}
