import AerieCore
import AerieCrypto
import Foundation

/// Discover features 1.0 (RFC 0031) and 2.0 (RFC 0557): answers an established connection's peer
/// with the protocols the enabled plugins serve, and `connections.discoverFeatures` asks a peer.
/// Built on the connections plugin, whose waits `connections.discoverFeatures` uses.
public struct DiscoverFeaturesPlugin: AeriePlugin {
    public static let name = "discover-features"

    let handshakes: any ConnectionHandshakes
    let protocols: ServedProtocols

    public init(handshakes: any ConnectionHandshakes, protocols: ServedProtocols) {
        self.handshakes = handshakes
        self.protocols = protocols
    }

    public func register(with router: inout MethodRouter) throws {
        let plugin = self
        try router.register(
            "connections.discoverFeatures",
            summary: "Asks the peer of an established connection which protocols (and, in 2.0, goal codes) it supports "
                + "(discover features 1.0 or 2.0) and waits for its answer: {connectionId, version, protocols, goalCodes, "
                + "uid, responseUid}. The query and the answer are in the connection's messages. timeout after "
                + "timeoutSeconds (1...60, default 10)."
        ) { (params: DiscoverFeaturesParams, tenant: TenantContext) in
            let checked = try params.validated()
            return try await plugin.discover(
                checked.id, match: checked.query, version: checked.version, timeout: checked.timeout, tenant: tenant)
        }
        // Only the connection's peer (senders `.peer`) is answered; answers wake the waiting call.
        for version in [FeatureDiscovery.Version.v1, .v2] {
            try router.registerInbound(version.queryType) { message, tenant in
                try await plugin.answer(message, version: version, tenant: tenant)
            }
            try router.registerInbound(version.answerType) { message, tenant in
                try await plugin.answered(message, tenant: tenant)
            }
        }
    }

    /// Answers the peer's query from the protocols served, through the one send path: the query
    /// is stored and the answer queued in one transaction, so a redelivered query is answered
    /// once. A connection not established gets no answer; the query is stored as any message.
    func answer(_ message: InboundMessage, version: FeatureDiscovery.Version, tenant: TenantContext) async throws {
        guard let connection = message.connection, message.sender == .peer, connection.isEstablished,
            let queryId = message.id
        else { return }
        let queries = try FeatureDiscovery.queries(in: message.body, version: version)
        let served = protocols.all.map { FeatureDiscovery.Feature(.protocol, $0) }
        let answer = FeatureDiscovery.answer(FeatureDiscovery.disclosed(served, matching: queries), to: queryId, version: version)
        let receipt = message.receipt
        _ = try await handshakes.sender.send(answer, on: connection.id, tenant: tenant) { current, tx in
            try receipt?.claim(in: tx, connection: current.id) ?? true
        }
    }

    /// The peer's answer: stored with the connection, then this process's waiting calls are woken
    /// (others find it in the store).
    func answered(_ message: InboundMessage, tenant: TenantContext) async throws {
        guard let connection = message.connection else { return }
        _ = try await tenant.database.transaction { tx in try message.claim(in: tx) }
        handshakes.committed(connection, tenant: tenant)
    }

    /// `connections.discoverFeatures`: sends the query and waits (at most `timeout`) for the
    /// peer's answer, whichever server of the cluster it reaches.
    func discover(
        _ id: UUID, match: String, version: FeatureDiscovery.Version, timeout: Duration, tenant: TenantContext
    ) async throws -> DiscoveredFeatures {
        guard let sent = try await handshakes.sender.send(FeatureDiscovery.query(match, version: version), on: id, tenant: tenant) else {
            throw AerieError.internalError(details: "a query without a condition sent nothing")
        }
        let queryId = sent.messageId
        let reply = try await handshakes.waitFor(id, timeout: timeout, tenant: tenant) {
            try await tenant.database.transaction { tx in
                try tx.mailbox.receivedReply(connectionId: id, threadId: queryId, type: version.answerType)
            }
        }
        guard let reply else {
            throw AerieError(
                .timeout, "the peer did not answer the feature query within \(timeout.components.seconds) s",
                data: [
                    "connectionId": .string(id.lowercasedString), "uid": .string(sent.uid.lowercasedString),
                    "@id": .string(queryId),
                ])
        }
        let features = FeatureDiscovery.features(in: reply.payload, version: version)
        return DiscoveredFeatures(
            connectionId: id.lowercasedString, version: version.rawValue,
            protocols: features.filter { $0.featureType == .protocol }.map(\.id),
            goalCodes: features.filter { $0.featureType == .goalCode }.map(\.id),
            uid: sent.uid.lowercasedString, responseUid: reply.uid.lowercasedString)
    }
}
