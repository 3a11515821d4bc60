import AerieClient
import AerieCore
import AerieCrypto
import AerieStore
import AerieTesting
import Foundation
import Testing

/// The inbound DIDComm endpoint and the outbox, through a live server.
@Suite(.timeLimit(.minutes(10))) struct DIDCommEndpointTests {
    static func post(_ body: [UInt8], to port: Int, method: String = "POST") async throws -> Int {
        try await LoopbackHTTP.request(
            method, port: port, path: "/", body: method == "POST" ? body : nil,
            contentType: method == "POST" ? "application/didcomm-envelope-enc" : nil, timeout: 10
        ).status
    }

    /// An invitation whose endpoint refuses connections (a port bound and closed again).
    static func deadInvitation(id: String = UUID().uuidString) throws -> JSONValue {
        let key = try Ed25519KeyPair(seed: Random.bytes(32))
        return [
            "@type": "https://didcomm.org/connections/1.0/invitation", "@id": .string(id), "label": "Nobody",
            "recipientKeys": .array([.string(key.verkeyBase58)]), "serviceEndpoint": "http://127.0.0.1:9/",
        ]
    }

    static func mailboxCount(_ server: LiveServer, tenant: TenantID) async throws -> Int {
        let runtime = server.database.runtime(maxConnections: 1)
        defer { Task { await runtime.shutdown() } }
        return try await runtime.withSession(tenant: tenant) { session in
            try session.query("SELECT count(*) FROM aerie.mailbox").int(0, 0) ?? -1
        }
    }

    @Test func refusesWhatIsNotAMessageForUs() async throws {
        try await LiveServer.with { server in
            #expect(try await Self.post(Array("not json".utf8), to: server.didcommPort) == 400)
            #expect(try await Self.post([], to: server.didcommPort, method: "GET") == 405)
            #expect(try await Self.post([UInt8](repeating: 0x7B, count: (1 << 20) + 1), to: server.didcommPort) == 413)
            let stranger = try Ed25519KeyPair(seed: Random.bytes(32))
            let envelope = try DIDCommEnvelope.pack(Array(#"{"@type":"x","@id":"1"}"#.utf8), to: [stranger.verkeyBase58], from: nil)
            #expect(try await Self.post(envelope, to: server.didcommPort) == 400)
        }
    }

    @Test func storesAMessageForATenantKeyOnceAndRefusesUnknownTypes() async throws {
        try await LiveServer.with(server: { $0.outbound.allowPrivateURLs = true }) { server in
            let (alice, aliceID) = try await server.tenantClient(label: "alice")
            let (bob, bobID) = try await server.tenantClient(label: "bob")
            defer { Task { await alice.close(); await bob.close() } }
            let peer = try await TestPeer.connect(alice)
            let pwVerkey = peer.pwVerkey
            let sender = peer.key
            let ping = #"{"@type":"https://didcomm.org/trust_ping/1.0/ping","@id":"ping-1","response_requested":false}"#
            let envelope = try DIDCommEnvelope.pack(Array(ping.utf8), to: [pwVerkey], from: sender)
            #expect(try await Self.post(envelope, to: server.didcommPort) == 202)
            #expect(try await Self.post(envelope, to: server.didcommPort) == 202)
            #expect(try await Self.mailboxCount(server, tenant: aliceID) == 1)
            #expect(try await Self.mailboxCount(server, tenant: bobID) == 0)

            let unknown = try DIDCommEnvelope.pack(
                Array(#"{"@type":"https://didcomm.org/unknown/1.0/thing","@id":"u-1"}"#.utf8), to: [pwVerkey], from: sender)
            #expect(try await Self.post(unknown, to: server.didcommPort) == 400)
            #expect(try await Self.mailboxCount(server, tenant: aliceID) == 1)

            // Bob cannot see Alice's connection.
            do {
                _ = try await bob.call("connections.get", params: ["connectionId": .string(peer.connectionId)])
                Issue.record("expected not_found")
            } catch let error as AerieClientError {
                #expect(error.code == -32004)
            }
        }
    }

    @Test func undeliverableRequestFailsTheConnection() async throws {
        try await LiveServer.with(server: {
            $0.outbound.allowPrivateURLs = true
            $0.delivery.horizon = .milliseconds(300)
            $0.delivery.backoff = .milliseconds(10)
            $0.delivery.pollInterval = .milliseconds(100)
        }) { server in
            let (alice, _) = try await server.tenantClient(label: "alice")
            defer { Task { await alice.close() } }
            let created = try await alice.call("connections.createWithInvite", params: ["invitation": try Self.deadInvitation()])
            let id = try #require(created["connectionId"]?.stringValue)
            #expect(try await alice.call("connections.connect", params: ["connectionId": .string(id)])["state"] == 2)
            var state: JSONValue = .null
            for _ in 0..<100 {
                state = try await alice.call("connections.get", params: ["connectionId": .string(id)])
                if state["stateName"] == "failed" { break }
                try await Task.sleep(for: .milliseconds(100))
            }
            #expect(state["stateName"] == "failed", "\(state)")
            #expect(state["failureReason"]?.stringValue?.contains("delivery failed after") == true, "\(state)")
            // Connecting again is a conflict, not a second request.
            do {
                _ = try await alice.call("connections.connect", params: ["connectionId": .string(id)])
                Issue.record("expected conflict")
            } catch let error as AerieClientError {
                #expect(error.code == -32009)
            }
        }
    }

    @Test func problemReportFailsTheConnectionWithItsReason() async throws {
        try await LiveServer.with(server: { $0.outbound.allowPrivateURLs = true }) { server in
            let (alice, _) = try await server.tenantClient(label: "alice")
            defer { Task { await alice.close() } }
            let invitation = try Self.deadInvitation(id: "inv-problem")
            let created = try await alice.call("connections.createWithInvite", params: ["invitation": invitation])
            let id = try #require(created["connectionId"]?.stringValue)
            #expect(try await alice.call("connections.inviteDetails", params: ["connectionId": .string(id)]) == invitation)
            _ = try await alice.call("connections.connect", params: ["connectionId": .string(id)])
            let report: JSONValue = [
                "@type": "did:sov:BzCbsNYhMrjHiqZDTUASHg;spec/connections/1.0/problem_report", "@id": "p-1",
                "problem-code": "request_not_accepted", "explain": "we do not talk to strangers",
            ]
            let failed = try await alice.call(
                "connections.updateStateWithMessage",
                params: ["connectionId": .string(id), "message": ["decryptedPayload": .string(report.jsonString)]])
            #expect(failed["stateName"] == "failed")
            #expect(failed["state"] == 0)
            #expect(failed["failureReason"] == "we do not talk to strangers")
        }
    }

    @Test func serializeAndDeserialize() async throws {
        try await LiveServer.with(server: { $0.outbound.allowPrivateURLs = true; $0.delivery.enabled = false }) { server in
            let (alice, _) = try await server.tenantClient(label: "alice")
            let (bob, _) = try await server.tenantClient(label: "bob")
            defer { Task { await alice.close(); await bob.close() } }
            let created = try await alice.call("connections.createWithInvite", params: ["invitation": try Self.deadInvitation()])
            let fresh = try await alice.call("connections.serialize", params: ["connectionId": created["connectionId"]!])
            let id = try #require(created["connectionId"]?.stringValue)
            _ = try await alice.call("connections.connect", params: ["connectionId": .string(id)])
            let connected = try await alice.call("connections.serialize", params: ["connectionId": .string(id)])
            #expect(connected["version"] == 1)
            #expect(connected["connection"]?["state"] == "requested")

            // Into the same tenant: the stored one.
            let same = try await alice.call("connections.deserialize", params: ["serialized": connected])
            #expect(same["existing"] == true && same["connectionId"]?.stringValue == id)
            // Into another tenant: its wallet lacks the pairwise key.
            do {
                _ = try await bob.call("connections.deserialize", params: ["serialized": connected])
                Issue.record("expected invalid_params")
            } catch let error as AerieClientError {
                #expect(error.code == -32602)
            }
            // A connection without a key yet moves over.
            let imported = try await bob.call("connections.deserialize", params: ["serialized": fresh])
            #expect(imported["state"] == 1 && imported["connectionId"]?.stringValue == id)
            #expect(try await bob.call("connections.get", params: ["connectionId": .string(id)])["state"] == 1)
        }
    }

    @Test func proprietaryInvitationsCannotBeConnected() async throws {
        try await LiveServer.with { server in
            let (alice, _) = try await server.tenantClient(label: "alice")
            defer { Task { await alice.close() } }
            let invitation: JSONValue = [
                "connReqId": "c1", "targetName": "Acme", "statusCode": "MS-102",
                "senderDetail": [
                    "name": "Acme", "agentKeyDlgProof": ["agentDID": "A", "agentDelegatedKey": "B", "signature": "c"],
                    "DID": "KC6NKcpXcpVnpjL8uKH3tV", "verKey": "Av4ZDAKgpniTnxLukLQFZ2DbdNqPguZmLTPGsLvCsSv9",
                ],
                "senderAgencyDetail": [
                    "DID": "BDSmVkzxRYGE4HKyMKxd1H", "verKey": "6yUatReYWNSUfEtC2ABgRXmmLaxCyQqsjLwv2BomxsxD",
                    "endpoint": "http://vas.evernym.com:80/agency/msg",
                ],
            ]
            let created = try await alice.call("connections.createWithInvite", params: ["invitation": invitation])
            let id = try #require(created["connectionId"]?.stringValue)
            #expect(created["invitationKind"] == "proprietary")
            do {
                _ = try await alice.call("connections.connect", params: ["connectionId": .string(id)])
                Issue.record("expected unsupported_invitation")
            } catch let error as AerieClientError {
                #expect(error.code == -32011)
            }
            // connections.accept refuses it before storing anything.
            let (bob, _) = try await server.tenantClient(label: "bob")
            defer { Task { await bob.close() } }
            await expectCode("unsupported_invitation") {
                try await bob.call("connections.accept", params: ["invitation": invitation])
            }
            #expect(try await bob.call("connections.list", params: [:])["connections"]?.arrayValue?.count == 0)
        }
    }
}
