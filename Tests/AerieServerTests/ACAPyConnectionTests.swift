import AerieClient
import AerieCore
import AerieCrypto
import AerieTesting
import Foundation
import Testing

/// RFC 0160 end to end against an independent inviter: ACA-Py 1.2.7 creates the invitation,
/// Aerie accepts it through JSON-RPC, sends the Request over HTTP, receives and verifies the
/// Response on its DIDComm endpoint, and pings so ACA-Py also reaches `active`.
///
/// A missing ACA-Py venv fails these tests (./scripts/test installs it).
@Suite(.serialized, .timeLimit(.minutes(10))) struct ACAPyConnectionTests {
    static func withAerieAndACAPy(
        publicEndpoint: String? = nil, agentArguments: [String] = [], _ body: (LiveServer, ACAPyAgent) async throws -> Void
    ) async throws {
        let agent = try await ACAPyAgent.start(extraArguments: agentArguments)
        do {
            try await LiveServer.with(server: {
                $0.outbound.allowPrivateURLs = true
                $0.didcomm.publicEndpoint = publicEndpoint
            }) { server in
                try await body(server, agent)
            }
        } catch {
            print("ACA-Py log:\n\(agent.log().suffix(4000))")
            await agent.stop()
            throw error
        }
        await agent.stop()
    }

    @Test func acceptInvitationURLUntilBothSidesAreActive() async throws {
        try await Self.withAerieAndACAPy { server, agent in
            let created = try await agent.admin("POST", "/connections/create-invitation", body: [:])
            let url = try #require(created["invitation_url"]?.stringValue)
            let acapyConnection = try #require(created["connection_id"]?.stringValue)

            let (tenant, _) = try await server.tenantClient(label: "alice")
            defer { Task { await tenant.close() } }
            let accepted = try await tenant.call(
                "connections.accept", params: ["url": .string(url), "wait": true, "timeoutSeconds": 30, "label": "Alice"])
            #expect(accepted["state"] == 4, "\(accepted)")
            #expect(accepted["stateName"] == "accepted")
            let connectionId = try #require(accepted["connectionId"]?.stringValue)
            let pwDid = try #require(accepted["pwDid"]?.stringValue)

            let theirs = try await agent.waitForConnection(acapyConnection, states: ["active", "completed"])
            #expect(theirs["their_did"]?.stringValue.map(PeerDID4.shortForm) == pwDid)
            #expect(theirs["their_label"]?.stringValue == "Alice")
            #expect(accepted["theirDid"]?.stringValue == theirs["my_did"]?.stringValue)

            let fetched = try await tenant.call("connections.get", params: ["connectionId": .string(connectionId)])
            #expect(fetched["state"] == 4)
            #expect(try await tenant.call("connections.getPwDid", params: ["connectionId": .string(connectionId)])["pwDid"]?.stringValue == pwDid)
            let updated = try await tenant.call("connections.updateState", params: ["connectionId": .string(connectionId)])
            #expect(updated["state"] == 4)

            // The same invitation again: the stored connection, not a new one.
            let again = try await tenant.call("connections.accept", params: ["url": .string(url)])
            #expect(again["connectionId"]?.stringValue == connectionId)
            #expect(again["existing"] == true)
            let existing = try await tenant.call("connections.findExisting", params: ["url": .string(url)])
            #expect(existing["connectionId"]?.stringValue == connectionId)
            #expect(existing["match"] == "id")
            let list = try await tenant.call("connections.list", params: ["state": "accepted"])
            #expect(list["connections"]?.arrayValue?.count == 1)
        }
    }

    /// Two servers on one database, as behind a load balancer: the accept waits on one while
    /// ACA-Py's Response reaches the other (the first's Requests name the second's endpoint). The
    /// state the second commits ends the first's wait, woken through the LISTEN every server
    /// holds; both sides reach active.
    @Test func aWaitOnOneServerEndsWithTheResponseAnotherServerHandled() async throws {
        try await Self.withAerieAndACAPy { server, agent in
            let waiting = try await server.sibling { $0.didcomm.publicEndpoint = "http://127.0.0.1:\(server.didcommPort)" }
            do {
                let created = try await agent.admin("POST", "/connections/create-invitation", body: [:])
                let url = try #require(created["invitation_url"]?.stringValue)
                let acapyConnection = try #require(created["connection_id"]?.stringValue)
                let (tenant, _) = try await waiting.tenantClient(label: "alice")
                defer { Task { await tenant.close() } }
                let accepted = try await tenant.call(
                    "connections.accept", params: ["url": .string(url), "wait": true, "timeoutSeconds": 30])
                #expect(accepted["state"] == 4, "\(accepted)")
                let theirs = try await agent.waitForConnection(acapyConnection, states: ["active", "completed"])
                #expect(theirs["their_did"] == accepted["pwDid"])
            } catch {
                try? await waiting.stop()
                throw error
            }
            try await waiting.stop()
        }
    }

    /// The step-by-step calls of the seed (createWithInvite, connect, updateState) with a JSON
    /// invitation.
    @Test func stepByStepWithJSONInvitation() async throws {
        try await Self.withAerieAndACAPy { server, agent in
            let created = try await agent.admin("POST", "/connections/create-invitation", body: [:])
            let invitation = try #require(created["invitation"])
            let acapyConnection = try #require(created["connection_id"]?.stringValue)

            let (tenant, _) = try await server.tenantClient(label: "bob")
            defer { Task { await tenant.close() } }
            let record = try await tenant.call("connections.createWithInvite", params: ["invitation": invitation])
            #expect(record["state"] == 1)
            #expect(record["label"] == "ACA-Py Inviter")
            let connectionId = try #require(record["connectionId"]?.stringValue)
            let connected = try await tenant.call("connections.connect", params: ["connectionId": .string(connectionId)])
            #expect(connected["state"] == 2)
            #expect(connected["pwDid"]?.stringValue != nil)

            var state: JSONValue? = nil
            for _ in 0..<150 {
                state = try await tenant.call("connections.updateState", params: ["connectionId": .string(connectionId)])["state"]
                if state == 4 { break }
                try await Task.sleep(for: .milliseconds(100))
            }
            #expect(state == 4)
            _ = try await agent.waitForConnection(acapyConnection, states: ["active", "completed"])
        }
    }
}

