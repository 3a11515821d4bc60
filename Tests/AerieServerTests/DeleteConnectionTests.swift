import AerieClient
import AerieCore
import AerieCrypto
import AerieServer
import AerieStore
import AerieTesting
import AerieTransport
import ConnectionsPlugin
import DeletePlugin
import Foundation
import Logging
import Testing

/// `connections.delete` (the delete plugin) and tenant deletion, against real PostgreSQL and,
/// where a peer matters, ACA-Py 1.2.7. Row counts are read as the superuser, past row-level
/// security.
@Suite(.serialized, .timeLimit(.minutes(10))) struct DeleteConnectionTests {
    static let tenantTables = ["connections", "mailbox", "outbox", "tenant_keys", "tenant_settings"]

    /// Rows per tenant table for `tenant`.
    static func tenantRows(_ server: LiveServer, _ tenant: TenantID) async throws -> [String: Int] {
        let id = tenant.rawValue
        return try await WalletFixture.asSuperuser(server.database) { session in
            var counts: [String: Int] = [:]
            for table in Self.tenantTables {
                counts[table] = try session.query(
                    "SELECT count(*) FROM aerie.\(table) WHERE tenant_id = $1::uuid", [.text(id)]).int(0, 0) ?? -1
            }
            return counts
        }
    }

    /// Rows anywhere that belong to one connection: by its id, or by its pairwise verkey.
    static func connectionRows(_ server: LiveServer, id: String, verkey: String) async throws -> [String: Int] {
        try await WalletFixture.asSuperuser(server.database) { session in
            func count(_ sql: String, _ values: [SQLValue]) throws -> Int { try session.query(sql, values).int(0, 0) ?? -1 }
            return [
                "connections": try count("SELECT count(*) FROM aerie.connections WHERE id = $1::uuid OR my_verkey = $2", [.text(id), .text(verkey)]),
                "mailbox": try count(
                    "SELECT count(*) FROM aerie.mailbox WHERE connection_id = $1::uuid OR recipient_verkey = $2", [.text(id), .text(verkey)]),
                "outbox": try count("SELECT count(*) FROM aerie.outbox WHERE connection_id = $1::uuid", [.text(id)]),
                "tenant_keys": try count("SELECT count(*) FROM aerie.tenant_keys WHERE verkey = $1", [.text(verkey)]),
            ]
        }
    }

    /// Counts once the tenant's traffic has settled (two reads 400 ms apart agree).
    static func settledRows(_ server: LiveServer, _ tenant: TenantID) async throws -> [String: Int] {
        var last = try await tenantRows(server, tenant)
        for _ in 0..<25 {
            try await Task.sleep(for: .milliseconds(400))
            let next = try await tenantRows(server, tenant)
            if next == last { return next }
            last = next
        }
        return last
    }

    static func accept(_ agent: ACAPyAgent, _ tenant: AerieClient, multiUse: Bool = false) async throws -> (JSONValue, String) {
        let created = try await agent.admin(
            "POST", "/connections/create-invitation\(multiUse ? "?multi_use=true" : "")", body: [:])
        let url = try #require(created["invitation_url"]?.stringValue)
        let accepted = try await tenant.call("connections.accept", params: ["url": .string(url), "wait": true])
        #expect(accepted["state"] == 4, "\(accepted)")
        let theirs = try #require(created["connection_id"]?.stringValue)
        if !multiUse { _ = try await agent.waitForConnection(theirs, states: ["active", "completed"]) }
        return (accepted, theirs)
    }

    /// Posts a trust ping packed by the test (an unknown sender) to `verkey`; answers the HTTP status.
    static func postPing(to verkey: String, server: LiveServer) async throws -> Int {
        let ping = #"{"@type":"https://didcomm.org/trust_ping/1.0/ping","@id":"\#(UUID().uuidString)","response_requested":false}"#
        let envelope = try DIDCommEnvelope.pack(Array(ping.utf8), to: [verkey], from: try Ed25519KeyPair(seed: Random.bytes(32)))
        return try await DIDCommEndpointTests.post(envelope, to: server.didcommPort)
    }

    /// Deliveries ACA-Py saw refused by `server`'s endpoint so far (its debug log names each
    /// failed attempt before it re-queues the message).
    static func refusedDeliveries(_ agent: ACAPyAgent, server: LiveServer) -> Int {
        agent.log().split(separator: "\n").filter {
            $0.contains(">>> Error when posting to: ") && $0.contains(":\(server.didcommPort)")
        }.count
    }

    @Test func deletesOneConnectionCompletelyAndNothingElse() async throws {
        try await ACAPyConnectionTests.withAerieAndACAPy(agentArguments: ["--log-level", "debug"]) { server, agent in
            let (alice, aliceID) = try await server.tenantClient(label: "alice")
            let (bob, bobID) = try await server.tenantClient(label: "bob")
            defer { Task { await alice.close(); await bob.close() } }
            let (first, firstTheirs) = try await Self.accept(agent, alice)
            let (second, secondTheirs) = try await Self.accept(agent, alice)
            _ = try await Self.accept(agent, bob)
            _ = try await bob.call("settings.set", params: ["key": "k", "value": "bob's"])
            let id = try #require(first["connectionId"]?.stringValue)
            let verkey = try #require(first["pwVerkey"]?.stringValue)
            let secondId = try #require(second["connectionId"]?.stringValue)
            let secondVerkey = try #require(second["pwVerkey"]?.stringValue)

            _ = try await Self.settledRows(server, aliceID)
            let before = try await Self.connectionRows(server, id: id, verkey: verkey)
            #expect(before["connections"] == 1 && before["tenant_keys"] == 1, "\(before)")
            // The Response is stored; the Request and the ping were delivered, so their outbox rows
            // are gone (schema/0032).
            #expect((before["mailbox"] ?? 0) >= 1 && before["outbox"] == 0, "\(before)")
            let secondBefore = try await Self.connectionRows(server, id: secondId, verkey: secondVerkey)
            let bobBefore = try await Self.settledRows(server, bobID)

            // Bob cannot delete Alice's connection: not_found, nothing changes.
            await expectCode("not_found") { try await bob.call("connections.delete", params: ["connectionId": .string(id)]) }
            #expect(try await Self.connectionRows(server, id: id, verkey: verkey) == before)

            let deleted = try await alice.call("connections.delete", params: ["connectionId": .string(id)])
            #expect(deleted["connectionId"]?.stringValue == id)
            #expect(deleted["notified"] == false)
            for (table, count) in before {
                #expect(deleted["removed"]?[table] == .int(Int64(count)), "\(table): \(deleted)")
            }
            #expect(try await Self.connectionRows(server, id: id, verkey: verkey).values.allSatisfy { $0 == 0 })
            await expectCode("not_found") { try await alice.call("connections.get", params: ["connectionId": .string(id)]) }
            await expectCode("not_found") { try await alice.call("connections.delete", params: ["connectionId": .string(id)]) }

            // ACA-Py still has its side: what it sends over the deleted connection is refused;
            // over the other connection it still arrives.
            let aliceMailbox = try await Self.tenantRows(server, aliceID)["mailbox"] ?? -1
            let refusedBefore = Self.refusedDeliveries(agent, server: server)
            _ = try await agent.admin("POST", "/connections/\(firstTheirs)/send-message", body: ["content": "still there?"])
            _ = try await agent.admin("POST", "/connections/\(firstTheirs)/send-ping", body: ["comment": "deleted"])
            _ = try await agent.admin("POST", "/connections/\(secondTheirs)/send-ping", body: ["comment": "alive"])
            var grown = aliceMailbox
            for _ in 0..<100 {
                grown = try await Self.tenantRows(server, aliceID)["mailbox"] ?? -1
                if grown > aliceMailbox { break }
                try await Task.sleep(for: .milliseconds(100))
            }
            // The marker: ACA-Py's own log shows both messages over the deleted connection were
            // tried and refused; only after that is "nothing else was stored" a fact.
            var refused = 0
            for _ in 0..<150 {
                refused = Self.refusedDeliveries(agent, server: server) - refusedBefore
                if refused >= 2 { break }
                try await Task.sleep(for: .milliseconds(100))
            }
            #expect(refused >= 2, "ACA-Py tried both messages over the deleted connection")
            // The ping over the live connection and our ping_response to it (a sent message, stored
            // in the same transaction) and nothing else.
            #expect(try await Self.tenantRows(server, aliceID)["mailbox"] == aliceMailbox + 2, "only the live connection's ping and its answer are stored")
            #expect(try await Self.connectionRows(server, id: id, verkey: verkey).values.allSatisfy { $0 == 0 })
            #expect(try await Self.postPing(to: verkey, server: server) == 400)
            // A stranger's ping to the live connection is refused too: it does not come from ACA-Py's key.
            #expect(try await Self.postPing(to: secondVerkey, server: server) == 400)

            // The other connection and the other tenant are untouched.
            // Our ping_response's outbox row goes once it is delivered.
            var secondAfter = try await Self.connectionRows(server, id: secondId, verkey: secondVerkey)
            for _ in 0..<100 where secondAfter["outbox"] != secondBefore["outbox"] {
                try await Task.sleep(for: .milliseconds(100))
                secondAfter = try await Self.connectionRows(server, id: secondId, verkey: secondVerkey)
            }
            secondAfter["mailbox"]! -= 2  // ACA-Py's ping just received on it, and our ping_response
            #expect(secondAfter == secondBefore)
            #expect(try await alice.call("connections.get", params: ["connectionId": .string(secondId)])["state"] == 4)
            #expect(try await Self.tenantRows(server, bobID) == bobBefore)
            #expect(try await bob.call("connections.list")["connections"]?.arrayValue?.count == 1)
        }
    }

    /// With notify, the peer gets a `connection_closed` problem report packed with the pairwise
    /// key before it was deleted; the outbox row carrying it belongs to no connection and is
    /// delivered after the delete.
    @Test func notifyTellsThePeerBeforeTheKeyIsGone() async throws {
        let agent = try await ACAPyAgent.start(extraArguments: ["--log-level", "info"])
        do {
            try await LiveServer.with(server: { $0.outbound.allowPrivateURLs = true }) { server in
                let (alice, aliceID) = try await server.tenantClient(label: "alice")
                defer { Task { await alice.close() } }
                let (accepted, _) = try await Self.accept(agent, alice)
                let id = try #require(accepted["connectionId"]?.stringValue)
                let verkey = try #require(accepted["pwVerkey"]?.stringValue)
                let threadId = try await WalletFixture.withContext(of: aliceID, on: server) { tenant in
                    try await tenant.database.transaction { try $0.connections.get(UUID(uuidString: id)!)?.threadId }
                }

                let deleted = try await alice.call("connections.delete", params: ["connectionId": .string(id), "notify": true])
                #expect(deleted["notified"] == true, "\(deleted)")
                #expect(deleted["removed"]?["connections"] == 1 && deleted["removed"]?["tenant_keys"] == 1)

                var status: String? = nil
                for _ in 0..<100 {
                    status = try await WalletFixture.asSuperuser(server.database) { session in
                        // Pending while its row is there (inserted by the delete's transaction);
                        // delivered once the mark deleted it (schema/0032; a delivery that fails
                        // for good keeps its row as `failed`).
                        try session.query(
                            """
                            SELECT coalesce(
                                (SELECT status FROM aerie.outbox WHERE tenant_id = $1::uuid AND connection_id IS NULL), 'sent')
                            """,
                            [.text(aliceID.rawValue)]).string(0, 0)
                    }
                    if status == "sent" { break }
                    try await Task.sleep(for: .milliseconds(100))
                }
                #expect(status == "sent")
                var log = ""
                for _ in 0..<50 {
                    log = agent.log()
                    if log.contains("Received problem report") { break }
                    try await Task.sleep(for: .milliseconds(100))
                }
                #expect(log.contains("Received problem report"), "\(log.suffix(3000))")
                #expect(log.contains("connection_closed"))
                #expect(log.contains("_thid='\(try #require(threadId))'"), "threaded to the connection's Request")
                #expect(try await Self.connectionRows(server, id: id, verkey: verkey).values.allSatisfy { $0 == 0 })
            }
        } catch {
            print("ACA-Py log:\n\(agent.log().suffix(4000))")
            await agent.stop()
            throw error
        }
        await agent.stop()
    }

    /// `aerie-admin tenant delete ID --yes` after a real connection: every tenant table is empty
    /// for that tenant, the other tenant's rows are as they were.
    @Test func tenantDeletionAfterARealConnectionLeavesNoRows() async throws {
        try await ACAPyConnectionTests.withAerieAndACAPy { server, agent in
            let (alice, aliceID) = try await server.tenantClient(label: "alice")
            let (bob, bobID) = try await server.tenantClient(label: "bob")
            defer { Task { await alice.close(); await bob.close() } }
            _ = try await Self.accept(agent, alice)
            _ = try await Self.accept(agent, bob)
            for key in ["a", "b"] {
                _ = try await alice.call("settings.set", params: ["key": .string(key), "value": 1])
                _ = try await bob.call("settings.set", params: ["key": .string(key), "value": 2])
            }
            // A delivered row leaves the outbox (schema/0032): one still waiting, not due for a
            // day, so the deletion has an outbox row of each tenant to remove or keep.
            for tenant in [aliceID, bobID] {
                _ = try await WalletFixture.asSuperuser(server.database) { session in
                    try session.execute(
                        """
                        INSERT INTO aerie.outbox (tenant_id, id, endpoint, envelope, next_attempt_at)
                        VALUES ($1::uuid, gen_random_uuid(), 'http://127.0.0.1:9/', '\\x00', now() + interval '1 day')
                        """,
                        [.text(tenant.rawValue)])
                }
            }
            let aliceBefore = try await Self.settledRows(server, aliceID)
            let bobBefore = try await Self.settledRows(server, bobID)
            #expect(Self.tenantTables.allSatisfy { (aliceBefore[$0] ?? 0) > 0 }, "\(aliceBefore)")

            let result = try await AdminTool(server: server).run(["tenant", "delete", aliceID.rawValue, "--yes"])
            #expect(result.status == 0, "\(result.stderr)")
            for table in Self.tenantTables {
                #expect(result.stdout.contains("  \(table): \(aliceBefore[table]!) rows"), "\(table): \(result.stdout)")
            }

            // Every table with a tenant_id column, as the catalog lists them (not only the known five).
            let leftovers = try await WalletFixture.asSuperuser(server.database) { session in
                let tables = try session.query(
                    "SELECT table_name FROM information_schema.columns WHERE table_schema = 'aerie' AND column_name = 'tenant_id'"
                ).allRows().compactMap { $0.first ?? nil }
                var left: [String: Int] = [:]
                for table in tables {
                    left[table] = try session.query(
                        "SELECT count(*) FROM aerie.\(table) WHERE tenant_id = $1::uuid", [.text(aliceID.rawValue)]).int(0, 0)
                }
                return left
            }
            #expect(Set(Self.tenantTables).isSubset(of: leftovers.keys), "\(leftovers)")
            #expect(leftovers.values.allSatisfy { $0 == 0 }, "\(leftovers)")
            #expect(try await Self.tenantRows(server, bobID) == bobBefore)
            #expect(try await bob.call("connections.list")["connections"]?.arrayValue?.count == 1)
            await expectCode("unauthenticated") { try await alice.call("connections.list") }
        }
    }
}

