/// A state change another plugin asks the connections plugin for (through
/// `ConnectionHandshakes.move`), so only the connections plugin's state machine writes states.
public enum ConnectionMove: Sendable, Hashable {
    /// The inviter accepted our handshake-reuse: the established connection becomes `reused`.
    case reuseAccepted
    /// A new connection from an out-of-band invitation without handshake, established at once
    /// (stored by the move).
    case connectionless
    /// `connections.delete`: the connection takes state `deleted` (so its event, state 6, reaches
    /// subscribers, the event log and waiters) and its row is removed, in the caller's
    /// transaction. What belongs to the connection (keys, mailbox, outbox...) is the caller's to
    /// remove first.
    case delete
}