extension ACAPyConnectionTests {
    /// An out-of-band invitation offering the connections/1.0 handshake (did:key recipient keys
    /// in an inline service): the same Request/Response, with `pthid` the out-of-band `@id`.
    @Test func outOfBandInvitationWithConnectionsHandshake() async throws {
        try await Self.withAerieAndACAPy { server, agent in
            let created = try await agent.admin(
                "POST", "/out-of-band/create-invitation",
                body: ["handshake_protocols": ["https://didcomm.org/connections/1.0"], "use_public_did": false])
            let url = try #require(created["invitation_url"]?.stringValue, "\(created)")
            let (tenant, _) = try await server.tenantClient(label: "erin")
            defer { Task { await tenant.close() } }
            let accepted = try await tenant.call("connections.accept", params: ["url": .string(url), "wait": true])
            #expect(accepted["state"] == 4, "\(accepted)")
            #expect(accepted["invitationKind"] == "out-of-band")
            let dids = try await Self.activeTheirDids(agent, including: [accepted["pwDid"]?.stringValue ?? "-"])
            #expect(dids.contains(accepted["pwDid"]?.stringValue ?? "-"), "\(dids)")
        }
    }

    /// The Request is enqueued while this process does not deliver (as if it stopped right after
    /// the commit); after a restart on the same database the outbox sends it, the Response is
    /// verified with the invitation key, and the connection is accepted with the pairwise key
    /// made before the restart.
    @Test func pendingRequestIsSentAfterARestart() async throws {
        let agent = try await ACAPyAgent.start()
        var current: LiveServer? = nil
        do {
            let first = try await LiveServer.start(server: {
                $0.outbound.allowPrivateURLs = true
                $0.delivery.enabled = false
            })
            current = first
            let created = try await agent.admin("POST", "/connections/create-invitation", body: [:])
            let url = try #require(created["invitation_url"]?.stringValue)
            let (tenant, doraID) = try await first.tenantClient(label: "dora")
            let accepted = try await tenant.call("connections.accept", params: ["url": .string(url)])
            #expect(accepted["state"] == 2)
            let id = try #require(accepted["connectionId"]?.stringValue)
            let pwDid = accepted["pwDid"]
            await tenant.close()

            let second = try await first.restarted { $0.delivery.enabled = true }
            current = second
            // A session on the new process (the test never kept the token: rotate it).
            let admin = try await second.adminClient()
            let rotated = try await admin.call("admin.tenants.rotateToken", params: ["tenantId": .string(doraID.rawValue)])
            await admin.close()
            let again = try await second.client()
            try await again.authenticate(token: try #require(rotated["token"]?.stringValue))
            var state: JSONValue = .null
            for _ in 0..<150 {
                state = try await again.call("connections.get", params: ["connectionId": .string(id)])
                if state["state"] == 4 { break }
                try await Task.sleep(for: .milliseconds(100))
            }
            #expect(state["state"] == 4, "\(state)")
            #expect(state["pwDid"] == pwDid)
            await again.close()
        } catch {
            print("ACA-Py log:\n\(agent.log().suffix(4000))")
            if let current { try? await current.stop() }
            await agent.stop()
            throw error
        }
        if let current { try await current.stop() }
        await agent.stop()
    }

    /// With `~transport.return_route: all` the Response comes back on the HTTP response of our
    /// Request: the endpoint Aerie advertises here is unreachable, so it can come no other way.
    @Test func responseOnTheReturnRoute() async throws {
        try await Self.withAerieAndACAPy(publicEndpoint: "http://127.0.0.1:9/") { server, agent in
            let created = try await agent.admin("POST", "/connections/create-invitation", body: [:])
            let url = try #require(created["invitation_url"]?.stringValue)
            let (tenant, _) = try await server.tenantClient(label: "carol")
            defer { Task { await tenant.close() } }
            let accepted = try await tenant.call(
                "connections.accept", params: ["url": .string(url), "wait": true, "timeoutSeconds": 20, "returnRoute": true])
            #expect(accepted["state"] == 4, "\(accepted)")
            #expect(accepted["theirEndpoint"]?.stringValue == agent.endpoint)
        }
    }

    /// Two tenants accept one multi-use invitation at the same time: two connections, each
    /// accepted, each with its own pairwise DID, neither visible to the other.
    @Test func twoTenantsAcceptOneMultiUseInvitationAtOnce() async throws {
        try await Self.withAerieAndACAPy { server, agent in
            let created = try await agent.admin("POST", "/connections/create-invitation?multi_use=true", body: [:])
            let url = try #require(created["invitation_url"]?.stringValue)
            let (alice, _) = try await server.tenantClient(label: "alice")
            let (bob, _) = try await server.tenantClient(label: "bob")
            defer { Task { await alice.close(); await bob.close() } }
            async let a = alice.call("connections.accept", params: ["url": .string(url), "wait": true])
            async let b = bob.call("connections.accept", params: ["url": .string(url), "wait": true])
            let (ra, rb) = try await (a, b)
            #expect(ra["state"] == 4, "\(ra)")
            #expect(rb["state"] == 4, "\(rb)")
            #expect(ra["pwDid"] != rb["pwDid"])
            #expect(ra["theirDid"] != rb["theirDid"])
            let aId = try #require(ra["connectionId"]?.stringValue)
            do {
                _ = try await bob.call("connections.get", params: ["connectionId": .string(aId)])
                Issue.record("bob must not see alice's connection")
            } catch let error as AerieClientError {
                #expect(error.code == -32004)
            }
            let expected: Set = [ra["pwDid"]?.stringValue ?? "", rb["pwDid"]?.stringValue ?? ""]
            let dids = try await Self.activeTheirDids(agent, including: expected)
            #expect(dids.isSuperset(of: expected))
        }
    }
}

extension ACAPyConnectionTests {
    /// The peer DIDs of ACA-Py's active connections, once they include `expected` (ACA-Py turns
    /// active on our trust ping, which is delivered after Aerie already answered) or after 15 s.
    static func activeTheirDids(_ agent: ACAPyAgent, including expected: Set<String>) async throws -> Set<String> {
        var dids: Set<String> = []
        for _ in 0..<75 {
            let theirs = try await agent.admin("GET", "/connections?state=active")
            dids = Set((theirs["results"]?.arrayValue ?? []).compactMap { $0["their_did"]?.stringValue })
            if dids.isSuperset(of: expected) { break }
            try await Task.sleep(for: .milliseconds(200))
        }
        return dids
    }
}

extension JSONValue {
    var arrayValue: [JSONValue]? {
        if case .array(let items) = self { return items }
        return nil
    }
}
