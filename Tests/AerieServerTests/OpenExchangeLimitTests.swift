import AerieClient
import AerieCore
import AerieCrypto
import AerieTesting
import Foundation
import Testing

/// `AERIE_OPEN_EXCHANGES_PER_CONNECTION` and `_PER_TENANT` on the real server and a real
/// PostgreSQL, with hand-made peers (`TestPeer`, `PeerInbox`) of two tenants: an established peer
/// holds at most the limit's worth of open offers (and, apart, of proof requests); the next is
/// answered with a `too-many-open-exchanges` problem report naming the limit and nothing of it is
/// stored; the open ones stay; answering one makes room; concurrent offers cannot pass the limit
/// together; an out-of-band invitation carrying one more answers `quota_exceeded`; and one tenant
/// at its limit leaves the other alone.
@Suite(.serialized, .timeLimit(.minutes(10))) struct OpenExchangeLimitTests {
    static let issuer = "did:key:z6MkhaXgBZDvotDkL5257faiztiGiC2QtKLGpbnnEGta2doK"

    static func offers(_ tenant: AerieClient) async throws -> [JSONValue] {
        try await tenant.call("credentials.exchanges", params: [:])["exchanges"]?.arrayValue ?? []
    }

    static func threads(_ tenant: AerieClient) async throws -> Set<String> {
        Set(try await offers(tenant).compactMap { $0["threadId"]?.stringValue })
    }

    /// Posts the peer's offer `id` and waits until the tenant recorded it.
    static func offer(_ id: String, from peer: TestPeer, to tenant: AerieClient, port: Int) async throws {
        #expect(try await DIDCommEndpointTests.post(try peer.pack(HandMadeIssuerTests.offer(issuer: issuer, id: id)), to: port) == 202)
        _ = try await ACAPyIssueCredentialTests.eventually("the offer \(id)") {
            try await offers(tenant).first { $0["threadId"] == .string(id) }
        }
    }

    /// Posts the peer's offer `id` and expects it refused: the problem report the peer got.
    static func refusedOffer(_ id: String, from peer: TestPeer, inbox: PeerInbox, port: Int) async throws -> JSONValue {
        #expect(try await DIDCommEndpointTests.post(try peer.pack(HandMadeIssuerTests.offer(issuer: issuer, id: id)), to: port) == 202)
        return try await CredentialBadInputTests.report(inbox, thread: id)
    }

    @Test func openExchangesAreBoundedPerConnectionAndPerTenant() async throws {
        let inboxes = [try await PeerInbox(), try await PeerInbox(), try await PeerInbox()]
        defer { Task { for inbox in inboxes { await inbox.stop() } } }
        try await LiveServer.with(server: {
            $0.outbound.allowPrivateURLs = true
            $0.connections.openExchanges = OpenExchangeLimits(perConnection: 3, perTenant: 5)
        }) { server in
            let (alice, _) = try await server.tenantClient(label: "alice")
            let (bob, _) = try await server.tenantClient(label: "bob")
            defer { Task { await alice.close(); await bob.close() } }
            let port = server.didcommPort
            let first = try await TestPeer.connect(alice, endpoint: inboxes[0].url, key: inboxes[0].key)
            let second = try await TestPeer.connect(alice, endpoint: inboxes[1].url, key: inboxes[1].key)
            let bobs = try await TestPeer.connect(bob, endpoint: inboxes[2].url, key: inboxes[2].key)

            // One connection: three open offers, the fourth refused naming the limit; the three stay.
            for index in 0..<3 { try await Self.offer("first-\(index)", from: first, to: alice, port: port) }
            let perConnection = try await Self.refusedOffer("first-3", from: first, inbox: inboxes[0], port: port)
            #expect(perConnection["@type"] == "https://didcomm.org/issue-credential/2.0/problem-report")
            #expect(perConnection["description"]?["code"] == "too-many-open-exchanges", "\(perConnection)")
            let connectionText = perConnection["description"]?["en"]?.stringValue ?? ""
            #expect(connectionText.contains("3 open credential exchanges"), "\(connectionText)")
            #expect(connectionText.contains("AERIE_OPEN_EXCHANGES_PER_CONNECTION"), "\(connectionText)")
            #expect(try await Self.threads(alice) == ["first-0", "first-1", "first-2"])
            #expect(try await Self.offers(alice).allSatisfy { $0["state"] == "offer-received" })

            // Proof requests are counted apart: the same peer's request is still taken.
            let request = PresentProofPeerTests.request(id: "request-0", definition: PresentProofPeerTests.definition)
            #expect(try await DIDCommEndpointTests.post(try first.pack(request), to: port) == 202)
            _ = try #require(try await PresentProofPeerTests.waitForRequest(alice, thread: "request-0"))

            // The tenant: five open in all, so the other connection's third offer is refused.
            try await Self.offer("second-0", from: second, to: alice, port: port)
            try await Self.offer("second-1", from: second, to: alice, port: port)
            let perTenant = try await Self.refusedOffer("second-2", from: second, inbox: inboxes[1], port: port)
            #expect(perTenant["description"]?["code"] == "too-many-open-exchanges", "\(perTenant)")
            let tenantText = perTenant["description"]?["en"]?.stringValue ?? ""
            #expect(tenantText.contains("5 open credential exchanges"), "\(tenantText)")
            #expect(tenantText.contains("AERIE_OPEN_EXCHANGES_PER_TENANT"), "\(tenantText)")
            #expect(try await Self.offers(alice).count == 5)

            // Bob, another tenant, is not held by Alice's limit.
            for index in 0..<3 { try await Self.offer("bob-\(index)", from: bobs, to: bob, port: port) }
            #expect(try await Self.offers(bob).count == 3)

            // An out-of-band invitation carrying one more offer: quota_exceeded, no connection made.
            let connectionsBefore = try await alice.call("connections.list", params: [:])["connections"]?.arrayValue?.count
            guard case .object(var invitation) = try HandMadeHandshake.invitation(inviter: .generate(), id: "inv-one-too-many") else { return }
            invitation["requests~attach"] = [["@id": "a", "data": ["json": HandMadeIssuerTests.offer(issuer: Self.issuer, id: "oob-offer")]]]
            let refused = await #expect(throws: AerieClientError.self) {
                _ = try await alice.call("outOfBand.accept", params: ["invitation": .object(invitation), "wait": false])
            }
            #expect(refused?.stableCode == "quota_exceeded", "\(String(describing: refused))")
            #expect(refused?.message.contains("AERIE_OPEN_EXCHANGES_PER_TENANT") == true, "\(String(describing: refused))")
            #expect(try await alice.call("connections.list", params: [:])["connections"]?.arrayValue?.count == connectionsBefore)
            #expect(try await Self.offers(alice).count == 5)

            // Declining one makes room for one, and only one, of two offers sent at once.
            let oldest = try #require(try await Self.offers(alice).first { $0["threadId"] == "first-0" }?["exchangeId"])
            _ = try await alice.call("credentials.decline", params: ["offerId": oldest])
            async let firstStatus = DIDCommEndpointTests.post(try first.pack(HandMadeIssuerTests.offer(issuer: Self.issuer, id: "race-0")), to: port)
            async let secondStatus = DIDCommEndpointTests.post(try second.pack(HandMadeIssuerTests.offer(issuer: Self.issuer, id: "race-1")), to: port)
            #expect(try await [firstStatus, secondStatus] == [202, 202])
            let raceReport = try await ACAPyIssueCredentialTests.eventually("one race offer refused") { () async throws -> String? in
                let reported = inboxes[0].received.map(\.message) + inboxes[1].received.map(\.message)
                return reported.first { ["race-0", "race-1"].contains($0["~thread"]?["thid"]?.stringValue ?? "") }?["~thread"]?["thid"]?.stringValue
            }
            let raced = try await Self.threads(alice).intersection(["race-0", "race-1"])
            #expect(raced.count == 1, "\(raced)")
            #expect(!raced.contains(raceReport), "\(raced) \(raceReport)")
            let open = try await Self.offers(alice).filter { $0["state"] == "offer-received" }
            #expect(open.count == 5, "\(open)")
        }
    }
}