/// The delete plugin without a peer: errors, a connection still connecting, and the plugin off.
@Suite(.timeLimit(.minutes(10))) struct DeletePluginWiringTests {
    @Test func notFoundInvalidAndAConnectionStillConnecting() async throws {
        try await LiveServer.with(server: { $0.outbound.allowPrivateURLs = true; $0.delivery.enabled = false }) { server in
            let (alice, aliceID) = try await server.tenantClient(label: "alice")
            defer { Task { await alice.close() } }
            await expectCode("not_found") {
                try await alice.call("connections.delete", params: ["connectionId": .string(UUID().uuidString)])
            }
            await expectCode("invalid_params") { try await alice.call("connections.delete", params: ["connectionId": "nope"]) }

            let created = try await alice.call(
                "connections.createWithInvite", params: ["invitation": try DIDCommEndpointTests.deadInvitation()])
            let id = try #require(created["connectionId"]?.stringValue)
            let connected = try await alice.call("connections.connect", params: ["connectionId": .string(id)])
            let verkey = try #require(connected["pwVerkey"]?.stringValue)
            // A connection that does not know its peer yet takes handshake answers only.
            #expect(try await DeleteConnectionTests.postPing(to: verkey, server: server) == 400)

            // No peer key yet: nothing to notify, the delete goes ahead.
            let deleted = try await alice.call("connections.delete", params: ["connectionId": .string(id), "notify": true])
            #expect(deleted["notified"] == false)
            #expect(deleted["removed"] == ["connections": 1, "tenant_keys": 1, "mailbox": 0, "invitation_limits": 0, "oob_invitations": 0, "outbox": 1, "credential_exchanges": 0, "proof_exchanges": 0])
            #expect(try await DeleteConnectionTests.postPing(to: verkey, server: server) == 400)
            #expect(try await DeleteConnectionTests.tenantRows(server, aliceID).values.allSatisfy { $0 == 0 })
            await expectCode("not_found") { try await alice.call("connections.delete", params: ["connectionId": .string(id)]) }

            let discovered = try await alice.call("rpc.discover")
            let names = (discovered["methods"]?.arrayValue ?? []).compactMap { $0["name"]?.stringValue }
            #expect(names.contains("connections.delete"))
        }
    }

    /// The delete is the state machine's last move: the connection's event with state 6
    /// (deleted) reaches the tenant's push subscription, and a `connections.accept` waiting on
    /// the handshake ends at once with it instead of running to its timeout. Another tenant sees
    /// nothing of it: its first event is its own, made after the delete.
    @Test func deleteIsTheConnectionsLastStateChange() async throws {
        try await LiveServer.with(server: { $0.outbound.allowPrivateURLs = true; $0.delivery.enabled = false }) { server in
            let (alice, bob, aliceSeen, bobSeen) = try await MessagesPushTests.subscribedPair(server)
            defer { Task { await alice.close(); await bob.close() } }

            let invitation = try DIDCommEndpointTests.deadInvitation()
            async let accepted = alice.call(
                "connections.accept", params: ["invitation": invitation, "wait": true, "timeoutSeconds": 120])
            let requested = try await aliceSeen.wait(for: "connections.stateChanged", count: 2)
            #expect(requested.map { $0.params["state"] } == [1, 2])
            let id = try #require(requested.last?.params["connectionId"]?.stringValue)
            _ = try await alice.call("connections.delete", params: ["connectionId": .string(id)])

            let answer = try await accepted
            #expect(answer["connectionId"] == .string(id))
            #expect(answer["state"] == 6 && answer["stateName"] == "deleted", "\(answer)")
            let changes = try await aliceSeen.wait(for: "connections.stateChanged", count: 3)
            #expect(changes.last?.params == ["connectionId": .string(id), "state": 6, "stateName": "deleted"])
            await expectCode("not_found") { try await alice.call("connections.get", params: ["connectionId": .string(id)]) }

            let bobsOwn = try await bob.call("connections.createWithInvite", params: ["invitation": invitation])
            let bobFirst = try #require(try await bobSeen.wait(for: "connections.stateChanged").first)
            #expect(bobFirst.params["connectionId"] == bobsOwn["connectionId"], "\(bobSeen.all().map(\.params))")
        }
    }

    @Test func disabledDeletePluginLeavesTheMethodUnknown() async throws {
        try await LiveServer.with(plugins: ["connections"]) { server in
            let (alice, _) = try await server.tenantClient(label: "alice")
            defer { Task { await alice.close() } }
            do {
                _ = try await alice.call("connections.delete", params: ["connectionId": .string(UUID().uuidString)])
                Issue.record("expected -32601")
            } catch let error as AerieClientError {
                #expect(error.code == -32601)
            }
            _ = try await alice.call("connections.list")
        }
    }

    /// A new kind of connection data (here: settings named after the connection, standing in for
    /// a future table) is one more `ConnectionData` entry, removed in the same transaction and
    /// counted under its name.
    @Test func anotherKindOfConnectionDataIsOneMoreEntry() async throws {
        let linked = ConnectionData(kind: "linked_settings") { tx, record in
            try tx.settings.remove("link:\(record.id.uuidString.lowercased())") ? 1 : 0
        }
        // The connections plugin's state machine, from an instance of its own (the server's is
        // not reachable from here; the moves are the same).
        let connections = ConnectionsPlugin(
            fetcher: URLResolver(configuration: .init(), logger: Logger(label: "test")), sender: ConnectionSendService())
        let plugin = DeletePlugin(deletion: ConnectionDeletion(handshakes: connections.handshakes, extraData: [linked]))
        try await LiveServer.with(extraPlugins: [plugin], plugins: ["connections"], server: { $0.delivery.enabled = false }) { server in
            let (alice, _) = try await server.tenantClient(label: "alice")
            defer { Task { await alice.close() } }
            let created = try await alice.call(
                "connections.createWithInvite", params: ["invitation": try DIDCommEndpointTests.deadInvitation()])
            let id = try #require(created["connectionId"]?.stringValue)
            _ = try await alice.call("settings.set", params: ["key": .string("link:\(id)"), "value": true])
            _ = try await alice.call("settings.set", params: ["key": "other", "value": true])
            let deleted = try await alice.call("connections.delete", params: ["connectionId": .string(id)])
            #expect(deleted["removed"] == ["connections": 1, "tenant_keys": 0, "mailbox": 0, "invitation_limits": 0, "oob_invitations": 0, "outbox": 0, "linked_settings": 1, "credential_exchanges": 0, "proof_exchanges": 0])
            await expectCode("not_found") { try await alice.call("settings.get", params: ["key": .string("link:\(id)")]) }
            #expect(try await alice.call("settings.get", params: ["key": "other"])["value"] == true)
        }
    }
}
