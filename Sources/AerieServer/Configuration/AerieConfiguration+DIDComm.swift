import AerieCore
import AerieTransport

extension AerieConfiguration {
    /// The inbound DIDComm endpoint and the handling of what arrives on it.
    public struct DIDComm: Sendable {
        /// `AERIE_DIDCOMM_LISTEN`: inbound DIDComm HTTP `HOST:PORT`.
        public var host = "127.0.0.1"
        public var port = 7401
        /// `AERIE_PUBLIC_ENDPOINT`: the endpoint peers are told; default `http://<didcomm listen>`.
        public var publicEndpoint: String?
        /// `AERIE_DIDCOMM_*`: what one peer may take of the inbound endpoint (body size,
        /// connections, deadlines, keep-alive); the defaults are `HTTPListener.Limits`'.
        public var limits = HTTPListener.Limits()
        /// How often inbound messages whose handling failed are looked for, to be tried again
        /// (each waits its own backoff: `handlingBackoff` doubling, `handlingMaxAttempts` attempts).
        public var recoveryInterval: Duration = .seconds(10)
        /// Handling attempts of one inbound message before its connection fails.
        public var handlingMaxAttempts = 5
        /// The wait before an inbound message whose handling failed is tried again; doubles per attempt.
        public var handlingBackoff: Duration = .seconds(5)

        public init() {}

        /// `AERIE_DIDCOMM_MAX_BODY_BYTES`: largest inbound message.
        public var maxBodyBytes: Int {
            get { limits.maxBodyBytes }
            set { limits.maxBodyBytes = newValue }
        }

        var listener: HTTPListener.Configuration {
            HTTPListener.Configuration(host: host, port: port, limits: limits)
        }
    }

    /// What strangers may ask of the connection protocols, and how long a tenant's call waits
    /// for an inviter.
    public struct Connections: Sendable {
        /// `AERIE_INVITATION_REQUESTS_PER_MINUTE`, `AERIE_SENDER_REQUESTS_PER_MINUTE`: how fast
        /// strangers' Requests are taken per invitation and per sender key, in this process; more
        /// are answered 429 and nothing is stored (`RequestRateLimits`).
        public var invitationRequestsPerMinute = 60
        public var senderRequestsPerMinute = 10
        /// `AERIE_PENDING_CONNECTIONS_MAX`: connections of one tenant waiting for their peer's
        /// first answer (`responded`, made in the last hour); a Request past it is answered 429
        /// and nothing is stored, so strangers hold at most this many of the tenant's mailbox and
        /// outbox rows.
        public var pendingMax = 100
        /// `AERIE_OOB_TIMEOUT`: how long `outOfBand.accept` / `sendReuse` wait for the inviter
        /// unless a call says otherwise.
        public var outOfBandTimeout: Duration = .seconds(15)
        /// `AERIE_OPEN_EXCHANGES_PER_CONNECTION`, `AERIE_OPEN_EXCHANGES_PER_TENANT`: issue-credential
        /// offers and present-proof requests open at once (not done or abandoned), per protocol; a
        /// peer's next one is answered with a problem report and nothing of it is stored.
        public var openExchanges = OpenExchangeLimits.default

        public init() {}

        var requestRates: RequestRateLimits.Limits {
            RequestRateLimits.Limits(perInvitation: invitationRequestsPerMinute, perSender: senderRequestsPerMinute)
        }
    }
}
