import AerieCore
import CCurl
import Logging
import NIOPosix
import Synchronization

/// Fetches URLs (short invitation URLs) with libcurl, SSRF-safe.
///
/// - http and https only, on the first request and on every redirect;
/// - the peer address is checked on the socket curl is about to connect (after DNS), so a host
///   name resolving to a loopback or private address is refused like the literal address,
///   unless `allowPrivateAddresses`; proxies from the environment are ignored, or the check
///   would see the proxy instead of the peer;
/// - redirects are followed here, one request at a time, at most `maxRedirects`; a redirect
///   whose target carries one of the request's `stopAtRedirectsWithQueryItems` is returned
///   unfollowed;
/// - bodies over `maxBodyBytes` are cut off, and the whole fetch gets `totalTimeout`.
///
/// Transfers block, so they run on the resolver's own `NIOThreadPool`, never on the Swift
/// concurrency pool. Call `shutdown()` before dropping the resolver.
public final class URLResolver: URLFetcher {
    public let configuration: Configuration
    let policy: AddressPolicy
    private let logger: Logger
    private let threads: NIOThreadPool
    private let pending = Atomic<Int>(0)

    public convenience init(configuration: Configuration = Configuration(), logger: Logger) {
        self.init(
            configuration: configuration,
            policy: AddressPolicy(
                allowPrivateAddresses: configuration.allowPrivateAddresses, allowedNetworks: configuration.allowedNetworks,
                allowedNetworksSetting: configuration.allowedNetworksSetting),
            logger: logger)
    }

    /// With an explicit address policy (tests: one local server allowed, all else refused).
    package init(configuration: Configuration, policy: AddressPolicy, logger: Logger) {
        self.configuration = configuration
        self.policy = policy
        self.logger = logger
        self.threads = NIOThreadPool(numberOfThreads: max(1, configuration.threads))
        threads.start()
    }

    /// Stops the threads after running transfers end (each is bounded by `totalTimeout`).
    public func shutdown() async {
        try? await threads.shutdownGracefully()
    }

    public func fetch(_ request: URLFetchRequest) async throws -> FetchedURL {
        try Self.checkFetchable(request.url, maxBytes: configuration.maxURLBytes)
        guard pending.add(1, ordering: .relaxed).newValue <= configuration.maxPendingFetches else {
            pending.subtract(1, ordering: .relaxed)
            throw URLFetchError(.busy, "too many URL fetches are in progress")
        }
        defer { pending.subtract(1, ordering: .relaxed) }

        // Time spent waiting for a thread counts: the caller waits at most `totalTimeout`.
        let deadline = ContinuousClock.now + configuration.totalTimeout
        let transfer = CurlTransfer(policy: policy, maxBodyBytes: configuration.maxBodyBytes)
        let configuration = self.configuration
        let logger = self.logger
        do {
            return try await withTaskCancellationHandler {
                try await threads.runIfActive {
                    try Self.run(
                        request, deadline: deadline, transfer: transfer, configuration: configuration, logger: logger)
                }
            } onCancel: {
                transfer.cancelled.store(true, ordering: .relaxed)
            }
        } catch let error as URLFetchError {
            throw error
        } catch let error as CancellationError where Task.isCancelled {
            throw error
        } catch {
            // The pool refused the work: it is shut down.
            throw URLFetchError(.unreachable, "URL fetching is not available", details: "\(error)")
        }
    }

    /// Refuses an endpoint this server could never POST to (`URLFetcher.checkDestination`):
    /// a URL that is not http(s), or a host whose every address the policy refuses. The host is
    /// resolved by libcurl exactly as a delivery would (same parser, resolver and policy
    /// callback), but no socket is opened. A name that does not resolve, or resolves too slowly,
    /// is not refused: that may pass, and delivery retries it.
    ///
    /// A host written as a dotted-decimal IPv4 address has nothing to resolve: it is judged here,
    /// without a thread switch and a curl handle (every other spelling goes to curl, as before).
    public func checkDestination(_ url: String) async throws {
        try Self.checkFetchable(url, maxBytes: configuration.maxURLBytes)
        if let address = Self.dottedIPv4Host(url) {
            guard policy.permits(address) else {
                throw URLFetchError(
                    .forbiddenAddress, "the endpoint \(url) is not a public address: \(policy.refusalHint)",
                    details: "refused [\(CurlTransfer.text(address))]")
            }
            return
        }
        let transfer = CurlTransfer(policy: policy, maxBodyBytes: 0, probeOnly: true)
        let connectTimeout = configuration.connectTimeout
        do {
            try await threads.runIfActive {
                let easy = try CurlEasy()
                try easy.set(CURLOPT_NOSIGNAL, true)
                try easy.set(CURLOPT_PROTOCOLS_STR, "http,https")
                try easy.set(CURLOPT_PROXY, "")
                try easy.set(CURLOPT_CONNECT_ONLY, true)
                try easy.set(CURLOPT_URL, url)
                try easy.set(CURLOPT_CONNECTTIMEOUT_MS, max(1, Self.milliseconds(connectTimeout)))
                try transfer.install(on: easy)
                _ = easy.perform()
            }
        } catch {
            // The pool is shut down: nothing to judge with; delivery will say what happens.
            return
        }
        if transfer.refusedByPolicy {
            throw URLFetchError(
                .forbiddenAddress, "the endpoint \(url) is not a public address: \(policy.refusalHint)",
                details: "refused \(transfer.refusedAddresses)")
        }
    }

