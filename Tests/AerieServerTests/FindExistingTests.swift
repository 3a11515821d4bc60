import AerieClient
import AerieCore
import AerieTesting
import Foundation
import Testing

/// `connections.findExisting` over JSON-RPC: another invitation from the same inviter (its public
/// DID) finds the stored connection, for its own tenant only.
@Suite(.timeLimit(.minutes(10))) struct FindExistingTests {
    static let publicDid = "did:sov:LjgpST2rjsoxYegQDRm7EL"

    @Test func anotherInvitationWithTheSamePublicDIDFindsTheConnection() async throws {
        try await LiveServer.with(server: { $0.delivery.enabled = false }) { server in
            let (alice, _) = try await server.tenantClient(label: "alice")
            let (bob, _) = try await server.tenantClient(label: "bob")
            defer { Task { await alice.close(); await bob.close() } }
            // A connections/1.0 public-DID invitation, as ACA-Py writes one.
            let first: JSONValue = [
                "@type": "https://didcomm.org/connections/1.0/invitation", "@id": "public-1", "label": "Public Faber",
                "did": .string(Self.publicDid),
            ]
            let created = try await alice.call("connections.createWithInvite", params: ["invitation": first])
            let id = try #require(created["connectionId"]?.stringValue)

            // An out-of-band invitation from the same inviter: another @id, the public DID as its service.
            let later: JSONValue = [
                "@type": "https://didcomm.org/out-of-band/1.0/invitation", "@id": "public-2", "label": "Public Faber",
                "handshake_protocols": ["https://didcomm.org/connections/1.0"], "services": [.string(Self.publicDid)],
            ]
            let found = try await alice.call("connections.findExisting", params: ["invitation": later])
            #expect(found["connectionId"]?.stringValue == id, "\(found)")
            #expect(found["match"] == "publicDid", "\(found)")
            #expect(found["connection"]?["connectionId"]?.stringValue == id)
            #expect(found["connection"]?["state"] == 1)

            // The same invitation matches by @id first.
            #expect(try await alice.call("connections.findExisting", params: ["invitation": first])["match"] == "id")

            // Another public DID finds nothing; nor does another tenant with the same invitation.
            let stranger: JSONValue = [
                "@type": "https://didcomm.org/out-of-band/1.0/invitation", "@id": "public-3", "label": "Someone else",
                "handshake_protocols": ["https://didcomm.org/connections/1.0"], "services": ["did:sov:BzCbsNYhMrjHiqZDTUASHg"],
            ]
            let none = try await alice.call("connections.findExisting", params: ["invitation": stranger])
            #expect(none["connectionId"] == nil && none["match"] == nil, "\(none)")
            let bobs = try await bob.call("connections.findExisting", params: ["invitation": later])
            #expect(bobs["connectionId"] == nil && bobs["match"] == nil, "\(bobs)")
        }
    }
}
