extension HTTPListener {
    public struct Configuration: Sendable {
        public var host: String
        public var port: Int
        public var limits: Limits

        public init(host: String = "127.0.0.1", port: Int = 7401, limits: Limits = Limits()) {
            self.host = host
            self.port = port
            self.limits = limits
        }

        public init(host: String = "127.0.0.1", port: Int = 7401, maxBodyBytes: Int) {
            var limits = Limits()
            limits.maxBodyBytes = maxBodyBytes
            self.init(host: host, port: port, limits: limits)
        }
    }

    /// What one client may take of a listener. Every size, count and time here is set by
    /// whoever connects, before anything is authenticated; the defaults are the DIDComm
    /// endpoint's, live here and only here (`AerieConfiguration` reads the `AERIE_DIDCOMM_*`
    /// variables into this struct; `Limits.operator` is the operator endpoint's).
    public struct Limits: Sendable, Equatable {
        /// `AERIE_DIDCOMM_MAX_BODY_BYTES`: largest message; larger answers 413.
        public var maxBodyBytes: Int
        /// `AERIE_DIDCOMM_MAX_CONNECTIONS`: open connections; more are closed at once.
        public var maxConnections: Int
        /// `AERIE_DIDCOMM_HEADER_TIMEOUT`: a new connection's request head must arrive within it.
        public var headerTimeout: Duration
        /// `AERIE_DIDCOMM_BODY_TIMEOUT`: the body must arrive within it of the head.
        public var bodyTimeout: Duration
        /// `AERIE_DIDCOMM_REQUEST_TIMEOUT`: from the head to the answer; a slower answer is a 503.
        public var requestTimeout: Duration
        /// `AERIE_DIDCOMM_MAX_REQUESTS_PER_CONNECTION`: requests on one kept-alive connection.
        public var maxRequestsPerConnection: Int
        /// `AERIE_DIDCOMM_KEEPALIVE_TIMEOUT`: an idle kept-alive connection's next head must arrive
        /// within it.
        public var keepAliveTimeout: Duration

        public init(
            maxBodyBytes: Int = 1 << 20,
            maxConnections: Int = 1024,
            headerTimeout: Duration = .seconds(10),
            bodyTimeout: Duration = .seconds(30),
            requestTimeout: Duration = .seconds(60),
            maxRequestsPerConnection: Int = 100,
            keepAliveTimeout: Duration = .seconds(5)
        ) {
            self.maxBodyBytes = maxBodyBytes
            self.maxConnections = maxConnections
            self.headerTimeout = headerTimeout
            self.bodyTimeout = bodyTimeout
            self.requestTimeout = requestTimeout
            self.maxRequestsPerConnection = maxRequestsPerConnection
            self.keepAliveTimeout = keepAliveTimeout
        }
    }
}

extension HTTPListener.Limits {
    /// The operator endpoint (metrics, health): a scraper and a load balancer's probes, with
    /// no request bodies.
    public static let `operator` = HTTPListener.Limits(
        maxBodyBytes: 4096, maxConnections: 64, headerTimeout: .seconds(5), bodyTimeout: .seconds(5),
        requestTimeout: .seconds(10), maxRequestsPerConnection: 1000, keepAliveTimeout: .seconds(60))
}
