import AerieClient
import AerieCore
import AerieTesting
import Foundation
import Testing

/// Present-proof 2.0 with DIF Presentation Exchange against ACA-Py 1.2.7 (`--no-ledger`) as the
/// verifier: its `/present-proof-2.0/send-request` reaches Aerie as it really shapes it, and
/// what Aerie answers moves ACA-Py's record.
@Suite(.serialized, .timeLimit(.minutes(10))) struct PresentProofACAPyTests {
    static let definition: JSONValue = [
        "id": "32f54163-7166-48f1-93d8-ff217bdb0653",
        "format": ["ldp_vp": ["proof_type": ["Ed25519Signature2018"]]],
        "input_descriptors": [
            [
                "id": "citizenship_input_1", "name": "Permanent resident card",
                "schema": [["uri": "https://www.w3.org/2018/credentials#VerifiableCredential"], ["uri": "https://w3id.org/citizenship#PermanentResident"]],
                "constraints": ["fields": [["path": ["$.credentialSubject.givenName"], "filter": ["type": "string"]]]],
            ]
        ],
    ]

    /// Aerie accepts ACA-Py's invitation; both sides' connection ids once ACA-Py's is active.
    static func connect(_ tenant: AerieClient, _ agent: ACAPyAgent) async throws -> (aerie: String, acapy: String) {
        let created = try await agent.admin("POST", "/connections/create-invitation", body: [:])
        let url = try #require(created["invitation_url"]?.stringValue)
        let acapy = try #require(created["connection_id"]?.stringValue)
        let accepted = try await tenant.call("connections.accept", params: ["url": .string(url), "wait": true, "timeoutSeconds": 30])
        _ = try await agent.waitForConnection(acapy, states: ["active", "completed"])
        return (try #require(accepted["connectionId"]?.stringValue), acapy)
    }

    static func sendRequest(_ agent: ACAPyAgent, connection: String, definition: JSONValue = definition) async throws -> String {
        let sent = try await agent.admin(
            "POST", "/present-proof-2.0/send-request",
            body: [
                "connection_id": .string(connection), "auto_verify": true, "auto_remove": false,
                "presentation_request": ["dif": ["options": ["challenge": "3fa85f64-5717-4562-b3fc-2c963f66afa7", "domain": "4jt78h47fh47"], "presentation_definition": definition]],
            ])
        return try #require(sent["pres_ex_id"]?.stringValue, "\(sent)")
    }

    static func waitForRecord(_ agent: ACAPyAgent, _ id: String, states: Set<String>) async throws -> JSONValue {
        let deadline = ContinuousClock.now + .seconds(30)
        var last: JSONValue = .null
        while ContinuousClock.now < deadline {
            last = try await agent.admin("GET", "/present-proof-2.0/records/\(id)")
            if let state = last["state"]?.stringValue, states.contains(state) { return last }
            try await Task.sleep(for: .milliseconds(100))
        }
        Issue.record("ACA-Py's record never reached \(states): \(last)")
        return last
    }

    /// The first request (or the first of the definition `definitionId`) in request-received.
    static func waitForRequest(_ client: AerieClient, definitionId: String? = nil) async throws -> JSONValue {
        let deadline = ContinuousClock.now + .seconds(30)
        while ContinuousClock.now < deadline {
            if case .array(let items)? = try await client.call("proofs.list", params: ["state": "request-received"])["requests"],
                let first = items.first(where: { definitionId == nil || $0["presentationDefinition"]?["id"] == .string(definitionId!) })
            {
                return first
            }
            try await Task.sleep(for: .milliseconds(100))
        }
        throw AerieError(.timeout, "no proof request arrived")
    }

    /// ACA-Py's DIF request is recorded with its definition, challenge and domain; declined, ACA-Py
    /// hears the problem report and abandons its record.
    @Test func acapysRequestIsRecordedAndADeclineAbandonsItsRecord() async throws {
        try await ACAPyConnectionTests.withAerieAndACAPy { server, agent in
            let (tenant, _) = try await server.tenantClient(label: "alice")
            defer { Task { await tenant.close() } }
            let ids = try await Self.connect(tenant, agent)
            let presExId = try await Self.sendRequest(agent, connection: ids.acapy)

            let request = try await Self.waitForRequest(tenant)
            #expect(request["state"] == "request-received")
            #expect(request["connectionId"] == .string(ids.aerie))
            #expect(request["challenge"] == "3fa85f64-5717-4562-b3fc-2c963f66afa7")
            #expect(request["domain"] == "4jt78h47fh47")
            #expect(request["presentationDefinition"]?["id"] == Self.definition["id"])
            let acapyRecord = try await agent.admin("GET", "/present-proof-2.0/records/\(presExId)")
            #expect(request["threadId"] == acapyRecord["thread_id"])

            let requestId = try #require(request["requestId"]?.stringValue)
            let declined = try await tenant.call("proofs.decline", params: ["requestId": .string(requestId), "reason": "no thanks"])
            #expect(declined["state"] == "abandoned")
            let record = try await Self.waitForRecord(agent, presExId, states: ["abandoned"])
            #expect(record["error_msg"]?.stringValue?.contains("no thanks") == true, "\(record)")
        }
    }
}
