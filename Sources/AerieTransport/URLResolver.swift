import AerieCore
import CCurl
import Logging
import NIOCore
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
/// Transfers and lookups block, so they run on the resolver's own `NIOThreadPool`s, never on the
/// Swift concurrency pool: one (`threads`) for the tenants' own calls (fetches, and the checks
/// of the endpoints they connect to), one (`strangerCheckThreads`) for the endpoints strangers
/// name in Requests, so a name server that never answers a stranger's name delays only other
/// strangers. Each pool takes a bounded number of calls at once (more are refused `busy` at
/// once), and a check waits at most `connectTimeout`, time in the queue included. Call
/// `shutdown()` before dropping the resolver.
public final class URLResolver: URLFetcher {
    public let configuration: Configuration
    let policy: AddressPolicy
    private let logger: Logger
    /// The tenants' calls: fetches and their destination checks.
    private let calls: Lane
    /// Strangers' endpoints (`checkStrangerDestination`).
    private let strangers: Lane
    private let probe: Probe

    /// What a destination check runs on its lane's thread: resolves `url` and judges its
    /// addresses into the transfer within `timeout`, opening no socket (`curlProbe`).
    typealias Probe = @Sendable (_ url: String, _ transfer: CurlTransfer, _ timeout: Duration) -> Void

    /// A thread pool and how many calls it holds at most (running or waiting).
    private final class Lane: Sendable {
        let threads: NIOThreadPool
        let maxPending: Int
        let pending = Atomic<Int>(0)

        init(threads: Int, maxPending: Int) {
            self.threads = NIOThreadPool(numberOfThreads: max(1, threads))
            self.maxPending = max(1, maxPending)
            self.threads.start()
        }

        func enter() -> Bool {
            guard pending.add(1, ordering: .relaxed).newValue <= maxPending else {
                pending.subtract(1, ordering: .relaxed)
                return false
            }
            return true
        }

        func leave() { pending.subtract(1, ordering: .relaxed) }
    }

    public convenience init(configuration: Configuration = Configuration(), logger: Logger) {
        self.init(
            configuration: configuration,
            policy: AddressPolicy(
                allowPrivateAddresses: configuration.allowPrivateAddresses, allowedNetworks: configuration.allowedNetworks,
                allowedNetworksSetting: configuration.allowedNetworksSetting),
            logger: logger)
    }

    /// With an explicit address policy (tests: one local server allowed, all else refused), and
    /// for tests a name server of their own: `lookup` stands in for the whole resolution of a
    /// destination check (called with the URL on the lane's thread; it may block, as a name
    /// server that never answers does; nothing is judged).
    package init(
        configuration: Configuration, policy: AddressPolicy, logger: Logger, lookup: (@Sendable (String) -> Void)? = nil
    ) {
        self.configuration = configuration
        self.policy = policy
        self.logger = logger
        self.calls = Lane(threads: configuration.threads, maxPending: configuration.maxPendingFetches)
        self.strangers = Lane(threads: configuration.strangerCheckThreads, maxPending: configuration.maxPendingStrangerChecks)
        if let lookup {
            self.probe = { url, _, _ in lookup(url) }
        } else {
            self.probe = Self.curlProbe
        }
    }

    /// Stops the threads after running transfers end (each is bounded by `totalTimeout`).
    public func shutdown() async {
        try? await calls.threads.shutdownGracefully()
        try? await strangers.threads.shutdownGracefully()
    }

