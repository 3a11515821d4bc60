/// A connection invitation as read from any of the forms peers send, normalised: keys are base58
/// verkeys whatever form they arrived in (`did:key:…#…` or base58).
public struct Invitation: Sendable, Hashable {
    public enum Kind: String, Sendable, Hashable, Codable {
        /// Evernym's agency invitation (`connReqId`, `senderDetail`, …).
        case proprietary
        /// Its abbreviated form (`id`, `s`, `sa`, …).
        case proprietaryAbbreviated = "proprietary-abbreviated"
        /// Aries RFC 0160 `connections/1.0/invitation`.
        case aries
        /// Aries RFC 0434 `out-of-band/1.x/invitation`.
        case outOfBand = "out-of-band"
    }

    /// One entry of an out-of-band invitation's `services`.
    public struct Service: Sendable, Hashable {
        /// Set when the entry is a DID rather than an inline object.
        public var did: String?
        public var id: String?
        public var type: String?
        /// Nil for a DID that needs a resolver (anything but did:peer:2 and a long-form did:peer:4).
        public var serviceEndpoint: String?
        /// Base58 verkeys.
        public var recipientKeys: [String]
        /// Base58 verkeys.
        public var routingKeys: [String]

        public init(
            did: String? = nil, id: String? = nil, type: String? = nil, serviceEndpoint: String? = nil,
            recipientKeys: [String] = [], routingKeys: [String] = []
        ) {
            self.did = did
            self.id = id
            self.type = type
            self.serviceEndpoint = serviceEndpoint
            self.recipientKeys = recipientKeys
            self.routingKeys = routingKeys
        }

        /// Whether the service tells where and to which key to send.
        public var isUsable: Bool { serviceEndpoint != nil && !recipientKeys.isEmpty }
    }

    public var kind: Kind
    /// `@type` as written; nil for the proprietary kinds.
    public var type: String?
    /// `@id`, or `connReqId` / `id` for the proprietary kinds.
    public var id: String
    public var label: String?
    public var logoUrl: String?
    public var goal: String?
    public var goalCode: String?
    /// The inviter's public DID as written (`did`, `publicDID`, or an out-of-band DID service).
    public var publicDid: String?
    /// Base58 verkeys of the inviter (of the first usable service, for out-of-band).
    public var recipientKeys: [String]
    public var serviceEndpoint: String?
    /// Base58 verkeys of the mediators on the way to the inviter.
    public var routingKeys: [String]
    public var handshakeProtocols: [String]
    /// Out-of-band `accept`: media types / profiles the inviter accepts.
    public var accept: [String]
    /// Out-of-band services in order; empty for the other kinds.
    public var services: [Service]
    /// Out-of-band `requests~attach` (or the seeds' `request~attach`) entries as written.
    public var attachments: [JSONValue]
    /// The invitation JSON object as received (decoded from a URL if it came in one).
    public var json: JSONValue

    public var hasAttachment: Bool { !attachments.isEmpty }

    /// Where and to which key to send; `unsupported_invitation` when the invitation does not say
    /// (an inviter named only by a DID other than did:peer:2 would need a resolver).
    public func usableService() throws -> (endpoint: String, recipientKey: String) {
        guard let serviceEndpoint, let recipientKey = recipientKeys.first else {
            if let publicDid, publicDid.hasPrefix("did:peer:4") {
                throw Self.unseenShortForm(publicDid)
            }
            throw AerieError(
                .unsupportedInvitation,
                "no service of the invitation can be resolved here (a DID service other than did:peer:2 and did:peer:4 needs a resolver)",
                field: "services")
        }
        return (serviceEndpoint, recipientKey)
    }

    /// The refusal of an invitation naming a did:peer:4 in its short form that no connection of
    /// the tenant was made from: only the long form carries the document to connect with.
    public static func unseenShortForm(_ did: String) -> AerieError {
        AerieError(
            .unsupportedInvitation,
            "the invitation names \(did.prefix(60)), a did:peer:4 in its short form that no connection of this tenant has seen in its long form: it cannot be resolved without its document",
            field: "services")
    }

    public init(
        kind: Kind, type: String? = nil, id: String, label: String? = nil, logoUrl: String? = nil,
        goal: String? = nil, goalCode: String? = nil, publicDid: String? = nil, recipientKeys: [String] = [],
        serviceEndpoint: String? = nil, routingKeys: [String] = [], handshakeProtocols: [String] = [],
        accept: [String] = [], services: [Service] = [], attachments: [JSONValue] = [], json: JSONValue
    ) {
        self.kind = kind
        self.type = type
        self.id = id
        self.label = label
        self.logoUrl = logoUrl
        self.goal = goal
        self.goalCode = goalCode
        self.publicDid = publicDid
        self.recipientKeys = recipientKeys
        self.serviceEndpoint = serviceEndpoint
        self.routingKeys = routingKeys
        self.handshakeProtocols = handshakeProtocols
        self.accept = accept
        self.services = services
        self.attachments = attachments
        self.json = json
    }
}
