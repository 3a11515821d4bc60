/// Fetches a URL for a plugin (a short invitation URL, say) without the plugin touching the
/// network. AerieTransport implements it with libcurl behind an SSRF guard; plugins see only this.
public protocol URLFetcher: Sendable {
    /// GETs `request.url`, following redirects within the implementation's limits.
    /// Throws `URLFetchError` (or `CancellationError`).
    func fetch(_ request: URLFetchRequest) async throws -> FetchedURL

    /// Throws `URLFetchError` (`forbiddenScheme`, `invalidURL`, `forbiddenAddress`) when the
    /// server could never send to `url` (a peer's endpoint) under its outbound address policy,
    /// so a caller refuses before storing anything instead of queueing a send that cannot go.
    /// Not a reachability test: a host that does not resolve now passes.
    func checkDestination(_ url: String) async throws

    /// `checkDestination` of an endpoint a stranger named (a Request to a public invitation),
    /// judged apart from the tenants' own calls: strangers' host names that resolve slowly or
    /// never delay only each other. Throws `busy` at once when too many such checks wait.
    func checkStrangerDestination(_ url: String) async throws
}

extension URLFetcher {
    /// Judged like any other destination where the fetcher keeps no separate lane.
    public func checkStrangerDestination(_ url: String) async throws {
        try await checkDestination(url)
    }

    /// GETs `url` with `Accept: application/json`, following every redirect it may.
    public func fetch(_ url: String) async throws -> FetchedURL {
        try await fetch(URLFetchRequest(url: url))
    }
}

/// What to fetch.
public struct URLFetchRequest: Sendable, Hashable {
    public var url: String
    /// The `Accept` header.
    public var accept: String
    /// A redirect whose target's query carries one of these parameter names is not followed:
    /// the fetch ends there and the target comes back as `FetchedURL.redirectLocation`. (An
    /// invitation URL such as `…?c_i=…` needs no request to its host.)
    public var stopAtRedirectsWithQueryItems: Set<String>

    public init(url: String, accept: String = "application/json", stopAtRedirectsWithQueryItems: Set<String> = []) {
        self.url = url
        self.accept = accept
        self.stopAtRedirectsWithQueryItems = stopAtRedirectsWithQueryItems
    }
}

/// The last response of a fetch.
public struct FetchedURL: Sendable, Hashable {
    /// The URL that gave this response (the original one, or the last redirect target followed).
    public var url: String
    /// The HTTP status code.
    public var status: Int
    public var contentType: String?
    public var body: [UInt8]
    /// Set when the fetch stopped at a redirect (see `URLFetchRequest.stopAtRedirectsWithQueryItems`):
    /// the absolute target, not fetched.
    public var redirectLocation: String?

    public init(url: String, status: Int, contentType: String? = nil, body: [UInt8] = [], redirectLocation: String? = nil) {
        self.url = url
        self.status = status
        self.contentType = contentType
        self.body = body
        self.redirectLocation = redirectLocation
    }
}

/// Why a fetch failed. The message is safe to show; `details` are for logs only.
public struct URLFetchError: Error, Sendable, CustomStringConvertible, CustomDebugStringConvertible {
    public struct Code: Sendable, Hashable, CustomStringConvertible {
        private enum Base: String, Sendable {
            case invalidURL = "invalid_url"
            case forbiddenScheme = "forbidden_scheme"
            case forbiddenAddress = "forbidden_address"
            case tooManyRedirects = "too_many_redirects"
            case tooLarge = "too_large"
            case timeout
            case unreachable
            case busy
        }

        private let base: Base
        private init(_ base: Base) { self.base = base }

        /// Not a URL the fetcher can read.
        public static let invalidURL = Code(.invalidURL)
        /// A scheme other than http or https (also on a redirect).
        public static let forbiddenScheme = Code(.forbiddenScheme)
        /// Every address the host resolved to is loopback, private, link-local, multicast or
        /// otherwise not public, and private addresses are not allowed.
        public static let forbiddenAddress = Code(.forbiddenAddress)
        public static let tooManyRedirects = Code(.tooManyRedirects)
        /// The body exceeded the size limit.
        public static let tooLarge = Code(.tooLarge)
        /// The total time limit passed.
        public static let timeout = Code(.timeout)
        /// DNS, connection or TLS failure.
        public static let unreachable = Code(.unreachable)
        /// Too many fetches are waiting already.
        public static let busy = Code(.busy)

        public var name: String { base.rawValue }
        public var description: String { base.rawValue }
    }

    public var code: Code
    public var message: String
    public var details: String?

    public init(_ code: Code, _ message: String, details: String? = nil) {
        self.code = code
        self.message = message
        self.details = details
    }

    public var description: String { "\(code): \(message)" }
    public var debugDescription: String {
        var s = "URLFetchError(\(code): \(message)"
        if let details { s += ", details: \(details)" }
        return s + ")"
    }
}
