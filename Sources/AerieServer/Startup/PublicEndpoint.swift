import Synchronization

/// The endpoint peers are told: configured, or `http://<listen host>:<bound port>` once bound.
final class PublicEndpoint: Sendable {
    private let configured: String?
    private let boundValue = Mutex<String?>(nil)

    init(_ configured: String?) { self.configured = configured }

    func bound(host: String, port: Int) {
        let shown = host.contains(":") ? "[\(host)]" : host
        boundValue.withLock { $0 = "http://\(shown):\(port)" }
    }

    var value: String { configured ?? boundValue.withLock { $0 } ?? "http://127.0.0.1:7401" }
}
