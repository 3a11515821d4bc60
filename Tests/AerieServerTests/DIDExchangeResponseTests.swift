import AerieClient
import AerieCore
import AerieCrypto
import AerieTesting
import Foundation
import Testing

/// didexchange Responses through the server, with an inviter whose key the test holds: a
/// Response signed by another key fails the connection with a clear reason (never a crash or an
/// accepted connection); the right signature accepts it. The JWS is written here independently,
/// in ACA-Py's `AttachDecoratorData.sign` format. Delivery is off: nothing leaves the process.
@Suite(.timeLimit(.minutes(10))) struct DIDExchangeResponseTests {
    @Test func wrongSignatureFailsAndRightSignatureAccepts() async throws {
        try await LiveServer.with(server: { $0.delivery.enabled = false }) { server in
            let inviter = Ed25519KeyPair.generate()
            let theirKey = Ed25519KeyPair.generate()
            let theirDid = try PeerDID2.make(verkey: theirKey.verkey, serviceEndpoint: "http://127.0.0.1:9")
            let (tenant, _) = try await server.tenantClient(label: "frank")
            defer { Task { await tenant.close() } }

            // Signed by someone else: failed, with the reason.
            let first = try await tenant.call("connections.accept", params: ["invitation": try HandMadeHandshake.invitation(inviter: inviter, id: "inv-1")])
            #expect(first["state"] == 2, "\(first)")
            #expect(first["handshakeProtocol"] == "https://didcomm.org/didexchange/1.1")
            #expect(first["pwDid"]?.stringValue?.hasPrefix("did:peer:4") == true)
            let firstId = try #require(first["connectionId"]?.stringValue)
            let forged = try HandMadeHandshake.response(invitationId: "inv-1", theirDid: theirDid, signedBy: Ed25519KeyPair.generate())
            let failed = try await tenant.call(
                "connections.updateStateWithMessage", params: ["connectionId": .string(firstId), "message": forged])
            #expect(failed["state"] == 0, "\(failed)")
            #expect(failed["stateName"] == "failed")
            #expect(failed["failureReason"]?.stringValue?.contains("not the invitation key") == true, "\(failed)")
            #expect(failed["theirDid"] == nil)

            // Signed by the invitation key: accepted, their DID resolved. (Another inviter key: the
            // same one would match the first connection as existing.)
            let inviter2 = Ed25519KeyPair.generate()
            let second = try await tenant.call("connections.accept", params: ["invitation": try HandMadeHandshake.invitation(inviter: inviter2, id: "inv-2")])
            let secondId = try #require(second["connectionId"]?.stringValue)
            #expect(secondId != firstId)
            let good = try HandMadeHandshake.response(invitationId: "inv-2", theirDid: theirDid, signedBy: inviter2)
            let accepted = try await tenant.call(
                "connections.updateStateWithMessage", params: ["connectionId": .string(secondId), "message": good])
            #expect(accepted["state"] == 4, "\(accepted)")
            #expect(accepted["theirDid"]?.stringValue == theirDid)
            #expect(accepted["theirVerkey"]?.stringValue == theirKey.verkeyBase58)
            #expect(accepted["theirEndpoint"] == "http://127.0.0.1:9")
            #expect(accepted["handshakeProtocol"] == "https://didcomm.org/didexchange/1.1")

            // A connections/1.0 response does not apply to a didexchange connection.
            do {
                _ = try await tenant.call(
                    "connections.updateStateWithMessage",
                    params: ["connectionId": .string(firstId), "message": ["@type": "https://didcomm.org/connections/1.0/response"]])
                Issue.record("expected conflict")
            } catch let error as AerieClientError {
                #expect(error.code == -32009)
            }

            // The serialized state carries the handshake.
            let serialized = try await tenant.call("connections.serialize", params: ["connectionId": .string(secondId)])
            #expect(serialized["connection"]?["handshakeProtocol"] == "https://didcomm.org/didexchange/1.1")
        }
    }

    /// A didexchange problem report fails the connection with its reason.
    @Test func problemReportFails() async throws {
        try await LiveServer.with(server: { $0.delivery.enabled = false }) { server in
            let inviter = Ed25519KeyPair.generate()
            let (tenant, _) = try await server.tenantClient(label: "gina")
            defer { Task { await tenant.close() } }
            let created = try await tenant.call("connections.accept", params: ["invitation": try HandMadeHandshake.invitation(inviter: inviter, id: "inv-3")])
            let id = try #require(created["connectionId"]?.stringValue)
            let report: JSONValue = [
                "@type": "did:sov:BzCbsNYhMrjHiqZDTUASHg;spec/didexchange/1.1/problem_report", "@id": "p1",
                "description": ["code": "request_not_accepted", "en": "No thanks"], "~thread": ["pthid": "inv-3"],
            ]
            let failed = try await tenant.call("connections.updateStateWithMessage", params: ["connectionId": .string(id), "message": report])
            #expect(failed["state"] == 0)
            #expect(failed["failureReason"] == "No thanks")
        }
    }
}
