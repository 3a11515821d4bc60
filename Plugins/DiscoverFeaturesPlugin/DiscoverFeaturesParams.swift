import AerieCore
import Foundation

/// What `connections.discoverFeatures` answers.
public struct DiscoveredFeatures: Encodable, Sendable, Hashable {
    public var connectionId: String
    public var version: String
    /// Protocol URIs the peer disclosed (`https://didcomm.org/trust_ping/1.0`), as it wrote them.
    public var protocols: [String]
    /// Goal codes the peer disclosed (2.0 only).
    public var goalCodes: [String]
    /// Our query among the connection's sent messages.
    public var uid: String
    /// The peer's answer in the mailbox.
    public var responseUid: String
}

struct DiscoverFeaturesParams: Decodable, Sendable, DocumentedParams {
    static let defaultTimeout = 10
    static let maxTimeout = 60

    var connectionId: String
    var query: String?
    var version: String?
    var timeoutSeconds: Int?

    static let documentation = [
        ParamDoc("connectionId", "string", "an established connection (state 4 accepted or 5 reused)"),
        ParamDoc(
            "query", "string", required: false,
            "what to ask for, `*` matching any run of characters (default `*`; e.g. `https://didcomm.org/*`), 1 to 256 bytes"),
        ParamDoc("version", "string", required: false, "discover features `1.0` or `2.0` (default `2.0`)"),
        ParamDoc("timeoutSeconds", "integer", required: false, "how long to wait for the answer, 1...60 (10); then timeout"),
    ]

    func validated() throws -> (id: UUID, query: String, version: FeatureDiscovery.Version, timeout: Duration) {
        guard let id = UUID(text: connectionId) else {
            throw AerieError.invalidParams("connectionId must be a connection id (UUID)", field: "connectionId")
        }
        let match = try FeatureDiscovery.checkedMatch(query ?? "*", field: "query")
        guard let version = FeatureDiscovery.Version(rawValue: version ?? FeatureDiscovery.Version.v2.rawValue) else {
            throw AerieError.invalidParams("version must be 1.0 or 2.0", field: "version")
        }
        let seconds = timeoutSeconds ?? Self.defaultTimeout
        guard (1...Self.maxTimeout).contains(seconds) else {
            throw AerieError.invalidParams("timeoutSeconds must be between 1 and \(Self.maxTimeout)", field: "timeoutSeconds")
        }
        return (id, match, version, .seconds(seconds))
    }
}
