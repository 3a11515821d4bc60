import AerieClient
import AerieCore
import AerieTesting
import Foundation
import Testing

/// The connections plugin as a backend reaches it: through the server, behind a tenant session.
@Suite(.timeLimit(.minutes(10))) struct ConnectionsWiringTests {
    static let invitation: JSONValue = [
        "@type": "https://didcomm.org/connections/1.0/invitation",
        "@id": "6f4a8d0e-8f0e-4f1e-9a53-2f2d8b9c3a11",
        "label": "Faber",
        "recipientKeys": ["H3C2AVvLMv6gmMNam3uVAjZpfkcJCwDwnZn6z3wXmqPV"],
        "serviceEndpoint": "https://faber.example/agent",
    ]

    @Test func parseInvitationFromACiURL() async throws {
        try await LiveServer.with { server in
            let (tenant, _) = try await server.tenantClient(label: "alice")
            defer { Task { await tenant.close() } }
            let encoded = Data(Self.invitation.serialized()).base64EncodedString()
            let url = "https://faber.example/invite?c_i=" + (encoded.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? encoded)
            let summary = try await tenant.call("connections.parseInvitation", params: ["url": .string(url)])
            #expect(summary["kind"] == "aries")
            #expect(summary["label"] == "Faber")
            #expect(summary["recipientKeys"] == ["H3C2AVvLMv6gmMNam3uVAjZpfkcJCwDwnZn6z3wXmqPV"])
        }
    }

    @Test func privateURLsAreRefusedByDefault() async throws {
        try await LiveServer.with { server in
            let (tenant, _) = try await server.tenantClient(label: "alice")
            defer { Task { await tenant.close() } }
            await expectCode("invalid_invitation") {
                try await tenant.call("connections.resolveUrl", params: ["url": .string("http://127.0.0.1:\(server.port)/x")])
            }
        }
    }

    @Test func disabledPluginLeavesItsMethodsUnknown() async throws {
        try await LiveServer.with(plugins: ["system"]) { server in
            let (tenant, _) = try await server.tenantClient(label: "alice")
            defer { Task { await tenant.close() } }
            do {
                _ = try await tenant.call("connections.parseInvitation", params: ["invitation": Self.invitation])
                Issue.record("expected -32601")
            } catch let error as AerieClientError {
                #expect(error.code == -32601)
            }
        }
    }
}