    // MARK: - The blocking part

    private static func run(
        _ request: URLFetchRequest, deadline: ContinuousClock.Instant, transfer: CurlTransfer,
        configuration: Configuration, logger: Logger
    ) throws -> FetchedURL {
        let clock = ContinuousClock()
        let easy = try CurlEasy()
        try easy.set(CURLOPT_NOSIGNAL, true)
        try easy.set(CURLOPT_PROTOCOLS_STR, "http,https")
        try easy.set(CURLOPT_REDIR_PROTOCOLS_STR, "http,https")
        try easy.set(CURLOPT_FOLLOWLOCATION, false)
        // An empty proxy disables proxies, including those from http_proxy and friends.
        try easy.set(CURLOPT_PROXY, "")
        try easy.set(CURLOPT_MAXFILESIZE_LARGE, largeValue: Int64(configuration.maxBodyBytes))
        try easy.set(CURLOPT_HTTPGET, true)
        try easy.set(CURLOPT_USERAGENT, configuration.userAgent)
        try easy.setHeaders(["Accept: \(sanitizedHeaderValue(request.accept))"])
        try transfer.install(on: easy)

        var url = request.url
        var redirectsFollowed = 0
        while true {
            let remaining = clock.now.duration(to: deadline)
            guard remaining > .zero else { throw timeoutError(configuration) }
            try easy.set(CURLOPT_URL, url)
            try easy.set(CURLOPT_TIMEOUT_MS, max(1, milliseconds(remaining)))
            try easy.set(CURLOPT_CONNECTTIMEOUT_MS, max(1, milliseconds(min(remaining, configuration.connectTimeout))))
            transfer.resetForNextRequest()

            let code = easy.perform()
            guard code == CURLE_OK else {
                throw error(for: code, transfer: transfer, configuration: configuration, url: url, logger: logger)
            }
            let status = easy.info(long: CURLINFO_RESPONSE_CODE) ?? 0
            let contentType = easy.info(string: CURLINFO_CONTENT_TYPE)

            if (300..<400).contains(status), let location = easy.info(string: CURLINFO_REDIRECT_URL) {
                if !request.stopAtRedirectsWithQueryItems.isDisjoint(with: queryItemNames(location)) {
                    return FetchedURL(url: url, status: status, contentType: contentType, redirectLocation: location)
                }
                try checkFetchable(location, maxBytes: configuration.maxURLBytes)
                guard redirectsFollowed < configuration.maxRedirects else {
                    throw URLFetchError(
                        .tooManyRedirects, "more than \(configuration.maxRedirects) redirects", details: url)
                }
                redirectsFollowed += 1
                url = location
                continue
            }
            return FetchedURL(url: url, status: status, contentType: contentType, body: transfer.body)
        }
    }

    private static func error(
        for code: CURLcode, transfer: CurlTransfer, configuration: Configuration, url: String, logger: Logger
    ) -> any Error {
        let details = "\(url): \(CurlEasy.describe(code))"
        switch code {
        case CURLE_ABORTED_BY_CALLBACK where transfer.cancelled.load(ordering: .relaxed):
            return CancellationError()
        case CURLE_WRITE_ERROR where transfer.bodyTooLarge, CURLE_FILESIZE_EXCEEDED:
            return URLFetchError(
                .tooLarge, "the response is larger than \(configuration.maxBodyBytes / 1024) KiB", details: details)
        case CURLE_OPERATION_TIMEDOUT:
            return timeoutError(configuration, details: details)
        case CURLE_COULDNT_CONNECT where transfer.refusedByPolicy:
            logger.debug(
                "refused to connect to a non-public address",
                metadata: ["url": "\(url)", "addresses": "\(transfer.refusedAddresses)"])
            return URLFetchError(
                .forbiddenAddress, "the URL leads to a loopback, private or otherwise non-public address",
                details: "\(url): refused \(transfer.refusedAddresses)")
        case CURLE_UNSUPPORTED_PROTOCOL:
            return URLFetchError(.forbiddenScheme, "only http and https URLs can be fetched", details: details)
        case CURLE_URL_MALFORMAT:
            return URLFetchError(.invalidURL, "the URL is not valid", details: details)
        case CURLE_COULDNT_RESOLVE_HOST:
            return URLFetchError(.unreachable, "the URL's host could not be resolved", details: details)
        default:
            return URLFetchError(.unreachable, "the URL could not be fetched", details: details)
        }
    }

