import AerieClient
import AerieCore
import AerieCrypto
@testable import AerieServer
import AerieStore
import AerieTesting
import Foundation
import Testing

/// Strangers holding a public invitation cannot exhaust a tenant (docs/SECURITY.md): a Request
/// that cannot be answered is refused (400) and not stored; Requests past an invitation's
/// `maxUses`/`expiresAt`, past the tenant's pending connections or faster than the rate limits
/// are refused with nothing stored; an established peer's message is still taken while strangers
/// flood; refusals are counted on the invitation. Strangers are played by the test with keys of
/// its own and an independent packer; two tenants in each test.
@Suite(.timeLimit(.minutes(10))) struct StrangerLimitsTests {
    typealias Invitee = InviterTests.Invitee

    /// A stranger with a fresh key whose DIDDoc names an endpoint nothing answers.
    static func stranger() -> Invitee {
        Invitee(key: .generate(), endpoint: "http://127.0.0.1:9")
    }

    /// A connections/1.0 Request whose `connection` is empty: it cannot be answered.
    static func malformed(invitationId: String) -> JSONValue {
        let id = UUID().uuidString.lowercased()
        return [
            "@type": "https://didcomm.org/connections/1.0/request", "@id": .string(id), "label": "junk", "connection": [:],
            "~thread": ["thid": .string(id), "pthid": .string(invitationId)],
        ]
    }

    struct OpenInvitation {
        let connectionId: String
        let key: String
        let id: String
    }

    static func invitation(_ client: AerieClient, _ params: JSONValue = ["multiUse": true]) async throws -> OpenInvitation {
        let created = try await client.call("connections.createInvitation", params: params)
        return OpenInvitation(
            connectionId: try #require(created["connectionId"]?.stringValue), key: try InviterTests.invitationKey(created),
            id: try #require(created["invitation"]?["@id"]?.stringValue))
    }

    static func post(_ message: JSONValue, from invitee: Invitee, to invitation: OpenInvitation, port: Int) async throws -> Int {
        try await DIDCommEndpointTests.post(try invitee.pack(message, to: invitation.key), to: port)
    }

    static func get(_ client: AerieClient, _ id: String) async throws -> JSONValue {
        try await client.call("connections.get", params: ["connectionId": .string(id)])
    }

    @Test func aRequestThatCannotBeAnsweredIsRefusedAndNotStored() async throws {
        try await LiveServer.with(server: {
            $0.delivery.enabled = false
            $0.outbound.allowPrivateURLs = true
        }) { server in
            let (alice, aliceID) = try await server.tenantClient(label: "alice")
            defer { Task { await alice.close() } }
            let invitation = try await Self.invitation(alice)
            let before = try await DIDCommEndpointTests.mailboxCount(server, tenant: aliceID)
            var statuses: [Int] = []
            for _ in 0..<5 {
                let stranger = Self.stranger()
                statuses.append(try await Self.post(Self.malformed(invitationId: invitation.id), from: stranger, to: invitation, port: server.didcommPort))
            }
            // A Request naming another key than its sender's: refused as well.
            let liar = Self.stranger()
            statuses.append(try await Self.post(
                liar.request(invitationId: invitation.id, naming: Ed25519KeyPair.generate().verkeyBase58), from: liar, to: invitation,
                port: server.didcommPort))
            #expect(statuses == Array(repeating: 400, count: 6), "\(statuses)")
            #expect(try await DIDCommEndpointTests.mailboxCount(server, tenant: aliceID) == before)
            #expect(try await OutboundAddressPolicyTests.count("connections", tenant: aliceID, server) == 1)
            let view = try await Self.get(alice, invitation.connectionId)
            #expect(view["refusedRequests"] == ["malformed": 6], "\(view)")
            #expect(view["uses"] == 0)
            #expect(view["maxUses"] == nil)

            // A well-formed one is still answered, and counted as a use.
            #expect(try await Self.post(Self.stranger().request(invitationId: invitation.id), from: Self.stranger(), to: invitation,
                                        port: server.didcommPort) == 400, "a Request packed by another key than it names")
            let invitee = Self.stranger()
            #expect(try await Self.post(invitee.request(invitationId: invitation.id), from: invitee, to: invitation, port: server.didcommPort) == 202)
            let after = try await Self.get(alice, invitation.connectionId)
            #expect(after["uses"] == 1)
            #expect(after["refusedRequests"] == ["malformed": 7])
        }
    }

    /// With a small mailbox, a flood of malformed Requests and of well-formed ones naming an
    /// unreachable endpoint leaves the established peer's message taken: the malformed are not
    /// stored, the well-formed stop at the pending limit. Another tenant's invitation is not
    /// affected by the first tenant's pending connections.
    @Test func aFloodOfStrangersLeavesRoomForTheEstablishedPeer() async throws {
        try await LiveServer.with(server: {
            $0.delivery.enabled = false
            $0.outbound.allowPrivateURLs = true
            $0.database.quotas = DatabaseConfiguration.Quotas(mailboxMessages: 12, mailboxBytes: 0, outboxPending: 0)
            $0.connections.pendingMax = 5
            $0.connections.invitationRequestsPerMinute = 0
            $0.connections.senderRequestsPerMinute = 0
        }) { server in
            let (alice, aliceID) = try await server.tenantClient(label: "alice")
            let (bob, bobID) = try await server.tenantClient(label: "bob")
            defer { Task { await alice.close(); await bob.close() } }
            let peer = try await TestPeer.connect(alice)
            let invitation = try await Self.invitation(alice)
            let port = server.didcommPort
            let before = try await DIDCommEndpointTests.mailboxCount(server, tenant: aliceID)
            let queued = try await OutboundAddressPolicyTests.count("outbox", tenant: aliceID, server)

            let malformed = try await withThrowingTaskGroup(of: Int.self) { group in
                for _ in 0..<40 {
                    group.addTask { try await Self.post(Self.malformed(invitationId: invitation.id), from: Self.stranger(), to: invitation, port: port) }
                }
                return try await group.reduce(into: []) { $0.append($1) }
            }
            #expect(malformed.allSatisfy { $0 == 400 }, "\(malformed)")
            #expect(try await DIDCommEndpointTests.mailboxCount(server, tenant: aliceID) == before)

            var wellFormed: [Int] = []
            for _ in 0..<20 {
                let invitee = Self.stranger()
                wellFormed.append(try await Self.post(invitee.request(invitationId: invitation.id), from: invitee, to: invitation, port: port))
            }
            #expect(wellFormed == Array(repeating: 202, count: 5) + Array(repeating: 429, count: 15), "\(wellFormed)")
            #expect(try await DIDCommEndpointTests.mailboxCount(server, tenant: aliceID) == before + 5)
            // Five Responses wait for a dead endpoint, no more.
            #expect(try await OutboundAddressPolicyTests.count("outbox", tenant: aliceID, server) == queued + 5)

            // The established peer's message is taken and reaches the tenant.
            let content = "still here \(UUID().uuidString.prefix(8))"
            #expect(try await DIDCommEndpointTests.post(try peer.pack(SenderAuthenticationTests.basic("peer-1", content)), to: port) == 202)
            #expect(try await InviterTests.receives(alice, content: content))

            let view = try await Self.get(alice, invitation.connectionId)
            #expect(view["uses"] == 5)
            #expect(view["refusedRequests"] == ["malformed": 40, "pending_limit": 15], "\(view)")

            // Bob's pending connections are his own.
            let bobs = try await Self.invitation(bob)
            let invitee = Self.stranger()
            #expect(try await Self.post(invitee.request(invitationId: bobs.id), from: invitee, to: bobs, port: port) == 202)
            #expect(try await OutboundAddressPolicyTests.count("connections", tenant: bobID, server) == 2)
        }
    }

    /// The same flood with ACA-Py 1.2.7 as the established peer, connected through a single-use
    /// invitation of the tenant's: with a mailbox of 10 messages, 30 strangers' Requests leave it
    /// room, and its basic message arrives (and the tenant's reaches it).
    @Test func acapyStaysReachableWhileStrangersFlood() async throws {
        let agent = try await ACAPyAgent.start()
        do {
            try await LiveServer.with(server: {
                $0.outbound.allowPrivateURLs = true
                $0.database.quotas = DatabaseConfiguration.Quotas(mailboxMessages: 10, mailboxBytes: 0, outboxPending: 0)
                $0.connections.pendingMax = 3
                $0.connections.invitationRequestsPerMinute = 0
                $0.connections.senderRequestsPerMinute = 0
            }) { server in
                let (alice, aliceID) = try await server.tenantClient(label: "alice")
                defer { Task { await alice.close() } }
                let created = try await alice.call("connections.createInvitation", params: ["label": "Aerie Alice"])
                let connectionId = try #require(created["connectionId"]?.stringValue)
                let theirs = try await agent.admin("POST", "/connections/receive-invitation?auto_accept=true", body: created["invitation"])
                let acapyConnection = try #require(theirs["connection_id"]?.stringValue)
                _ = try await agent.waitForConnection(acapyConnection, states: ["active", "completed"])
                _ = try await InviterTests.waitForState(alice, connectionId, 4)

                let invitation = try await Self.invitation(alice)
                let port = server.didcommPort
                var statuses: [Int] = []
                for _ in 0..<20 {
                    statuses.append(try await Self.post(Self.malformed(invitationId: invitation.id), from: Self.stranger(), to: invitation, port: port))
                }
                for _ in 0..<10 {
                    let invitee = Self.stranger()
                    statuses.append(try await Self.post(invitee.request(invitationId: invitation.id), from: invitee, to: invitation, port: port))
                }
                #expect(statuses == Array(repeating: 400, count: 20) + Array(repeating: 202, count: 3) + Array(repeating: 429, count: 7), "\(statuses)")
                #expect(try await DIDCommEndpointTests.mailboxCount(server, tenant: aliceID) < 10)
                try await InviterTests.exchangeBasicMessages(alice, connectionId: connectionId, agent: agent, acapyConnection: acapyConnection)
            }
        } catch {
            print("ACA-Py log:\n\(agent.log().suffix(4000))")
            await agent.stop()
            throw error
        }
        await agent.stop()
    }

    /// A stranger's Request that fails by something that can pass (here the tenant's outbox is
    /// full) is answered 503 with nothing stored, not kept unhandled; sent again once there is
    /// room, the same envelope is answered.
    @Test func aTransientFailureOfAStrangersRequestStoresNothing() async throws {
        try await LiveServer.with(server: {
            $0.delivery.enabled = false
            $0.outbound.allowPrivateURLs = true
            $0.database.quotas = DatabaseConfiguration.Quotas(mailboxMessages: 0, mailboxBytes: 0, outboxPending: 1)
        }) { server in
            let (alice, aliceID) = try await server.tenantClient(label: "alice")
            defer { Task { await alice.close() } }
            let invitation = try await Self.invitation(alice)
            let port = server.didcommPort
            let first = Self.stranger()
            #expect(try await Self.post(first.request(invitationId: invitation.id), from: first, to: invitation, port: port) == 202)
            let mailbox = try await DIDCommEndpointTests.mailboxCount(server, tenant: aliceID)
            let second = Self.stranger()
            let envelope = try second.pack(second.request(invitationId: invitation.id), to: invitation.key)
            #expect(try await DIDCommEndpointTests.post(envelope, to: port) == 503)
            #expect(try await DIDCommEndpointTests.mailboxCount(server, tenant: aliceID) == mailbox)
            #expect(try await OutboundAddressPolicyTests.count("connections", tenant: aliceID, server) == 2)
            let view = try await Self.get(alice, invitation.connectionId)
            #expect(view["uses"] == 1)
            #expect(view["refusedRequests"] == [:])

            _ = try await WalletFixture.asSuperuser(server.database) { session in
                try session.execute("DELETE FROM aerie.outbox WHERE tenant_id = $1::uuid", [.text(aliceID.rawValue)])
            }
            #expect(try await DIDCommEndpointTests.post(envelope, to: port) == 202)
            #expect(try await OutboundAddressPolicyTests.count("connections", tenant: aliceID, server) == 3)
        }
    }

    /// The rate limits cut a flood before the handler runs: nothing of it is stored or counted on
    /// the row. A sender's limit and an invitation's are per tenant.
    @Test func theRateLimitsCutAFloodBeforeAnythingIsStored() async throws {
        try await LiveServer.with(server: {
            $0.delivery.enabled = false
            $0.outbound.allowPrivateURLs = true
            $0.connections.invitationRequestsPerMinute = 5
            $0.connections.senderRequestsPerMinute = 2
        }) { server in
            let (alice, aliceID) = try await server.tenantClient(label: "alice")
            let (bob, _) = try await server.tenantClient(label: "bob")
            defer { Task { await alice.close(); await bob.close() } }
            let invitation = try await Self.invitation(alice)
            let port = server.didcommPort
            let before = try await DIDCommEndpointTests.mailboxCount(server, tenant: aliceID)
            let loud = Self.stranger()
            var statuses: [Int] = []
            for _ in 0..<4 {
                statuses.append(try await Self.post(Self.malformed(invitationId: invitation.id), from: loud, to: invitation, port: port))
            }
            #expect(statuses == [400, 400, 429, 429], "a sender's limit: \(statuses)")
            statuses = []
            for _ in 0..<6 {
                statuses.append(try await Self.post(Self.malformed(invitationId: invitation.id), from: Self.stranger(), to: invitation, port: port))
            }
            #expect(statuses == [400, 400, 400, 429, 429, 429], "the invitation's limit: \(statuses)")
            #expect(try await DIDCommEndpointTests.mailboxCount(server, tenant: aliceID) == before)
            // Only the refusals the handler made are counted on the invitation (the others in metrics).
            #expect(try await Self.get(alice, invitation.connectionId)["refusedRequests"] == ["malformed": 5])

            // Bob's invitation, and the loud sender at Bob, have buckets of their own.
            let bobs = try await Self.invitation(bob)
            #expect(try await Self.post(loud.request(invitationId: bobs.id), from: loud, to: bobs, port: port) == 202)
        }
    }

    @Test func maxUsesHoldsWhenRequestsRaceAndExpiryRefuses() async throws {
        try await LiveServer.with(server: {
            $0.delivery.enabled = false
            $0.outbound.allowPrivateURLs = true
        }) { server in
            let (alice, aliceID) = try await server.tenantClient(label: "alice")
            let (bob, bobID) = try await server.tenantClient(label: "bob")
            defer { Task { await alice.close(); await bob.close() } }
            let port = server.didcommPort
            for round in 0..<3 {
                let invitation = try await Self.invitation(alice, ["multiUse": true, "maxUses": 1])
                let connectionsBefore = try await OutboundAddressPolicyTests.count("connections", tenant: aliceID, server)
                let (first, second) = (Self.stranger(), Self.stranger())
                async let a = Self.post(first.request(invitationId: invitation.id), from: first, to: invitation, port: port)
                async let b = Self.post(second.request(invitationId: invitation.id), from: second, to: invitation, port: port)
                let statuses = try await [a, b].sorted()
                #expect(statuses == [202, 400], "round \(round): \(statuses)")
                #expect(try await OutboundAddressPolicyTests.count("connections", tenant: aliceID, server) == connectionsBefore + 1)
                let view = try await Self.get(alice, invitation.connectionId)
                #expect(view["maxUses"] == 1)
                #expect(view["uses"] == 1)
                #expect(view["refusedRequests"] == ["used_up": 1], "\(view)")
            }

            let expiresAt = Date().addingTimeInterval(3600).formatted(Date.ISO8601FormatStyle())
            let expiring = try await Self.invitation(alice, ["multiUse": true, "expiresAt": .string(expiresAt)])
            #expect(try await Self.get(alice, expiring.connectionId)["expiresAt"] == .string(expiresAt))
            let invitee = Self.stranger()
            #expect(try await Self.post(invitee.request(invitationId: expiring.id), from: invitee, to: expiring, port: port) == 202)
            // An hour passes.
            _ = try await WalletFixture.asSuperuser(server.database) { session in
                try session.execute(
                    "UPDATE aerie.invitation_limits SET expires_at = now() - interval '1 second' WHERE tenant_id = $1::uuid AND connection_id = $2::uuid",
                    [.text(aliceID.rawValue), .text(expiring.connectionId)])
            }
            let late = Self.stranger()
            #expect(try await Self.post(late.request(invitationId: expiring.id), from: late, to: expiring, port: port) == 400)
            let view = try await Self.get(alice, expiring.connectionId)
            #expect(view["uses"] == 1)
            #expect(view["refusedRequests"] == ["expired": 1])

            // Bob's invitation knows nothing of Alice's uses.
            let bobs = try await Self.invitation(bob, ["multiUse": true, "maxUses": 2])
            for _ in 0..<2 {
                let invitee = Self.stranger()
                #expect(try await Self.post(invitee.request(invitationId: bobs.id), from: invitee, to: bobs, port: port) == 202)
            }
            #expect(try await OutboundAddressPolicyTests.count("connections", tenant: bobID, server) == 3)
        }
    }

    @Test func bothCreateInvitationMethodsTakeLimitsAndCheckThem() async throws {
        try await LiveServer.with(server: { $0.delivery.enabled = false }) { server in
            let (alice, _) = try await server.tenantClient(label: "alice")
            defer { Task { await alice.close() } }
            for method in ["connections.createInvitation", "outOfBand.createInvitation"] {
                for bad: JSONValue in [["maxUses": 0], ["maxUses": 2_000_000], ["expiresAt": "tomorrow"], ["expiresAt": "2001-01-01T00:00:00Z"]] {
                    let error = await OutboundAddressPolicyTests.rpcError { try await alice.call(method, params: bad) }
                    #expect(error?.stableCode == "invalid_params", "\(method) \(bad): \(String(describing: error))")
                }
                let created = try await alice.call(
                    method, params: ["multiUse": true, "maxUses": 3, "expiresAt": "2100-01-01T00:00:00.500Z"])
                let view = try await Self.get(alice, try #require(created["connectionId"]?.stringValue))
                #expect(view["maxUses"] == 3, "\(method): \(view)")
                #expect(view["uses"] == 0)
                #expect(view["expiresAt"] == "2100-01-01T00:00:00Z")
                #expect(view["refusedRequests"] == [:])
            }
            let error = await OutboundAddressPolicyTests.rpcError {
                try await alice.call("outOfBand.createInvitation", params: ["useDid": true, "maxUses": 3])
            }
            #expect(error?.stableCode == "invalid_params")
        }
    }

    /// The real server process, configured by its environment: the pending limit and the sender
    /// rate hold, the established peer's message is taken with the mailbox nearly full of
    /// nothing but its own, and `/metrics` counts the refusals by reason.
    @Test func theServerProcessTakesItsLimitsFromTheEnvironment() async throws {
        try await OperatorEndpointTests.withServer(environment: [
            "AERIE_MAILBOX_MAX_MESSAGES": "8", "AERIE_PENDING_CONNECTIONS_MAX": "2",
            "AERIE_INVITATION_REQUESTS_PER_MINUTE": "1000", "AERIE_SENDER_REQUESTS_PER_MINUTE": "1",
        ]) { server in
            let alice = try await server.createTenant(label: "alice-strangers")
            let bob = try await server.createTenant(label: "bob-strangers")
            let aliceClient = try await server.tenantClient(token: alice.token)
            let bobClient = try await server.tenantClient(token: bob.token)
            defer { Task { await aliceClient.close(); await bobClient.close() } }
            let peer = try await TestPeer.connect(aliceClient)
            let invitation = try await Self.invitation(aliceClient)
            let port = server.didcommPort

            var malformed: [Int] = []
            for _ in 0..<10 {
                malformed.append(try await Self.post(Self.malformed(invitationId: invitation.id), from: Self.stranger(), to: invitation, port: port))
            }
            #expect(malformed == Array(repeating: 400, count: 10), "\(malformed)")
            var wellFormed: [Int] = []
            let invitees = (0..<5).map { _ in Self.stranger() }
            for invitee in invitees {
                wellFormed.append(try await Self.post(invitee.request(invitationId: invitation.id), from: invitee, to: invitation, port: port))
            }
            #expect(wellFormed == [202, 202, 429, 429, 429], "\(wellFormed)")
            // The first invitee again, within the minute: its own limit.
            #expect(try await Self.post(invitees[0].request(invitationId: invitation.id), from: invitees[0], to: invitation, port: port) == 429)

            let content = "from the peer \(UUID().uuidString.prefix(8))"
            #expect(try await DIDCommEndpointTests.post(try peer.pack(SenderAuthenticationTests.basic("peer-1", content)), to: port) == 202)
            #expect(try await InviterTests.receives(aliceClient, content: content))

            // Bob's invitation: his own pending connections and buckets.
            let bobs = try await Self.invitation(bobClient)
            let invitee = Self.stranger()
            #expect(try await Self.post(invitee.request(invitationId: bobs.id), from: invitee, to: bobs, port: port) == 202)

            let metrics = try await RawLineClient.httpGet(port: server.metricsPort, path: "/metrics").body
            for (reason, count) in [("malformed", 10), ("pending_limit", 3), ("sender_rate", 1)] {
                #expect(metrics.contains("aerie_invitation_refusals_total{reason=\"\(reason)\"} \(count)"), "\(reason)")
            }
            #expect(try await Self.get(aliceClient, invitation.connectionId)["refusedRequests"] == ["malformed": 10, "pending_limit": 3])
        }
    }

    @Test func rateBucketsRefillAndStayBounded() {
        let limits = RequestRateLimits(.init(perInvitation: 3, perSender: 2))
        let tenant = TenantID.random()
        let invitation = UUID()
        let start = ContinuousClock.now
        #expect(limits.admit(tenant: tenant, invitation: invitation, sender: "a", now: start) == nil)
        #expect(limits.admit(tenant: tenant, invitation: invitation, sender: "a", now: start) == nil)
        #expect(limits.admit(tenant: tenant, invitation: invitation, sender: "a", now: start) == .senderRate)
        #expect(limits.admit(tenant: tenant, invitation: invitation, sender: "b", now: start) == nil)
        #expect(limits.admit(tenant: tenant, invitation: invitation, sender: "c", now: start) == .invitationRate)
        // Another tenant's buckets are its own.
        #expect(limits.admit(tenant: .random(), invitation: invitation, sender: "a", now: start) == nil)
        // A minute refills both.
        #expect(limits.admit(tenant: tenant, invitation: invitation, sender: "a", now: start + .seconds(60)) == nil)

        let many = RequestRateLimits(.init(perInvitation: 0, perSender: 1))
        for index in 0..<(RequestRateLimits.maxBuckets + 50) {
            _ = many.admit(tenant: tenant, invitation: invitation, sender: "key-\(index)", now: start)
        }
        #expect(many.bucketCount.senders == RequestRateLimits.maxBuckets)
        // Once the buckets have refilled, a sweep makes room.
        #expect(many.admit(tenant: tenant, invitation: invitation, sender: "late", now: start + .seconds(120)) == nil)
        #expect(many.bucketCount.senders == 1)
    }
}
