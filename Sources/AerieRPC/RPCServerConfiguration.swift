import Logging

/// Limits and addresses of the JSON-RPC server. Every limit here bounds something a client
/// controls; the defaults are safe for a public-facing deployment behind a load balancer.
public struct RPCServerConfiguration: Sendable {
    /// `AERIE_RPC_LISTEN`, default `127.0.0.1:7400`. Port 0 picks a free port (tests).
    public var host: String
    public var port: Int
    /// `AERIE_RPC_MAX_SESSIONS`: concurrent authenticated tenant and backend sessions; a session
    /// that authenticates beyond it is answered `busy` and closed. Admin sessions are not counted
    /// here (see `maxAdminSessions`).
    public var maxSessions: Int
    /// `AERIE_RPC_MAX_SESSIONS_PER_CREDENTIAL`: sessions one tenant or one backend holds at once,
    /// so that one credential cannot take every place of `maxSessions`.
    public var maxSessionsPerCredential: Int
    /// `AERIE_RPC_MAX_ADMIN_SESSIONS`: admin sessions, a lane of their own: the operator can act
    /// (suspend a tenant) while others hold every place of `maxSessions`.
    public var maxAdminSessions: Int
    /// `AERIE_RPC_MAX_IN_FLIGHT`: requests one session may have running; reading pauses beyond it.
    public var maxInFlightPerSession: Int
    /// `AERIE_RPC_IDLE_TIMEOUT`: seconds without a request before the session is closed (blank
    /// lines and partial lines are not requests).
    public var idleTimeoutSeconds: Int
    /// `AERIE_RPC_MAX_LINE_BYTES`: a longer line answers -32600 and closes the session.
    public var maxLineBytes: Int
    /// `AERIE_RPC_MAX_BATCH`: entries in one batch.
    public var maxBatchEntries: Int
    /// `AERIE_RPC_NOTIFICATION_QUEUE`: pending notifications per session before it overflows.
    public var notificationQueueLimit: Int
    /// `AERIE_RPC_AUTH_TIMEOUT`: seconds a new session has to authenticate; then it gets an
    /// `unauthenticated` error line and is closed.
    public var authTimeoutSeconds: Int
    /// `AERIE_RPC_MAX_UNAUTHENTICATED`: sessions not yet authenticated, counted apart from
    /// `maxSessions` (which counts authenticated ones), so a flood of anonymous connections
    /// cannot take the authenticated clients' places.
    public var maxUnauthenticatedSessions: Int

    public init(
        host: String = "127.0.0.1",
        port: Int = 7400,
        maxSessions: Int = 1024,
        maxSessionsPerCredential: Int = 64,
        maxAdminSessions: Int = 16,
        maxInFlightPerSession: Int = 64,
        idleTimeoutSeconds: Int = 300,
        maxLineBytes: Int = 1 << 20,
        maxBatchEntries: Int = 100,
        notificationQueueLimit: Int = 1000,
        authTimeoutSeconds: Int = 10,
        maxUnauthenticatedSessions: Int = 1024
    ) {
        self.host = host
        self.port = port
        self.maxSessions = maxSessions
        self.maxSessionsPerCredential = maxSessionsPerCredential
        self.maxAdminSessions = maxAdminSessions
        self.maxInFlightPerSession = maxInFlightPerSession
        self.idleTimeoutSeconds = idleTimeoutSeconds
        self.maxLineBytes = maxLineBytes
        self.maxBatchEntries = maxBatchEntries
        self.notificationQueueLimit = notificationQueueLimit
        self.authTimeoutSeconds = authTimeoutSeconds
        self.maxUnauthenticatedSessions = maxUnauthenticatedSessions
    }
}