    public func fetch(_ request: URLFetchRequest) async throws -> FetchedURL {
        try Self.checkFetchable(request.url, maxBytes: configuration.maxURLBytes)
        guard calls.enter() else { throw URLFetchError(.busy, "too many URL fetches are in progress") }
        defer { calls.leave() }

        // Time spent waiting for a thread counts: the caller waits at most `totalTimeout`.
        let deadline = ContinuousClock.now + configuration.totalTimeout
        let transfer = CurlTransfer(policy: policy, maxBodyBytes: configuration.maxBodyBytes)
        let configuration = self.configuration
        let logger = self.logger
        do {
            return try await withTaskCancellationHandler {
                try await calls.threads.runIfActive {
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
    /// callback), but no socket is opened. A name that does not resolve, or resolves too slowly
    /// (`connectTimeout`, time waiting for a thread included), is not refused: that may pass,
    /// and delivery retries it (its own connect is judged by the same policy).
    ///
    /// A host written as a dotted-decimal IPv4 address has nothing to resolve: it is judged here,
    /// without a thread switch and a curl handle (every other spelling goes to curl, as before).
    public func checkDestination(_ url: String) async throws {
        try await check(url, on: calls)
    }

    public func checkStrangerDestination(_ url: String) async throws {
        try await check(url, on: strangers)
    }

    private func check(_ url: String, on lane: Lane) async throws {
        try Self.checkFetchable(url, maxBytes: configuration.maxURLBytes)
        if let address = Self.dottedIPv4Host(url) {
            guard policy.permits(address) else {
                throw URLFetchError(
                    .forbiddenAddress, "the endpoint \(url) is not a public address: \(policy.refusalHint)",
                    details: "refused [\(CurlTransfer.text(address))]")
            }
            return
        }
        guard lane.enter() else {
            throw URLFetchError(.busy, "too many endpoint checks are in progress; try again later", details: url)
        }
        let transfer = CurlTransfer(policy: policy, maxBodyBytes: 0, probeOnly: true)
        let deadline = ContinuousClock.now + configuration.connectTimeout
        let probe = self.probe
        // The lane counts the check until its thread is done with it; the caller waits until
        // the deadline at most (a blocked lookup keeps its thread, not its caller).
        let done = Once()
        let ended: Bool = await withCheckedContinuation { continuation in
            done.set(continuation)
            let timer = MultiThreadedEventLoopGroup.singleton.any().scheduleTask(
                in: .nanoseconds(Int64(Self.milliseconds(configuration.connectTimeout)) * 1_000_000 + 50_000_000)
            ) { done.resume(false) }
            lane.threads.submit { state in
                defer { lane.leave() }
                let remaining = ContinuousClock.now.duration(to: deadline)
                if case .active = state, remaining > .zero {
                    probe(url, transfer, remaining)
                }
                timer.cancel()
                done.resume(true)
            }
        }
        guard ended else {
            logger.debug("endpoint check did not end in time", metadata: ["url": "\(url)"])
            return
        }
        if transfer.refusedByPolicy {
            throw URLFetchError(
                .forbiddenAddress, "the endpoint \(url) is not a public address: \(policy.refusalHint)",
                details: "refused \(transfer.refusedAddresses)")
        }
    }

    /// Resumes a continuation once, whichever of its resumers comes first.
    private final class Once: Sendable {
        private let continuation = Mutex<CheckedContinuation<Bool, Never>?>(nil)
        func set(_ value: CheckedContinuation<Bool, Never>) { continuation.withLock { $0 = value } }
        func resume(_ value: Bool) { continuation.withLock { $0.take() }?.resume(returning: value) }
    }

    /// Resolves `url` with libcurl and judges every address in the transfer's policy callback,
    /// connecting nowhere.
    static let curlProbe: Probe = { url, transfer, timeout in
        do {
            let easy = try CurlEasy()
            try easy.set(CURLOPT_NOSIGNAL, true)
            try easy.set(CURLOPT_PROTOCOLS_STR, "http,https")
            try easy.set(CURLOPT_PROXY, "")
            try easy.set(CURLOPT_CONNECT_ONLY, true)
            try easy.set(CURLOPT_URL, url)
            try easy.set(CURLOPT_CONNECTTIMEOUT_MS, max(1, milliseconds(timeout)))
            try transfer.install(on: easy)
            _ = easy.perform()
        } catch {
            // No handle: nothing judged; delivery will say what happens.
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
        if let trusted = configuration.trustedCertificates { try easy.set(CURLOPT_CAINFO, trusted) }
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
