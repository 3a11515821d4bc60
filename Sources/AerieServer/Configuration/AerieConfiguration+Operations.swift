import Logging

extension AerieConfiguration {
    /// What the operator sees: logs and the operator endpoint.
    public struct Operations: Sendable {
        /// `AERIE_LOG_LEVEL`: trace, debug, info, notice, warning, error, critical.
        public var logLevel: Logger.Level = .info
        /// `AERIE_LOG_FORMAT`: `text` (default) or `json`, one JSON object per line.
        public var logFormat: LogFormat = .text
        /// `AERIE_METRICS_LISTEN`: the operator endpoint's `HOST:PORT` (/metrics, /healthz,
        /// /readyz), `off` for none. The environment's default is `defaultMetricsListen`; a
        /// configuration made in code (tests, embedders) has none unless it asks.
        public var metricsListen: ListenAddress?
        public static let defaultMetricsListen = ListenAddress(host: "127.0.0.1", port: 7402)

        public init() {}
    }
}
