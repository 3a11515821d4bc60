import AerieClient
import AerieCore
import AerieCrypto
import AerieStore
import AerieTesting
import Foundation
import Testing

/// `outOfBand.*` through a live server with invitations written here, for the rows and failures
/// an inviter cannot easily be made to produce; the ACA-Py suite covers the handshakes.
@Suite(.timeLimit(.minutes(10))) struct OutOfBandWiringTests {
    /// An inviter: a key whose private half the test holds, so it can answer as the inviter would.
    struct Inviter {
        let key: Ed25519KeyPair
        init() throws { key = try Ed25519KeyPair(seed: Random.bytes(32)) }

        /// An out-of-band invitation from this inviter; the endpoint refuses connections.
        func invitation(
            id: String = UUID().uuidString, handshake: [String] = [], attachment: JSONValue? = nil,
            services: JSONValue? = nil
        ) -> JSONValue {
            var fields: [String: JSONValue] = [
                "@type": "https://didcomm.org/out-of-band/1.1/invitation", "@id": .string(id), "label": "Inviter",
                "services": services ?? [
                    [
                        "id": "#inline", "type": "did-communication",
                        "recipientKeys": .array([.string(try! DIDKey.keyReference(verkey: key.verkey))]),
                        "serviceEndpoint": "http://127.0.0.1:9/",
                    ]
                ],
            ]
            if !handshake.isEmpty { fields["handshake_protocols"] = .array(handshake.map(JSONValue.string)) }
            if let attachment {
                fields["requests~attach"] = [["@id": "request-0", "mime-type": "application/json", "data": ["json": attachment]]]
            }
            return .object(fields)
        }

        /// A handshake-reuse-accepted naming `invitation` as parent thread.
        static func reuseAccepted(of invitation: JSONValue) -> JSONValue {
            [
                "@type": "https://didcomm.org/out-of-band/1.1/handshake-reuse-accepted", "@id": .string(UUID().uuidString),
                "~thread": ["pthid": invitation["@id"] ?? .null],
            ]
        }

        /// Packs `message` from this inviter to `verkey` and posts it to the server's DIDComm
        /// endpoint, as a peer would; the endpoint must take it (202).
        func send(_ message: JSONValue, to verkey: String, _ server: LiveServer,
                  sourceLocation: SourceLocation = #_sourceLocation) async throws {
            let envelope = try DIDCommEnvelope.pack(message.serialized(), to: [verkey], from: key)
            #expect(try await DIDCommEndpointTests.post(envelope, to: server.didcommPort) == 202, sourceLocation: sourceLocation)
        }
    }

    static func question(_ id: String = UUID().uuidString) -> JSONValue {
        ["@type": "https://didcomm.org/questionanswer/1.0/question", "@id": .string(id), "question_text": "Ready?"]
    }

    /// A connection with `inviter` made at once from an attachment-only invitation (row 4): its
    /// id and our pairwise verkey.
    static func connectionless(_ tenant: AerieClient, from inviter: Inviter) async throws -> (id: String, pwVerkey: String) {
        let row4 = try await tenant.call(
            "outOfBand.accept", params: ["invitation": inviter.invitation(attachment: question())])
        return (
            try #require(row4["connection"]?["connectionId"]?.stringValue),
            try #require(row4["connection"]?["pwVerkey"]?.stringValue)
        )
    }

    static func storedCounts(_ server: LiveServer, tenant: TenantID) async throws -> [Int] {
        let runtime = server.database.runtime(maxConnections: 1)
        defer { Task { await runtime.shutdown() } }
        return try await runtime.withSession(tenant: tenant) { session in
            try ["connections", "mailbox", "outbox", "oob_invitations"].map {
                try session.query("SELECT count(*) FROM aerie.\($0)").int(0, 0) ?? -1
            }
        }
    }

    /// Rows 1 and 2 and the other broken invitations: clear errors, nothing stored.
    @Test func brokenInvitationsStoreNothing() async throws {
        try await LiveServer.with { server in
            let (tenant, tenantID) = try await server.tenantClient(label: "broken")
            defer { Task { await tenant.close() } }
            let inviter = try Inviter()
            // Row 1: neither list.
            await expectCode("invalid_invitation") {
                try await tenant.call("outOfBand.accept", params: ["invitation": inviter.invitation()])
            }
            // Both lists present but empty.
            var empty = inviter.invitation()
            if case .object(var fields) = empty {
                fields["handshake_protocols"] = []
                fields["requests~attach"] = []
                empty = .object(fields)
            }
            await expectCode("invalid_invitation") { try await tenant.call("outOfBand.accept", params: ["invitation": empty]) }
            // No services.
            await expectCode("invalid_invitation") {
                try await tenant.call(
                    "outOfBand.accept",
                    params: ["invitation": inviter.invitation(handshake: ["https://didcomm.org/connections/1.0"], services: [])])
            }
            // Only a protocol Aerie does not speak.
            await expectCode("unsupported_invitation") {
                try await tenant.call(
                    "outOfBand.accept", params: ["invitation": inviter.invitation(handshake: ["https://didcomm.org/unknown/1.0"])])
            }
            // A broken attachment.
            var bad = inviter.invitation(attachment: Self.question())
            if case .object(var fields) = bad {
                fields["requests~attach"] = [["@id": "a", "data": ["base64": "%%%"]]]
                bad = .object(fields)
            }
            await expectCode("invalid_invitation") { try await tenant.call("outOfBand.accept", params: ["invitation": bad]) }
            await expectCode("invalid_invitation") {
                try await tenant.call("outOfBand.extractAttachedMessage", params: ["invitation": bad])
            }
            // Not an out-of-band invitation.
            await expectCode("invalid_invitation") {
                try await tenant.call("outOfBand.accept", params: ["invitation": try DIDCommEndpointTests.deadInvitation()])
            }
            // A DID service nobody can resolve here, attachment only.
            await expectCode("unsupported_invitation") {
                try await tenant.call(
                    "outOfBand.accept",
                    params: ["invitation": inviter.invitation(attachment: Self.question(), services: ["did:sov:LjgpST2rjsoxYegQDRm7EL"])])
            }
            // A handshake to a DID service nobody can resolve here (kept only for matching).
            await expectCode("unsupported_invitation") {
                try await tenant.call(
                    "outOfBand.accept",
                    params: [
                        "invitation": inviter.invitation(
                            handshake: ["https://didcomm.org/didexchange/1.1"], services: ["did:sov:LjgpST2rjsoxYegQDRm7EL"])
                    ])
            }
            await expectCode("invalid_params") {
                try await tenant.call(
                    "outOfBand.accept", params: ["invitation": inviter.invitation(attachment: Self.question()), "timeoutSeconds": 0])
            }
            #expect(try await Self.storedCounts(server, tenant: tenantID) == [0, 0, 0, 0])

            // Row 2: a connection with the inviter exists, and the invitation still has neither list.
            _ = try await tenant.call("outOfBand.accept", params: ["invitation": inviter.invitation(attachment: Self.question())])
            await expectCode("invalid_invitation") {
                try await tenant.call("outOfBand.accept", params: ["invitation": inviter.invitation()])
            }
            #expect(try await Self.storedCounts(server, tenant: tenantID) == [1, 1, 0, 1])
        }
    }

    /// Row 4 then row 7: an attachment-only invitation makes a connection at once with the
    /// service's keys; a second one from the same inviter runs over that connection; the very same
    /// invitation again changes nothing.
    @Test func rows4And7AttachmentsWithAndWithoutAConnection() async throws {
        try await LiveServer.with { server in
            let (tenant, tenantID) = try await server.tenantClient(label: "rows-4-7")
            defer { Task { await tenant.close() } }
            let inviter = try Inviter()
            let firstQuestion = Self.question()
            let first = inviter.invitation(attachment: firstQuestion)
            let row4 = try await tenant.call("outOfBand.accept", params: ["invitation": first])
            #expect(row4["row"] == 4, "\(row4)")
            #expect(row4["connection"]?["state"] == 4)
            #expect(row4["connection"]?["theirVerkey"]?.stringValue == inviter.key.verkeyBase58)
            #expect(row4["connection"]?["theirEndpoint"] == "http://127.0.0.1:9/")
            #expect(row4["attachedMessage"] == firstQuestion)
            let connectionId = try #require(row4["connection"]?["connectionId"]?.stringValue)
            let pwDid = try #require(row4["connection"]?["pwDid"]?.stringValue)

            let secondQuestion = Self.question()
            let row7 = try await tenant.call(
                "outOfBand.accept", params: ["invitation": inviter.invitation(attachment: secondQuestion)])
            #expect(row7["row"] == 7, "\(row7)")
            #expect(row7["action"] == "attachment-on-existing")
            #expect(row7["match"] == "recipientKey")
            #expect(row7["connection"]?["connectionId"]?.stringValue == connectionId)
            #expect(row7["attachedMessage"] == secondQuestion)

            let again = try await tenant.call("outOfBand.accept", params: ["invitation": first])
            #expect(again["sameInvitation"] == true)
            #expect(again["row"] == 4)
            #expect(again["connection"]?["connectionId"]?.stringValue == connectionId)

            let downloaded = try await tenant.call("messages.download", params: ["pairwiseDids": [.string(pwDid)]])
            let ids = Set((downloaded.arrayValue?.first?["msgs"]?.arrayValue ?? []).compactMap {
                $0["decryptedPayload"]?.stringValue.flatMap { try? JSONValue(parsing: $0) }?["@id"]?.stringValue
                    ?? $0["decryptedPayload"]?["@id"]?.stringValue
            })
            #expect(ids == [firstQuestion["@id"]!.stringValue!, secondQuestion["@id"]!.stringValue!], "\(downloaded)")
            #expect(try await Self.storedCounts(server, tenant: tenantID) == [1, 2, 0, 2])

            // createConnection on an attachment-only invitation: state 4 at once.
            let created = try await tenant.call(
                "outOfBand.createConnection", params: ["invitation": try Inviter().invitation(attachment: Self.question())])
            #expect(created["state"] == 4)
            let pending = try await tenant.call(
                "outOfBand.createConnection",
                params: ["invitation": try Inviter().invitation(handshake: ["https://didcomm.org/connections/1.0"])])
            #expect(pending["state"] == 1)
        }
    }

    /// Rows 6 and 8 over a connection made here (row 4): the reuse goes out; without an answer
    /// the wait ends in `timeout` and the connection is untouched; the inviter's
    /// handshake-reuse-accepted, posted to the DIDComm endpoint, makes it `reused`.
    @Test func rows6And8ReuseIsMatchedByParentThread() async throws {
        try await LiveServer.with(server: { $0.delivery.enabled = false }) { server in
            let (tenant, _) = try await server.tenantClient(label: "rows-6-8")
            defer { Task { await tenant.close() } }
            let inviter = try Inviter()
            let (connectionId, pwVerkey) = try await Self.connectionless(tenant, from: inviter)

            let reuseInvitation = inviter.invitation(handshake: ["https://didcomm.org/didexchange/1.1"])
            await expectCode("timeout") {
                try await tenant.call("outOfBand.accept", params: ["invitation": reuseInvitation, "timeoutSeconds": 1])
            }
            #expect(try await tenant.call("connections.get", params: ["connectionId": .string(connectionId)])["state"] == 4)
            let waiting = try await tenant.call("outOfBand.accept", params: ["invitation": reuseInvitation])
            #expect(waiting["sameInvitation"] == true)
            #expect(waiting["row"] == 6)
            #expect(waiting["state"] == "reuse-sent")

            // The inviter answers: a reuse-accepted whose pthid names the invitation.
            try await inviter.send(Inviter.reuseAccepted(of: reuseInvitation), to: pwVerkey, server)
            let reused = try await tenant.call("connections.get", params: ["connectionId": .string(connectionId)])
            #expect(reused["stateName"] == "reused")
            #expect(reused["state"] == 5)
            let done = try await tenant.call("outOfBand.accept", params: ["invitation": reuseInvitation])
            #expect(done["state"] == "reused")

            // Row 8, not waiting: the reuse is sent and the attachment stored at once.
            let attached = Self.question()
            let row8 = try await tenant.call(
                "outOfBand.accept",
                params: [
                    "invitation": inviter.invitation(handshake: ["https://didcomm.org/connections/1.0"], attachment: attached),
                    "wait": false,
                ])
            #expect(row8["row"] == 8, "\(row8)")
            #expect(row8["state"] == "reuse-sent")
            #expect(row8["attachedMessage"] == attached)
            #expect(row8["attachedMessageUid"]?.stringValue != nil)
        }
    }

    /// The inviter refuses a reuse with an out-of-band problem report naming the invitation: the
    /// record fails with its reason, the connection stays as it was.
    @Test func reuseRefusedByProblemReport() async throws {
        try await LiveServer.with(server: { $0.delivery.enabled = false }) { server in
            let (tenant, _) = try await server.tenantClient(label: "refused")
            defer { Task { await tenant.close() } }
            let inviter = try Inviter()
            let (connectionId, pwVerkey) = try await Self.connectionless(tenant, from: inviter)
            let reuse = inviter.invitation(handshake: ["https://didcomm.org/connections/1.0"])
            let sent = try await tenant.call(
                "outOfBand.sendReuse", params: ["connectionId": .string(connectionId), "invitation": reuse, "wait": false])
            #expect(sent["row"] == 6, "\(sent)")
            #expect(sent["state"] == "reuse-sent")
            let report: JSONValue = [
                "@type": "https://didcomm.org/out-of-band/1.1/problem_report", "@id": .string(UUID().uuidString),
                "~thread": ["pthid": reuse["@id"]!], "description": ["en": "no such invitation", "code": "no-invitation"],
            ]
            try await inviter.send(report, to: pwVerkey, server)
            let after = try await tenant.call("outOfBand.accept", params: ["invitation": reuse])
            #expect(after["sameInvitation"] == true)
            #expect(after["state"] == "failed")
            #expect(after["failureReason"] == "no such invitation")
            #expect(try await tenant.call("connections.get", params: ["connectionId": .string(connectionId)])["state"] == 4)
        }
    }

    /// Two tenants accept the same invitation: each gets its own connection and record; one
    /// tenant's reuse-accepted cannot touch the other's.
    @Test func twoTenantsAreIsolated() async throws {
        try await LiveServer.with(server: { $0.delivery.enabled = false }) { server in
            let (alice, aliceID) = try await server.tenantClient(label: "alice")
            let (bob, bobID) = try await server.tenantClient(label: "bob")
            defer { Task { await alice.close(); await bob.close() } }
            let inviter = try Inviter()
            let invitation = inviter.invitation(attachment: Self.question())
            let a = try await alice.call("outOfBand.accept", params: ["invitation": invitation])
            let b = try await bob.call("outOfBand.accept", params: ["invitation": invitation])
            #expect(a["row"] == 4 && b["row"] == 4)
            #expect(b["sameInvitation"] == false)
            #expect(a["connection"]?["connectionId"] != b["connection"]?["connectionId"])

            // Alice starts a reuse; a reuse-accepted addressed to Bob's key with Alice's pthid
            // changes nothing for either.
            let reuse = inviter.invitation(handshake: ["https://didcomm.org/connections/1.0"])
            _ = try await alice.call("outOfBand.accept", params: ["invitation": reuse, "wait": false])
            let bobKey = try #require(b["connection"]?["pwVerkey"]?.stringValue)
            try await inviter.send(Inviter.reuseAccepted(of: reuse), to: bobKey, server)
            let aliceConnection = try #require(a["connection"]?["connectionId"]?.stringValue)
            let bobConnection = try #require(b["connection"]?["connectionId"]?.stringValue)
            #expect(try await alice.call("connections.get", params: ["connectionId": .string(aliceConnection)])["state"] == 4)
            #expect(try await bob.call("connections.get", params: ["connectionId": .string(bobConnection)])["state"] == 4)
            await expectCode("not_found") {
                try await bob.call("connections.get", params: ["connectionId": .string(aliceConnection)])
            }
            #expect(try await Self.storedCounts(server, tenant: aliceID) == [1, 1, 1, 2])
            #expect(try await Self.storedCounts(server, tenant: bobID) == [1, 2, 0, 1])
        }
    }
}
