import AerieClient
import AerieCore
import AerieCrypto
import AerieStore
import AerieTesting
import Foundation
import Testing

/// A Response applied in one round trip (schema/0037) when two copies of it arrive at once: the
/// copies race through the inbound pipeline, each with the connection as read before the other
/// committed. The first stores and applies it; the second finds its copy stored (or the row
/// changed, or the connection already accepted) and changes nothing. Two tenants, each with its
/// own connection to the same invitation, receive their copies at the same time.
@Suite(.timeLimit(.minutes(10))) struct ResponseCopiesTests {
    @Test func twoCopiesOfAResponseAtOnceAreAppliedOnce() async throws {
        try await LiveServer.with(server: { $0.delivery.enabled = false }) { server in
            try await server.withTwoTenants { tenantA, tenantB in
                let (a, aID) = tenantA
                let (b, bID) = tenantB
                for round in 0..<5 {
                    let inviter = Ed25519KeyPair.generate()
                    let theirKey = Ed25519KeyPair.generate()
                    let theirDid = try PeerDID2.make(verkey: theirKey.verkey, serviceEndpoint: "http://127.0.0.1:9")
                    let invitationId = "inv-\(round)"
                    let invitation = try HandMadeHandshake.invitation(inviter: inviter, id: invitationId)
                    var copies: [(tenant: TenantID, connectionId: String, envelope: [UInt8])] = []
                    for (client, tenant) in [(a, aID), (b, bID)] {
                        let accepted = try await client.call("connections.accept", params: ["invitation": invitation])
                        let id = try #require(accepted["connectionId"]?.stringValue)
                        let pwVerkey = try #require(accepted["pwVerkey"]?.stringValue)
                        let response = try HandMadeHandshake.response(invitationId: invitationId, theirDid: theirDid, signedBy: inviter)
                        let envelope = try DIDCommEnvelope.pack(response.serialized(), to: [pwVerkey], from: theirKey)
                        copies.append((tenant, id, envelope))
                    }
                    // Both copies of both tenants' Responses, all at once.
                    let statuses = try await withThrowingTaskGroup(of: Int.self) { group in
                        for copy in copies + copies {
                            group.addTask { try await DIDCommEndpointTests.post(copy.envelope, to: server.didcommPort) }
                        }
                        return try await group.reduce(into: []) { $0.append($1) }
                    }
                    #expect(statuses == [202, 202, 202, 202], "round \(round)")
                    for (copy, client) in zip(copies, [a, b]) {
                        let connection = try await client.call("connections.get", params: ["connectionId": .string(copy.connectionId)])
                        #expect(connection["state"] == 4, "round \(round): \(connection)")
                        #expect(connection["theirDid"]?.stringValue == theirDid)
                        // One Response stored (reviewed), and one didexchange complete queued after
                        // the Request: a second application would have queued a second one.
                        let (responses, outbox) = try await Self.rows(server, tenant: copy.tenant, connection: copy.connectionId)
                        #expect(responses == [MailboxMessage.reviewed], "round \(round)")
                        #expect(outbox == 2, "round \(round)")
                    }
                }
            }
        }
    }

    /// The statuses of the connection's stored Responses, and how many outbox rows it has.
    static func rows(_ server: LiveServer, tenant: TenantID, connection: String) async throws -> (responses: [String], outbox: Int) {
        let runtime = server.database.runtime(maxConnections: 1)
        defer { Task { await runtime.shutdown() } }
        return try await runtime.withSession(tenant: tenant) { session in
            let responses = try session.query(
                "SELECT status FROM aerie.mailbox WHERE connection_id = $1::uuid AND type LIKE '%/response'", [.text(connection)])
            let outbox = try session.query("SELECT count(*)::int FROM aerie.outbox WHERE connection_id = $1::uuid", [.text(connection)])
            return ((0..<responses.rowCount).compactMap { responses.string($0, 0) }, outbox.int(0, 0) ?? -1)
        }
    }
}
