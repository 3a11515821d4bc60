import AerieCore
import CCurl
import Logging
import NIOPosix

/// POSTs packed DIDComm envelopes to peers' endpoints with libcurl, on its own threads (never
/// the Swift concurrency pool), with the same address policy as URL fetching. Easy handles are
/// kept between deliveries (`CurlHandleCache`), so deliveries to one endpoint reuse its
/// connection (HTTP keep-alive).
public final class HTTPDelivery: Sendable {
    public struct Configuration: Sendable {
        public var allowPrivateAddresses: Bool
        /// Non-public networks allowed all the same (`AERIE_ALLOWED_NETWORKS` for peers,
        /// `AERIE_WEBHOOK_ALLOWED_NETWORKS` for webhook receivers).
        public var allowedNetworks: [IPNetwork]
        /// The setting that fills `allowedNetworks`, named in refusals.
        public var allowedNetworksSetting: String
        public var connectTimeout: Duration
        public var totalTimeout: Duration
        /// Largest answer body kept (a return-routed reply).
        public var maxResponseBytes: Int
        public var threads: Int
        public var userAgent: String
        /// A PEM file of the certificate authorities HTTPS endpoints are verified against
        /// (`AERIE_TLS_CA_FILE`), instead of the system's; nil: the system's.
        public var trustedCertificates: String?

        public init(
            allowPrivateAddresses: Bool = false, allowedNetworks: [IPNetwork] = [],
            allowedNetworksSetting: String = "AERIE_ALLOWED_NETWORKS", connectTimeout: Duration = .seconds(5), totalTimeout: Duration = .seconds(15),
            maxResponseBytes: Int = 1 << 20, threads: Int = 2, userAgent: String = "aerie", trustedCertificates: String? = nil
        ) {
            self.allowPrivateAddresses = allowPrivateAddresses
            self.allowedNetworks = allowedNetworks
            self.allowedNetworksSetting = allowedNetworksSetting
            self.connectTimeout = connectTimeout
            self.totalTimeout = totalTimeout
            self.maxResponseBytes = maxResponseBytes
            self.threads = threads
            self.userAgent = userAgent
            self.trustedCertificates = trustedCertificates
        }
    }

    /// What the peer answered.
    public struct Response: Sendable, Hashable {
        public var status: Int
        public var contentType: String?
        public var body: [UInt8]
        /// The answer's `Retry-After` (seconds, or an HTTP date as seconds from now), if any.
        public var retryAfter: Duration? = nil
        /// The address the answer came from (`CURLINFO_PRIMARY_IP`).
        public var address: String? = nil
    }

    /// Why a delivery failed; the message is safe to store and show. `permanent` when no retry
    /// can succeed (the endpoint is not an http(s) URL, or the address policy refuses every
    /// address it resolves to): the send fails at once instead of retrying. `timedOut` when
    /// the peer took the whole time limit without answering (a tarpit, or a peer too slow to
    /// serve): the delivery service gives such a destination fewer slots.
    public struct Failure: Error, Sendable, CustomStringConvertible {
        public var message: String
        public var permanent: Bool
        public var timedOut: Bool
        /// The address the transfer connected (or tried to connect) to, if it got that far.
        public var address: String?
        public var description: String { message }

        public init(message: String, permanent: Bool = false, timedOut: Bool = false, address: String? = nil) {
            self.message = message
            self.permanent = permanent
            self.timedOut = timedOut
            self.address = address
        }
    }

    public static let contentType = "application/didcomm-envelope-enc"

    public let configuration: Configuration
    private let policy: AddressPolicy
    private let threads: NIOThreadPool
    private let handles: CurlHandleCache

    public init(configuration: Configuration = Configuration()) {
        self.configuration = configuration
        self.policy = AddressPolicy(
            allowPrivateAddresses: configuration.allowPrivateAddresses, allowedNetworks: configuration.allowedNetworks,
            allowedNetworksSetting: configuration.allowedNetworksSetting)
        self.threads = NIOThreadPool(numberOfThreads: max(1, configuration.threads))
        self.handles = CurlHandleCache(capacity: max(1, configuration.threads))
        threads.start()
    }

    public func shutdown() async {
        try? await threads.shutdownGracefully()
    }

