extension URLResolver {
    /// Limits of URL fetching. The defaults are the ones DESIGN.md sets for invitation URLs.
    public struct Configuration: Sendable {
        /// Allow loopback, private, link-local and other non-public peer addresses
        /// (`AERIE_ALLOW_PRIVATE_URLS=1`; tests and closed networks only).
        public var allowPrivateAddresses: Bool
        /// Non-public networks allowed all the same (`AERIE_ALLOWED_NETWORKS`).
        public var allowedNetworks: [IPNetwork]
        /// The setting that fills `allowedNetworks`, named in refusals.
        public var allowedNetworksSetting: String
        /// Redirects followed at most; one more is an error.
        public var maxRedirects: Int
        /// Largest response body accepted.
        public var maxBodyBytes: Int
        /// For the whole fetch, redirects included.
        public var totalTimeout: Duration
        /// For each TCP (and TLS) connect.
        public var connectTimeout: Duration
        /// Blocking threads running transfers; fetches beyond them wait.
        public var threads: Int
        /// Fetches and destination checks running or waiting at most; more fail with `busy`.
        public var maxPendingFetches: Int
        /// Blocking threads judging the endpoints strangers name (`checkStrangerDestination`),
        /// apart from `threads`.
        public var strangerCheckThreads: Int
        /// Strangers' endpoint checks running or waiting at most; more fail with `busy`.
        public var maxPendingStrangerChecks: Int
        /// Longest URL fetched (short URLs are short).
        public var maxURLBytes: Int
        public var userAgent: String
        /// A PEM file of the certificate authorities HTTPS URLs are verified against
        /// (`AERIE_TLS_CA_FILE`), instead of the system's; nil: the system's.
        public var trustedCertificates: String?

        public init(
            allowPrivateAddresses: Bool = false,
            allowedNetworks: [IPNetwork] = [],
            allowedNetworksSetting: String = "AERIE_ALLOWED_NETWORKS",
            maxRedirects: Int = 5,
            maxBodyBytes: Int = 64 * 1024,
            totalTimeout: Duration = .seconds(10),
            connectTimeout: Duration = .seconds(5),
            threads: Int = 2,
            maxPendingFetches: Int = 64,
            strangerCheckThreads: Int = 2,
            maxPendingStrangerChecks: Int = 32,
            maxURLBytes: Int = 8 * 1024,
            userAgent: String = "aerie",
            trustedCertificates: String? = nil
        ) {
            self.allowPrivateAddresses = allowPrivateAddresses
            self.allowedNetworks = allowedNetworks
            self.allowedNetworksSetting = allowedNetworksSetting
            self.maxRedirects = maxRedirects
            self.maxBodyBytes = maxBodyBytes
            self.totalTimeout = totalTimeout
            self.connectTimeout = connectTimeout
            self.threads = threads
            self.maxPendingFetches = maxPendingFetches
            self.strangerCheckThreads = strangerCheckThreads
            self.maxPendingStrangerChecks = maxPendingStrangerChecks
            self.maxURLBytes = maxURLBytes
            self.userAgent = userAgent
            self.trustedCertificates = trustedCertificates
        }
    }
}