    private static func timeoutError(_ configuration: Configuration, details: String? = nil) -> URLFetchError {
        URLFetchError(.timeout, "the URL did not answer within \(configuration.totalTimeout)", details: details)
    }

    private static func milliseconds(_ duration: Duration) -> Int {
        let (seconds, attoseconds) = duration.components
        return Int(seconds) * 1000 + Int(attoseconds / 1_000_000_000_000_000)
    }

    // MARK: - URL checks (pure)

    /// Refuses what must never reach libcurl: non-http(s) schemes, control characters and
    /// spaces, and overlong URLs.
    package static func checkFetchable(_ url: String, maxBytes: Int) throws {
        guard !url.isEmpty, url.utf8.count <= maxBytes else {
            throw URLFetchError(.invalidURL, "the URL must be 1 to \(maxBytes) bytes")
        }
        guard url.utf8.allSatisfy({ $0 > 0x20 && $0 != 0x7F }) else {
            throw URLFetchError(.invalidURL, "the URL contains spaces or control characters")
        }
        guard hasHTTPScheme(url) else {
            throw URLFetchError(.forbiddenScheme, "only http and https URLs can be fetched")
        }
    }

    /// The host of an http(s) URL when it is exactly a dotted-decimal IPv4 address
    /// (`IPNetwork.parseIPv4`), optionally with a numeric port and no user part;
    /// nil for anything else, including the spellings curl reads as other addresses (octal,
    /// hexadecimal, fewer parts), which only curl's own parser may judge.
    package static func dottedIPv4Host(_ url: String) -> [UInt8]? {
        guard hasHTTPScheme(url), let schemeEnd = url.utf8.firstIndex(of: UInt8(ascii: ":")) else { return nil }
        let rest = url.utf8[schemeEnd...].dropFirst(3)
        let authority = rest.prefix { $0 != UInt8(ascii: "/") && $0 != UInt8(ascii: "?") && $0 != UInt8(ascii: "#") }
        var host = authority[...]
        if let colon = authority.firstIndex(of: UInt8(ascii: ":")) {
            let port = authority[authority.index(after: colon)...]
            guard (1...5).contains(port.count), port.allSatisfy({ (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) }) else {
                return nil
            }
            host = authority[..<colon]
        }
        return IPNetwork.parseIPv4(String(decoding: host, as: UTF8.self))
    }

    package static func hasHTTPScheme(_ url: String) -> Bool {
        guard let colon = url.utf8.firstIndex(of: UInt8(ascii: ":")) else { return false }
        let scheme = String(decoding: url.utf8[..<colon], as: UTF8.self).lowercased()
        return (scheme == "http" || scheme == "https") && url.utf8[colon...].starts(with: "://".utf8)
    }

    /// The percent-decoded names of a URL's query parameters.
    package static func queryItemNames(_ url: String) -> Set<String> {
        let beforeFragment = url.split(separator: "#", maxSplits: 1, omittingEmptySubsequences: false).first ?? ""
        guard let question = beforeFragment.firstIndex(of: "?") else { return [] }
        var names: Set<String> = []
        for pair in beforeFragment[beforeFragment.index(after: question)...].split(separator: "&") {
            let name = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false).first ?? ""
            names.insert(percentDecoded(name))
        }
        return names
    }

    private static func percentDecoded(_ text: Substring) -> String {
        var out: [UInt8] = []
        var bytes = text.utf8.makeIterator()
        while let byte = bytes.next() {
            guard byte == UInt8(ascii: "%") else {
                out.append(byte)
                continue
            }
            guard let high = bytes.next(), let low = bytes.next(),
                let value = UInt8(String(decoding: [high, low], as: UTF8.self), radix: 16)
            else { break }
            out.append(value)
        }
        return String(decoding: out, as: UTF8.self)
    }

    private static func sanitizedHeaderValue(_ value: String) -> String {
        String(value.unicodeScalars.filter { $0.value >= 0x20 && $0.value < 0x7F })
    }
}
