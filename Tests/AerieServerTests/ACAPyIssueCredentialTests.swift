import AerieClient
import AerieCore
import AerieCrypto
import AerieTesting
import Foundation
import Testing

/// Issue-credential 2.0 (RFC 0453, JSON-LD RFC 0593) with ACA-Py 1.2.7 `--no-ledger` as the
/// issuer and an Aerie tenant as the holder: over a connection with both Ed25519 suites, from an
/// out-of-band invitation's attached offer, and declined. ACA-Py's own records are checked after.
@Suite(.serialized, .timeLimit(.minutes(10))) struct ACAPyIssueCredentialTests {
    /// The credential ACA-Py is asked to offer. Its claims are defined by an inline `@vocab`:
    /// ACA-Py 1.2.7 resolves only its own static contexts offline (not the examples context).
    static func credential(issuer: String, name: String) -> JSONValue {
        [
            "@context": ["https://www.w3.org/2018/credentials/v1", ["@vocab": "https://example.org/aerie-tests#"]],
            "type": ["VerifiableCredential", "UniversityDegreeCredential"], "issuer": .string(issuer),
            "issuanceDate": "2024-01-01T00:00:00Z",
            "credentialSubject": ["degree": ["type": "BachelorDegree", "name": .string(name)]],
        ]
    }

    static func filter(issuer: String, name: String, suite: String) -> JSONValue {
        ["ld_proof": ["credential": credential(issuer: issuer, name: name), "options": ["proofType": .string(suite)]]]
    }

    /// ACA-Py's did:key issuer.
    static func issuerDid(_ agent: ACAPyAgent) async throws -> String {
        let made = try await agent.admin("POST", "/wallet/did/create", body: ["method": "key", "options": ["key_type": "ed25519"]])
        return try #require(made["result"]?["did"]?.stringValue, "\(made)")
    }

    /// A connection made by an out-of-band invitation of ACA-Py: (ACA-Py's connection id, ours).
    static func connect(_ agent: ACAPyAgent, _ tenant: AerieClient) async throws -> (String, String) {
        let created = try await agent.admin(
            "POST", "/out-of-band/create-invitation", body: ["handshake_protocols": ["https://didcomm.org/connections/1.0"]])
        let accepted = try await tenant.call("outOfBand.accept", params: ["invitation": try #require(created["invitation"])])
        let ours = try #require(accepted["connection"]?["connectionId"]?.stringValue, "\(accepted)")
        let pwDid = try #require(accepted["connection"]?["pwDid"]?.stringValue)
        for _ in 0..<75 {
            let theirs = try await agent.admin("GET", "/connections?state=active")
            if let id = (theirs["results"]?.arrayValue ?? []).first(where: { $0["their_did"]?.stringValue.map(PeerDID4.shortForm) == pwDid })?["connection_id"]?
                .stringValue
            {
                return (id, ours)
            }
            try await Task.sleep(for: .milliseconds(200))
        }
        throw AerieClientError(code: -1, message: "ACA-Py never made the connection active", data: accepted)
    }

    /// Polls until `check` answers (30 s at most).
    static func eventually<T: Sendable>(_ what: String, _ check: () async throws -> T?) async throws -> T {
        for _ in 0..<150 {
            if let value = try await check() { return value }
            try await Task.sleep(for: .milliseconds(200))
        }
        throw AerieClientError(code: -1, message: "timed out waiting for \(what)", data: nil)
    }

    static func exchange(_ tenant: AerieClient, state: String) async throws -> JSONValue {
        try await eventually("an exchange in \(state)") {
            try await tenant.call("credentials.exchanges", params: ["state": .string(state)])["exchanges"]?.arrayValue?.first
        }
    }

    static func acapyRecord(_ agent: ACAPyAgent, _ id: String, state: String) async throws -> JSONValue {
        try await eventually("ACA-Py's record in \(state)") {
            let record = try await agent.admin("GET", "/issue-credential-2.0/records/\(id)")
            // Not `cond ? record : nil`: JSONValue takes `nil` as `.null`, which would end the wait.
            guard record["cred_ex_record"]?["state"]?.stringValue == state else { return nil }
            return record
        }
    }

    @Test(arguments: ["Ed25519Signature2018", "Ed25519Signature2020"])
    func issuedOverAConnectionVerifiedAndStored(suite: String) async throws {
        try await ACAPyConnectionTests.withAerieAndACAPy { server, agent in
            let (tenant, _) = try await server.tenantClient(label: "holder")
            let (other, _) = try await server.tenantClient(label: "other holder")
            defer { Task { await tenant.close(); await other.close() } }
            let issuer = try await Self.issuerDid(agent)
            let (theirConnection, ourConnection) = try await Self.connect(agent, tenant)
            let offered = try await agent.admin(
                "POST", "/issue-credential-2.0/send-offer",
                body: [
                    "connection_id": .string(theirConnection), "auto_issue": true, "auto_remove": false,
                    "filter": Self.filter(issuer: issuer, name: "Bachelor of Science", suite: suite),
                ])
            let recordId = try #require(offered["cred_ex_id"]?.stringValue, "\(offered)")

            let offer = try await Self.exchange(tenant, state: "offer-received")
            #expect(offer["connectionId"]?.stringValue == ourConnection)
            #expect(offer["offer"]?["credential"]?["issuer"]?.stringValue == issuer)
            let requested = try await tenant.call("credentials.accept", params: ["offerId": try #require(offer["exchangeId"])])
            #expect(requested["state"] == "request-sent", "\(requested)")
            let holder = try #require(requested["holderDid"]?.stringValue)
            #expect(holder.hasPrefix("did:key:z6Mk"))

            let done = try await Self.exchange(tenant, state: "done")
            let credentialId = try #require(done["credentialId"])
            let stored = try await tenant.call("credentials.get", params: ["credentialId": credentialId])
            #expect(stored["issuer"]?.stringValue == issuer)
            #expect(stored["subjectId"]?.stringValue == holder)
            #expect(stored["credential"]?["proof"]?["type"]?.stringValue == suite)
            #expect(stored["credential"]?["credentialSubject"]?["degree"]?["name"] == "Bachelor of Science")
            // ACA-Py got the ack.
            _ = try await Self.acapyRecord(agent, recordId, state: "done")

            // Listing filters by type and issuer; the other tenant holds nothing.
            let byType = try await tenant.call("credentials.list", params: ["types": ["UniversityDegreeCredential"]])
            #expect(byType["credentials"]?.arrayValue?.count == 1)
            let byIssuer = try await tenant.call("credentials.list", params: ["issuer": "did:key:z6MkSomeoneElse"])
            #expect(byIssuer["credentials"]?.arrayValue?.isEmpty == true)
            let theirs = try await other.call("credentials.list", params: [:])
            #expect(theirs["credentials"]?.arrayValue?.isEmpty == true)
            await #expect(throws: AerieClientError.self) { try await other.call("credentials.get", params: ["credentialId": credentialId]) }

            // Deleting the connection removes its exchanges, not the credential.
            _ = try await tenant.call("connections.delete", params: ["connectionId": .string(ourConnection)])
            #expect(try await tenant.call("credentials.exchanges", params: [:])["exchanges"]?.arrayValue?.isEmpty == true)
            let kept = try await tenant.call("credentials.get", params: ["credentialId": credentialId])
            #expect(kept["connectionId"] == .null)
            #expect(try await tenant.call("credentials.delete", params: ["credentialId": credentialId])["deleted"] == true)
        }
    }

    /// Seed 004's row with a handshake and an attached offer: the offer becomes an exchange on the
    /// new connection, accepted like any other.
    @Test func issuedFromAnOutOfBandAttachedOffer() async throws {
        try await ACAPyConnectionTests.withAerieAndACAPy { server, agent in
            let (tenant, _) = try await server.tenantClient(label: "oob holder")
            defer { Task { await tenant.close() } }
            let issuer = try await Self.issuerDid(agent)
            let created = try await agent.admin(
                "POST", "/issue-credential-2.0/create-offer",
                body: [
                    "auto_issue": true, "auto_remove": false,
                    "filter": Self.filter(issuer: issuer, name: "Master of Arts", suite: "Ed25519Signature2018"),
                ])
            let recordId = try #require(created["cred_ex_id"]?.stringValue, "\(created)")
            let invitation = try await agent.admin(
                "POST", "/out-of-band/create-invitation",
                body: [
                    "handshake_protocols": ["https://didcomm.org/connections/1.0"],
                    "attachments": [["id": .string(recordId), "type": "credential-offer"]],
                ])
            let accepted = try await tenant.call(
                "outOfBand.accept", params: ["invitation": try #require(invitation["invitation"]), "timeoutSeconds": 30])
            #expect(accepted["connection"]?["state"] == 4, "\(accepted)")
            let offer = try await Self.exchange(tenant, state: "offer-received")
            #expect(offer["connectionId"] == accepted["connection"]?["connectionId"])
            #expect(offer["parentThreadId"] == invitation["invitation"]?["@id"])
            _ = try await tenant.call("credentials.accept", params: ["offerId": try #require(offer["exchangeId"])])
            let done = try await Self.exchange(tenant, state: "done")
            let stored = try await tenant.call("credentials.get", params: ["credentialId": try #require(done["credentialId"])])
            #expect(stored["credential"]?["credentialSubject"]?["degree"]?["name"] == "Master of Arts")
        }
    }

    /// A declined offer: a problem report, abandoned on both sides, nothing stored.
    @Test func declinedWithAProblemReport() async throws {
        try await ACAPyConnectionTests.withAerieAndACAPy { server, agent in
            let (tenant, _) = try await server.tenantClient(label: "decliner")
            defer { Task { await tenant.close() } }
            let issuer = try await Self.issuerDid(agent)
            let (theirConnection, _) = try await Self.connect(agent, tenant)
            let offered = try await agent.admin(
                "POST", "/issue-credential-2.0/send-offer",
                body: [
                    "connection_id": .string(theirConnection), "auto_remove": false,
                    "filter": Self.filter(issuer: issuer, name: "Unwanted", suite: "Ed25519Signature2018"),
                ])
            let recordId = try #require(offered["cred_ex_id"]?.stringValue, "\(offered)")
            let offer = try await Self.exchange(tenant, state: "offer-received")
            let declined = try await tenant.call(
                "credentials.decline", params: ["offerId": try #require(offer["exchangeId"]), "reason": "not today"])
            #expect(declined["state"] == "abandoned")
            #expect(declined["problem"] == "not today")
            let record = try await Self.acapyRecord(agent, recordId, state: "abandoned")
            #expect(record["cred_ex_record"]?["error_msg"]?.stringValue?.contains("not today") == true, "\(record)")
            // Accepting it now is a conflict; nothing was stored.
            await #expect(throws: AerieClientError.self) {
                try await tenant.call("credentials.accept", params: ["offerId": try #require(offer["exchangeId"])])
            }
            #expect(try await tenant.call("credentials.list", params: [:])["credentials"]?.arrayValue?.isEmpty == true)
        }
    }
}
