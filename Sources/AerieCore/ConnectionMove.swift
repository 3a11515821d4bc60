/// A state change another plugin asks the connections plugin for (through
/// `ConnectionHandshakes.move`), so only the connections plugin's state machine writes states.
public enum ConnectionMove: Sendable, Hashable {
    /// The inviter accepted our handshake-reuse: the established connection becomes `reused`.
    case reuseAccepted
    /// A new connection from an out-of-band invitation without handshake, established at once
    /// (stored by the move).
    case connectionless
}