    /// POSTs `envelope` to `endpoint` (as `contentType`, with `headers` added: full header
    /// lines). Throws `Failure` when no HTTP answer came; any HTTP status is returned for the
    /// caller to judge.
    public func post(
        _ envelope: [UInt8], to endpoint: String, contentType: String = HTTPDelivery.contentType, headers: [String] = []
    ) async throws -> Response {
        do {
            try URLResolver.checkFetchable(endpoint, maxBytes: 8 * 1024)
        } catch let error as URLFetchError {
            throw Failure(message: "the endpoint is not usable: \(error.message)", permanent: true)
        }
        let configuration = self.configuration
        let transfer = CurlTransfer(policy: policy, maxBodyBytes: configuration.maxResponseBytes)
        do {
            return try await withTaskCancellationHandler {
                try await threads.runIfActive { [handles] in
                    let easy = try handles.take()
                    defer { handles.giveBack(easy) }
                    return try Self.run(
                        envelope, on: easy, endpoint: endpoint, headers: ["Content-Type: \(contentType)", "Expect:"] + headers,
                        transfer: transfer, configuration: configuration)
                }
            } onCancel: {
                transfer.cancelled.store(true, ordering: .relaxed)
            }
        } catch let failure as Failure {
            throw failure
        } catch let error as CancellationError {
            throw error
        } catch {
            throw Failure(message: "delivery is not available: \(error)")
        }
    }

    private static func run(
        _ envelope: [UInt8], on easy: CurlEasy, endpoint: String, headers: [String], transfer: CurlTransfer,
        configuration: Configuration
    ) throws
        -> Response
    {
        try easy.set(CURLOPT_NOSIGNAL, true)
        try easy.set(CURLOPT_PROTOCOLS_STR, "http,https")
        try easy.set(CURLOPT_FOLLOWLOCATION, false)
        try easy.set(CURLOPT_PROXY, "")
        try easy.set(CURLOPT_URL, endpoint)
        try easy.set(CURLOPT_USERAGENT, configuration.userAgent)
        if let trusted = configuration.trustedCertificates { try easy.set(CURLOPT_CAINFO, trusted) }
        try easy.set(CURLOPT_TIMEOUT_MS, milliseconds(configuration.totalTimeout))
        try easy.set(CURLOPT_CONNECTTIMEOUT_MS, milliseconds(configuration.connectTimeout))
        try easy.set(CURLOPT_MAXFILESIZE_LARGE, largeValue: Int64(configuration.maxResponseBytes))
        try easy.setHeaders(headers)
        try transfer.install(on: easy)
        let code: CURLcode = envelope.withUnsafeBytes { raw in
            do {
                try easy.set(CURLOPT_POST, true)
                try easy.set(CURLOPT_POSTFIELDSIZE_LARGE, largeValue: Int64(raw.count))
                try easy.set(CURLOPT_POSTFIELDS, pointer: UnsafeMutableRawPointer(mutating: raw.baseAddress))
            } catch {
                return CURLE_FAILED_INIT
            }
            return easy.perform()
        }
        guard code == CURLE_OK else {
            switch code {
            case CURLE_ABORTED_BY_CALLBACK where transfer.cancelled.load(ordering: .relaxed):
                throw CancellationError()
            case CURLE_OPERATION_TIMEDOUT:
                let address = easy.info(string: CURLINFO_PRIMARY_IP).flatMap { $0.isEmpty ? nil : $0 }
                throw Failure(message: "the endpoint did not answer in time", timedOut: true, address: address)
            case CURLE_COULDNT_CONNECT where transfer.refusedByPolicy:
                throw Failure(message: "the endpoint \(endpoint) is not a public address: \(transfer.policy.refusalHint)", permanent: true)
            default:
                throw Failure(message: "the endpoint could not be reached: \(CurlEasy.describe(code))")
            }
        }
        // libcurl reads both forms of Retry-After (seconds, or an HTTP date turned into seconds
        // from now); 0 when the answer has none.
        let retryAfter = easy.info(offT: CURLINFO_RETRY_AFTER).flatMap { $0 > 0 ? Duration.seconds($0) : nil }
        return Response(
            status: easy.info(long: CURLINFO_RESPONSE_CODE) ?? 0, contentType: easy.info(string: CURLINFO_CONTENT_TYPE),
            body: transfer.body, retryAfter: retryAfter,
            address: easy.info(string: CURLINFO_PRIMARY_IP).flatMap { $0.isEmpty ? nil : $0 })
    }

    private static func milliseconds(_ duration: Duration) -> Int {
        let (seconds, attoseconds) = duration.components
        return max(1, Int(seconds) * 1000 + Int(attoseconds / 1_000_000_000_000_000))
    }
}
