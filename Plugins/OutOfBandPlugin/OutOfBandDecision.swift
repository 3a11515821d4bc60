import AerieCore

/// Seed 004's table as a pure function: what to do with an out-of-band invitation, from whether
/// it offers handshake protocols, whether it carries an attached request, and whether the tenant
/// already has an established connection with the inviter.
public enum OutOfBandDecision: Sendable, Hashable {
    /// Rows 1 and 2: neither a handshake nor an attached request.
    case invalid
    /// Row 3: a new connection through the handshake.
    case connect
    /// Row 4: no handshake: the connection is made at once (state 4) with the service's keys, and
    /// the attached request runs over it.
    case connectionless
    /// Row 5: a new connection through the handshake, then the attached request over it.
    case connectThenRunAttachment
    /// Row 6: handshake-reuse over the existing connection.
    case reuse
    /// Row 7: the attached request runs over the existing connection; no handshake, no reuse.
    case runAttachmentOnExisting
    /// Row 8: handshake-reuse over the existing connection, then the attached request over it.
    case reuseThenRunAttachment

    /// The inputs of one row.
    public struct Inputs: Sendable, Hashable {
        public var handshakeProtocols: Bool
        public var attachment: Bool
        public var connectionExists: Bool

        public init(handshakeProtocols: Bool, attachment: Bool, connectionExists: Bool) {
            self.handshakeProtocols = handshakeProtocols
            self.attachment = attachment
            self.connectionExists = connectionExists
        }
    }

    /// The row taken, numbered as in seed 004 (1...8), and what it says to do.
    public struct Row: Sendable, Hashable {
        public var number: Int
        public var decision: OutOfBandDecision
    }

    public static func decide(_ inputs: Inputs) -> Row {
        switch (inputs.handshakeProtocols, inputs.attachment, inputs.connectionExists) {
        case (false, false, false): Row(number: 1, decision: .invalid)
        case (false, false, true): Row(number: 2, decision: .invalid)
        case (true, false, false): Row(number: 3, decision: .connect)
        case (false, true, false): Row(number: 4, decision: .connectionless)
        case (true, true, false): Row(number: 5, decision: .connectThenRunAttachment)
        case (true, false, true): Row(number: 6, decision: .reuse)
        case (false, true, true): Row(number: 7, decision: .runAttachmentOnExisting)
        case (true, true, true): Row(number: 8, decision: .reuseThenRunAttachment)
        }
    }

    /// Row `number` of the table (1...8), as stored with an accepted invitation.
    public static func row(_ number: Int) -> Row? {
        let decision: OutOfBandDecision
        switch number {
        case 1, 2: decision = .invalid
        case 3: decision = .connect
        case 4: decision = .connectionless
        case 5: decision = .connectThenRunAttachment
        case 6: decision = .reuse
        case 7: decision = .runAttachmentOnExisting
        case 8: decision = .reuseThenRunAttachment
        default: return nil
        }
        return Row(number: number, decision: decision)
    }

    /// The name results report.
    public var name: String {
        switch self {
        case .invalid: "invalid"
        case .connect: "connect"
        case .connectionless: "connectionless"
        case .connectThenRunAttachment: "connect-then-attachment"
        case .reuse: "reuse"
        case .runAttachmentOnExisting: "attachment-on-existing"
        case .reuseThenRunAttachment: "reuse-then-attachment"
        }
    }

    public var makesConnection: Bool { self == .connect || self == .connectThenRunAttachment }
    public var sendsReuse: Bool { self == .reuse || self == .reuseThenRunAttachment }
    public var runsAttachment: Bool {
        self == .connectionless || self == .connectThenRunAttachment || self == .runAttachmentOnExisting
            || self == .reuseThenRunAttachment
    }
}
