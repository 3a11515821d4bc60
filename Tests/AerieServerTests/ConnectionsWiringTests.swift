import AerieClient
import AerieCore
import AerieTesting
import AerieServer
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

/// `AERIE_PLUGINS` selects from the registry: a plugin not selected is not built, and a
/// selection that cannot work is refused at start with the fix named.
@Suite(.timeLimit(.minutes(10))) struct PluginSelectionTests {
    @Test func onlySelectedPluginsServeMethods() async throws {
        try await LiveServer.with(plugins: ["messages"]) { server in
            let (tenant, _) = try await server.tenantClient(label: "alice")
            defer { Task { await tenant.close() } }
            let discovered = try await tenant.call("rpc.discover")
            let methods = Set(discovered["methods"]?.arrayValue?.compactMap { $0["name"]?.stringValue } ?? [])
            #expect(methods.contains("messages.download"))
            #expect(!methods.contains { $0.hasPrefix("outOfBand.") || $0.hasPrefix("connections.") })
        }
    }

    @Test func selectionsThatCannotWorkAreRefusedAtStart() async throws {
        for (plugins, expected) in [
            (["out-of-band"], "'out-of-band', which is built on 'connections': add 'connections'"),
            (["delete", "messages"], "'delete', which is built on 'connections': add 'connections'"),
            (["discover-features"], "'discover-features', which is built on 'connections': add 'connections'"),
            (["connections", "mailbox"], "unknown plugin 'mailbox'; available: connections, issue-credential, present-proof, out-of-band, delete, messages, discover-features"),
        ] {
            do {
                try await LiveServer.with(plugins: plugins) { _ in Issue.record("\(plugins) started") }
            } catch let error as AerieConfiguration.Invalid {
                #expect(error.description.contains(expected), Comment(rawValue: error.description))
            }
        }
    }
}
