import AerieClient
import AerieCore
import AerieCrypto
import AerieTesting
import Foundation
import Testing

/// Aries RFC 0023 (didexchange 1.0 and 1.1) end to end against independent inviters: ACA-Py
/// 1.7.0 and 1.2.7 create out-of-band invitations, Aerie accepts them through JSON-RPC, sends the
/// Request (a did:peer:4 of the pairwise key for 1.1 by default, a did:peer:2 for 1.0 or when
/// asked), verifies the Response's signed attachment against
/// the invitation key, resolves the inviter's DID and sends `complete`, so ACA-Py reaches
/// `completed` too.
///
/// A missing ACA-Py venv fails these tests (./scripts/test installs both).
@Suite(.serialized, .timeLimit(.minutes(10))) struct ACAPyDIDExchangeTests {
    static func withAerieAndACAPy(
        _ version: ACAPyAgent.Version, _ body: (LiveServer, ACAPyAgent) async throws -> Void
    ) async throws {
        let agent = try await ACAPyAgent.start(version: version)
        do {
            try await LiveServer.with(server: { $0.outbound.allowPrivateURLs = true }) { server in
                try await body(server, agent)
            }
        } catch {
            print("ACA-Py \(version.rawValue) log:\n\(agent.log().suffix(4000))")
            await agent.stop()
            throw error
        }
        await agent.stop()
    }

    struct NotCompleted: Error, CustomStringConvertible { var description: String }

    /// Polls ACA-Py's `GET /connections?invitation_msg_id=` (bounded) until the connection made
    /// from the invitation is `completed` (`rfc23_state`; its RFC 0160 `state` reads `active`).
    static func completedConnection(_ agent: ACAPyAgent, invitationId: String, timeout: Duration = .seconds(30))
        async throws -> JSONValue
    {
        let deadline = ContinuousClock.now + timeout
        var last: JSONValue = .null
        while ContinuousClock.now < deadline {
            let found = try await agent.admin("GET", "/connections?invitation_msg_id=\(invitationId)")
            if let record = found["results"]?.arrayValue?.first {
                last = record
                if record["rfc23_state"] == "completed" { return record }
            }
            try await Task.sleep(for: .milliseconds(200))
        }
        throw NotCompleted(description: "ACA-Py's connection for \(invitationId) is not completed: \(last)")
    }

    /// Creates an out-of-band invitation offering `handshakes`, accepts it in Aerie (a new tenant)
    /// with `wait`, and checks both sides: Aerie at state 4 with `expected`, ACA-Py `completed`
    /// with our DID.
    static func exchange(
        _ server: LiveServer, _ agent: ACAPyAgent, offering handshakes: [String], expected: String, tenantLabel: String,
        didMethod: PeerDIDMethod? = nil
    ) async throws {
        let created = try await agent.admin(
            "POST", "/out-of-band/create-invitation",
            body: ["handshake_protocols": .array(handshakes.map { .string($0) }), "use_public_did": false])
        let invitation = try #require(created["invitation"], "\(created)")
        let invitationId = try #require(invitation["@id"]?.stringValue)

        let (tenant, _) = try await server.tenantClient(label: tenantLabel)
        defer { Task { await tenant.close() } }
        var params: JSONValue = ["invitation": invitation, "wait": true, "timeoutSeconds": 30, "label": .string(tenantLabel)]
        if let didMethod, case .object(var fields) = params {
            fields["didMethod"] = .string(didMethod.rawValue)
            params = .object(fields)
        }
        let accepted = try await tenant.call("connections.accept", params: params)
        #expect(accepted["state"] == 4, "\(accepted)")
        #expect(accepted["stateName"] == "accepted")
        #expect(accepted["handshakeProtocol"]?.stringValue == expected)
        let pwDid = try #require(accepted["pwDid"]?.stringValue)
        let method = didMethod ?? (expected == dx11 ? .peer4 : .peer2)
        #expect(PeerDIDMethod(of: pwDid) == method, "\(pwDid)")
        // Ours names a did:peer:4 by its short form once the Request carried the long form.
        #expect(!PeerDID4.isLongForm(pwDid))
        let connectionId = try #require(accepted["connectionId"]?.stringValue)

        let theirs = try await completedConnection(agent, invitationId: invitationId)
        #expect(theirs["rfc23_state"] == "completed", "\(theirs)")
        #expect(theirs["state"] == "active" || theirs["state"] == "completed", "\(theirs)")
        // ACA-Py records a did:peer:4 short once `complete` arrives, long when another message
        // completed the connection first: compared by the short form.
        #expect(theirs["their_did"]?.stringValue.map(PeerDID4.shortForm) == pwDid)
        #expect(theirs["their_label"]?.stringValue == tenantLabel)
        #expect(theirs["connection_protocol"]?.stringValue == String(expected.dropFirst("https://didcomm.org/".count)))
        let theirDid = PeerDID4.shortForm(try #require(theirs["my_did"]?.stringValue))
        let ourView = try await tenant.call("connections.get", params: ["connectionId": .string(connectionId)])
        #expect(ourView["state"] == 4)
        #expect(ourView["handshakeProtocol"]?.stringValue == expected)
        // ACA-Py answers 1.1 in the Request's method (a did:peer:4 in its long form, which it
        // records short) and 1.0 with an unqualified DID.
        let ours = try #require(ourView["theirDid"]?.stringValue)
        let short = PeerDID4.shortForm(ours)
        #expect(short == theirDid || "did:sov:\(ours)" == theirDid || ours == "did:sov:\(theirDid)", "\(ours) vs \(theirDid)")
        if expected.hasSuffix("1.1") { #expect(PeerDIDMethod(of: ours) == method) }
        #expect(ourView["theirEndpoint"]?.stringValue == agent.endpoint)
    }

    static let dx11 = "https://didcomm.org/didexchange/1.1"
    static let dx10 = "https://didcomm.org/didexchange/1.0"
    static let connections = "https://didcomm.org/connections/1.0"

    /// One ACA-Py 1.7.0 inviter: didexchange/1.1; 1.1 listed with connections/1.0 (which 1.7.0
    /// lists but refuses, so didexchange is taken); and didexchange/1.0.
    @Test func acapy17Inviter() async throws {
        try await Self.withAerieAndACAPy(.v1_7_0) { server, agent in
            try await Self.exchange(server, agent, offering: [Self.dx11], expected: Self.dx11, tenantLabel: "Alice")
            try await Self.exchange(server, agent, offering: [Self.dx11, Self.connections], expected: Self.dx11, tenantLabel: "Bob")
            try await Self.exchange(server, agent, offering: [Self.dx10], expected: Self.dx10, tenantLabel: "Carol")
            try await Self.exchange(
                server, agent, offering: [Self.dx11], expected: Self.dx11, tenantLabel: "Frank", didMethod: .peer2)
        }
    }

    /// One ACA-Py 1.2.7 inviter: didexchange/1.0 and 1.1; connections first in the list still
    /// loses to didexchange.
    @Test func acapy127Inviter() async throws {
        try await Self.withAerieAndACAPy(.v1_2_7) { server, agent in
            try await Self.exchange(server, agent, offering: [Self.dx10], expected: Self.dx10, tenantLabel: "Dave")
            try await Self.exchange(server, agent, offering: [Self.connections, Self.dx11], expected: Self.dx11, tenantLabel: "Erin")
            try await Self.exchange(
                server, agent, offering: [Self.dx11], expected: Self.dx11, tenantLabel: "Grace", didMethod: .peer2)
        }
    }
}
