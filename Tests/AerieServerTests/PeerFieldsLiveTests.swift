import AerieClient
import AerieCore
import AerieCrypto
import AerieTesting
import ConnectionsPlugin
import Foundation
import Testing

/// A stranger's Request through the real server: a field over `PeerFieldLimits` or a DID that is
/// not its key's is refused (400; the endpoint answers every refusal alike, the reason goes to the
/// log and is checked by `PeerFieldLimitsTests`), nothing is stored, and nothing shows the claimed
/// DID; a genuine Request to the same invitation still makes a connection.
@Suite(.timeLimit(.minutes(10))) struct PeerFieldsLiveTests {
    /// The ledger DID an impersonator claims.
    static let government = "did:sov:WRfXPg8dantKVubE3HX8pw"

    static func post(_ body: [UInt8], to port: Int) async throws -> Int {
        try await LoopbackHTTP.request(
            "POST", port: port, path: "/", body: body, contentType: "application/didcomm-envelope-enc", timeout: 30
        ).status
    }

    /// Every connection of `client` (the invitations included) as JSON text.
    static func listed(_ client: AerieClient) async throws -> (count: Int, text: String) {
        let list = try await client.call("connections.list")
        return (list["connections"]?.arrayValue?.count ?? -1, String(decoding: list.serialized(), as: UTF8.self))
    }

    @Test func aConnectionsRequestWithA700000CharacterDIDIsRefusedAndNothingStored() async throws {
        let inbox = try await PeerInbox()
        defer { Task { await inbox.stop() } }
        try await LiveServer.with(server: {
            $0.outbound.allowPrivateURLs = true
            $0.didcomm.maxBodyBytes = 4 << 20
        }) { server in
            let (alice, aliceID) = try await server.tenantClient(label: "alice")
            let (bob, _) = try await server.tenantClient(label: "bob")
            defer { Task { await alice.close(); await bob.close() } }
            let created = try await alice.call("connections.createInvitation", params: ["multiUse": true])
            let invitationKey = try InviterTests.invitationKey(created)
            let invitationId = try #require(created["invitation"]?["@id"]?.stringValue)
            let invitee = InviterTests.Invitee(key: inbox.key, endpoint: inbox.url)
            let before = try await DIDCommEndpointTests.mailboxCount(server, tenant: aliceID)

            guard case .object(var request) = invitee.request(invitationId: invitationId),
                case .object(var connection)? = request["connection"]
            else { Issue.record("request shape"); return }
            let huge = String(repeating: "A", count: 700_000)
            connection["DID"] = .string(huge)
            request["connection"] = .object(connection)
            #expect(try await Self.post(try invitee.pack(.object(request), to: invitationKey), to: server.didcommPort) == 400)

            #expect(try await DIDCommEndpointTests.mailboxCount(server, tenant: aliceID) == before)
            let (count, text) = try await Self.listed(alice)
            #expect(count == 1, "only the invitation")
            #expect(!text.contains("AAAAAAAAAAAAAAAA"))
            #expect(text.utf8.count < 4096)
            #expect(try await bob.call("connections.list")["connections"]?.arrayValue?.isEmpty == true)

            // The same invitee, within bounds, is answered.
            let genuine = invitee.request(invitationId: invitationId)
            #expect(try await Self.post(try invitee.pack(genuine, to: invitationKey), to: server.didcommPort) == 202)
            #expect(try await inbox.wait { $0["@type"]?.stringValue == "https://didcomm.org/connections/1.0/response" } != nil)
            #expect(try await Self.listed(alice).count == 2)
        }
    }

    /// The impersonation: a didexchange 1.1 and a 1.0 Request claiming a ledger DID with a
    /// `did_doc~attach` naming (and signed by) the attacker's own key, to an invitation offering
    /// both, authcrypted by that key.
    @Test func aDIDExchangeRequestClaimingAnotherDIDIsRefusedAndNothingShowsIt() async throws {
        let inbox = try await PeerInbox()
        defer { Task { await inbox.stop() } }
        try await LiveServer.with(server: { $0.outbound.allowPrivateURLs = true }) { server in
            let (alice, aliceID) = try await server.tenantClient(label: "alice")
            defer { Task { await alice.close() } }
            let created = try await alice.call(
                "outOfBand.createInvitation",
                params: [
                    "multiUse": true,
                    "handshakeProtocols": ["https://didcomm.org/didexchange/1.1", "https://didcomm.org/didexchange/1.0"],
                ])
            let invitationId = try #require(created["invitation"]?["@id"]?.stringValue)
            let recipient = try #require(
                created["invitation"]?["services"]?.arrayValue?.first?["recipientKeys"]?.arrayValue?.first?.stringValue)
            let invitationKey = Base58.encode(try DIDKey.verkey(from: recipient))
            let attacker = InviterTests.Invitee(key: inbox.key, endpoint: inbox.url)
            let claimed = String(Self.government.dropFirst("did:sov:".count))
            let doc = ConnectionMessages.didDoc(did: claimed, verkey: attacker.verkey, endpoint: inbox.url)
            let attach = try await SignedAttachment.make(doc.serialized(), mimeType: "application/json", verkey: attacker.verkey) {
                attacker.key.sign($0)
            }
            let before = try await DIDCommEndpointTests.mailboxCount(server, tenant: aliceID)
            for version in ["1.1", "1.0"] {
                let id = UUID().uuidString.lowercased()
                let request: JSONValue = [
                    "@type": .string("https://didcomm.org/didexchange/\(version)/request"), "@id": .string(id),
                    "label": "Government of Example", "did": .string(Self.government), "did_doc~attach": attach,
                    "~thread": ["thid": .string(id), "pthid": .string(invitationId)],
                ]
                #expect(
                    try await Self.post(try attacker.pack(request, to: invitationKey), to: server.didcommPort) == 400,
                    "didexchange \(version)")
            }
            #expect(try await DIDCommEndpointTests.mailboxCount(server, tenant: aliceID) == before)
            let (count, text) = try await Self.listed(alice)
            #expect(count == 1, "only the invitation")
            #expect(!text.contains(claimed) && !text.contains("Government of Example"))
            #expect(try await alice.call("connections.get", params: ["connectionId": created["connectionId"]!])["state"] == 1)

            // The attacker's own pairwise DID, derived from its key, is taken: the refusal was the DID.
            let id = UUID().uuidString.lowercased()
            let ownDoc = ConnectionMessages.didDoc(did: attacker.did, verkey: attacker.verkey, endpoint: inbox.url)
            let honest: JSONValue = [
                "@type": "https://didcomm.org/didexchange/1.0/request", "@id": .string(id), "label": "Mallory",
                "did": .string(attacker.did),
                "did_doc~attach": try await SignedAttachment.make(
                    ownDoc.serialized(), mimeType: "application/json", verkey: attacker.verkey) { attacker.key.sign($0) },
                "~thread": ["thid": .string(id), "pthid": .string(invitationId)],
            ]
            #expect(try await Self.post(try attacker.pack(honest, to: invitationKey), to: server.didcommPort) == 202)
            #expect(try await inbox.wait { $0["@type"]?.stringValue == "https://didcomm.org/didexchange/1.0/response" } != nil)
            let made = try await alice.call("connections.list", params: ["state": 3])["connections"]?.arrayValue ?? []
            #expect(made.map { $0["theirDid"]?.stringValue } == [attacker.did])
        }
    }

    /// As the invitee: a didexchange Response signed by the invitation key whose DID is a ledger
    /// DID of another key fails the connection with the reason; nothing shows that DID.
    @Test func aResponseClaimingAnotherDIDFailsTheConnection() async throws {
        try await LiveServer.with(server: { $0.delivery.enabled = false }) { server in
            let inviter = Ed25519KeyPair.generate()
            let theirKey = Ed25519KeyPair.generate()
            let (tenant, _) = try await server.tenantClient(label: "frank")
            defer { Task { await tenant.close() } }
            let created = try await tenant.call(
                "connections.accept", params: ["invitation": try HandMadeHandshake.invitation(inviter: inviter, id: "inv-1")])
            let id = try #require(created["connectionId"]?.stringValue)
            let claimed = String(Self.government.dropFirst("did:sov:".count))
            let doc = ConnectionMessages.didDoc(did: claimed, verkey: theirKey.verkeyBase58, endpoint: "http://127.0.0.1:9")
            let response: JSONValue = [
                "@type": "https://didcomm.org/didexchange/1.1/response", "@id": .string(UUID().uuidString),
                "did": .string(Self.government),
                "did_doc~attach": try await SignedAttachment.make(
                    doc.serialized(), mimeType: "application/json", verkey: inviter.verkeyBase58) { inviter.sign($0) },
                "~thread": ["pthid": "inv-1"],
            ]
            let failed = try await tenant.call(
                "connections.updateStateWithMessage", params: ["connectionId": .string(id), "message": response])
            #expect(failed["stateName"] == "failed", "\(failed)")
            #expect(
                failed["failureReason"]?.stringValue?.contains(
                    "the DID \(claimed) is not derived from the key the response names and cannot be resolved here") == true,
                "\(failed)")
            #expect(failed["theirDid"] == nil)
            // The DID appears only in the failure reason, never as the peer's.
            let listed = try await tenant.call("connections.list")["connections"]?.arrayValue ?? []
            #expect(listed.count == 1 && listed.allSatisfy { $0["theirDid"] == nil }, "\(listed)")
        }
    }
}
