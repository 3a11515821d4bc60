import AerieClient
import AerieCore
import AerieTesting
import Foundation
import Testing

/// Discover features 1.0 (RFC 0031) and 2.0 (RFC 0557) on the real server: two tenants ask each
/// other, a third cannot ask on their connections, a disabled plugin is not disclosed; ACA-Py
/// 1.2.7 and 1.7.0 ask Aerie (their admin API) and Aerie asks them (`connections.discoverFeatures`),
/// over a connection made from ACA-Py's did:peer:4 out-of-band invitation.
@Suite(.serialized, .timeLimit(.minutes(10))) struct DiscoverFeaturesTests {
    static let aerieProtocols = [
        "https://didcomm.org/basicmessage/1.0", "https://didcomm.org/connections/1.0", "https://didcomm.org/didexchange/1.1",
        "https://didcomm.org/discover-features/1.0", "https://didcomm.org/discover-features/2.0",
        "https://didcomm.org/trust_ping/1.0",
    ]

    static func strings(_ value: JSONValue?) -> [String] {
        guard case .array(let items)? = value else { return [] }
        return items.compactMap(\.stringValue)
    }

    /// Alice invites, Bob accepts: both sides' connection ids once Alice's side is accepted.
    static func connect(_ alice: AerieClient, _ bob: AerieClient) async throws -> (alice: String, bob: String) {
        let created = try await alice.call("connections.createInvitation", params: ["label": "Alice"])
        let aliceSide = try #require(created["connectionId"]?.stringValue)
        let accepted = try await bob.call(
            "connections.accept", params: ["url": created["invitationUrl"]!, "wait": true, "timeoutSeconds": 30, "label": "Bob"])
        let bobSide = try #require(accepted["connectionId"]?.stringValue)
        _ = try await InviterTests.waitForState(alice, aliceSide, 4)
        return (aliceSide, bobSide)
    }

    @Test func twoTenantsDiscoverEachOthersProtocolsAndAThirdCannotAsk() async throws {
        try await LiveServer.with(server: { $0.outbound.allowPrivateURLs = true }) { server in
            let (alice, _) = try await server.tenantClient(label: "alice")
            let (bob, _) = try await server.tenantClient(label: "bob")
            let (carol, _) = try await server.tenantClient(label: "carol")
            defer { Task { await alice.close(); await bob.close(); await carol.close() } }
            let ids = try await Self.connect(alice, bob)

            for version in ["1.0", "2.0"] {
                let found = try await bob.call(
                    "connections.discoverFeatures", params: ["connectionId": .string(ids.bob), "version": .string(version)])
                #expect(found["version"] == .string(version))
                #expect(found["connectionId"] == .string(ids.bob))
                let protocols = Self.strings(found["protocols"])
                for expected in Self.aerieProtocols { #expect(protocols.contains(expected), "\(version): \(protocols)") }
                #expect(Self.strings(found["goalCodes"]).isEmpty)
            }
            // A narrower query answers only what it matches, asked the other way round.
            let pings = try await alice.call(
                "connections.discoverFeatures",
                params: ["connectionId": .string(ids.alice), "query": "https://didcomm.org/trust_ping/*", "version": "1.0"])
            #expect(Self.strings(pings["protocols"]) == ["https://didcomm.org/trust_ping/1.0"])

            // Carol cannot ask on Bob's connection; bad params get invalid_params.
            await #expect(throws: AerieClientError.self) {
                _ = try await carol.call("connections.discoverFeatures", params: ["connectionId": .string(ids.bob)])
            }
            for bad: JSONValue in [
                ["connectionId": .string(ids.bob), "version": "3.0"],
                ["connectionId": .string(ids.bob), "query": .string(String(repeating: "*", count: 257))],
                ["connectionId": .string(ids.bob), "timeoutSeconds": 61],
                ["connectionId": "not-a-uuid"],
            ] {
                let error = await #expect(throws: AerieClientError.self) { _ = try await bob.call("connections.discoverFeatures", params: bad) }
                #expect(error?.data?["code"] == "invalid_params", "\(bad)")
            }
        }
    }

    /// With the messages plugin disabled, basicmessage is not disclosed (and a pending
    /// connection cannot be asked).
    @Test func aDisabledPluginIsNotDisclosed() async throws {
        try await LiveServer.with(plugins: ["connections", "discover-features"], server: { $0.outbound.allowPrivateURLs = true }) { server in
            let (alice, _) = try await server.tenantClient(label: "alice")
            let (bob, _) = try await server.tenantClient(label: "bob")
            defer { Task { await alice.close(); await bob.close() } }
            let pending = try await alice.call("connections.createInvitation")
            let pendingId = try #require(pending["connectionId"]?.stringValue)
            await #expect(throws: AerieClientError.self) {
                _ = try await alice.call("connections.discoverFeatures", params: ["connectionId": .string(pendingId)])
            }
            let ids = try await Self.connect(alice, bob)
            let found = try await bob.call("connections.discoverFeatures", params: ["connectionId": .string(ids.bob)])
            let protocols = Self.strings(found["protocols"])
            #expect(protocols.contains("https://didcomm.org/trust_ping/1.0"), "\(protocols)")
            #expect(protocols.contains("https://didcomm.org/discover-features/2.0"), "\(protocols)")
            #expect(!protocols.contains("https://didcomm.org/basicmessage/1.0"), "\(protocols)")
        }
    }

    /// Only the connection's peer is answered, once per query; a stranger's query is refused at
    /// the endpoint, a peer's oversized one is kept with its error and gets no answer, and the
    /// legacy `did:sov:...;spec/` prefix is answered like the other.
    @Test func onlyThePeerIsAnsweredOnceAndBadQueriesGetNoAnswer() async throws {
        let inbox = try await PeerInbox()
        defer { Task { await inbox.stop() } }
        try await LiveServer.with(server: { $0.outbound.allowPrivateURLs = true }) { server in
            let (alice, _) = try await server.tenantClient(label: "alice")
            defer { Task { await alice.close() } }
            let peer = try await TestPeer.connect(alice, endpoint: inbox.url, key: inbox.key)
            let port = server.didcommPort
            let disclosed = { (thread: String) in
                inbox.received.filter { $0.message["~thread"]?["thid"] == .string(thread) }
            }

            let stranger: JSONValue = ["@type": "https://didcomm.org/discover-features/1.0/query", "@id": "q-stranger", "query": "*"]
            #expect(try await DIDCommEndpointTests.post(try peer.forge(stranger, from: .generate()), to: port) == 400)
            #expect(try await DIDCommEndpointTests.post(try peer.forge(stranger, from: nil), to: port) == 400)

            let tooMany: JSONValue = [
                "@type": "https://didcomm.org/discover-features/2.0/queries", "@id": "q-many",
                "queries": .array(Array(repeating: ["feature-type": "protocol", "match": "*"], count: 17)),
            ]
            #expect(try await DIDCommEndpointTests.post(try peer.pack(tooMany), to: port) == 202)
            let tooLong: JSONValue = [
                "@type": "https://didcomm.org/discover-features/1.0/query", "@id": "q-long",
                "query": .string(String(repeating: "*", count: 100_000)),
            ]
            #expect(try await DIDCommEndpointTests.post(try peer.pack(tooLong), to: port) == 202)

            let legacy: JSONValue = [
                "@type": "did:sov:BzCbsNYhMrjHiqZDTUASHg;spec/discover-features/1.0/query", "@id": "q-legacy",
                "query": "did:sov:BzCbsNYhMrjHiqZDTUASHg;spec/trust_ping/*",
            ]
            let envelope = try peer.pack(legacy)
            #expect(try await DIDCommEndpointTests.post(envelope, to: port) == 202)
            #expect(try await DIDCommEndpointTests.post(envelope, to: port) == 202)
            let answer = try #require(try await inbox.wait { $0["~thread"]?["thid"] == "q-legacy" }, "no disclose")
            #expect(answer.message["@type"] == "https://didcomm.org/discover-features/1.0/disclose")
            #expect(answer.message["protocols"] == [["pid": "https://didcomm.org/trust_ping/1.0"]])
            #expect(answer.senderVerkey == peer.pwVerkey)

            // A last, good query answered proves the earlier ones had their turn.
            let last: JSONValue = [
                "@type": "https://didcomm.org/discover-features/2.0/queries", "@id": "q-last",
                "queries": [["feature-type": "goal-code", "match": "*"]],
            ]
            #expect(try await DIDCommEndpointTests.post(try peer.pack(last), to: port) == 202)
            let lastAnswer = try #require(try await inbox.wait { $0["~thread"]?["thid"] == "q-last" }, "no disclosures")
            #expect(lastAnswer.message["disclosures"] == [])
            #expect(disclosed("q-legacy").count == 1, "a replayed query is answered once")
            for thread in ["q-stranger", "q-many", "q-long"] { #expect(disclosed(thread).isEmpty, "\(thread)") }
        }
    }

    /// Our query reaches the peer as written (2.0: protocols and goal codes); a peer that never
    /// answers ends the call with `timeout`, and an answer threaded to another query wakes nothing.
    @Test func anUnansweredQueryTimesOut() async throws {
        let inbox = try await PeerInbox()
        defer { Task { await inbox.stop() } }
        try await LiveServer.with(server: { $0.outbound.allowPrivateURLs = true }) { server in
            let (alice, _) = try await server.tenantClient(label: "alice")
            defer { Task { await alice.close() } }
            let peer = try await TestPeer.connect(alice, endpoint: inbox.url, key: inbox.key)
            let unrelated: JSONValue = [
                "@type": "https://didcomm.org/discover-features/2.0/disclosures", "@id": "d-1", "~thread": ["thid": "someone-else"],
                "disclosures": [["feature-type": "protocol", "id": "https://didcomm.org/fake/1.0"]],
            ]
            #expect(try await DIDCommEndpointTests.post(try peer.pack(unrelated), to: server.didcommPort) == 202)
            let error = await #expect(throws: AerieClientError.self) {
                _ = try await alice.call(
                    "connections.discoverFeatures",
                    params: ["connectionId": .string(peer.connectionId), "query": "https://didcomm.org/*", "timeoutSeconds": 1])
            }
            #expect(error?.data?["code"] == "timeout", "\(String(describing: error))")
            let query = try #require(try await inbox.wait { $0["@type"] == "https://didcomm.org/discover-features/2.0/queries" })
            #expect(query.message["queries"] == [
                ["feature-type": "protocol", "match": "https://didcomm.org/*"], ["feature-type": "goal-code", "match": "https://didcomm.org/*"],
            ])
            #expect(query.senderVerkey == peer.pwVerkey)
        }
    }

    // MARK: - ACA-Py

    @Test(arguments: ACAPyAgent.Version.allCases)
    func acapyAndAerieDiscoverEachOther(version: ACAPyAgent.Version) async throws {
        let agent = try await ACAPyAgent.start(version: version)
        do {
            try await LiveServer.with(server: { $0.outbound.allowPrivateURLs = true }) { server in
                try await Self.discover(server, agent)
            }
        } catch {
            print("ACA-Py \(version.rawValue) log:\n\(agent.log().suffix(4000))")
            await agent.stop()
            throw error
        }
        await agent.stop()
    }

    /// ACA-Py's out-of-band invitation names its service as a did:peer:4 (long form, what it
    /// writes with `use_did_method: did:peer:4`): Aerie resolves it, connects, and the connection
    /// carries pings both ways.
    @Test(arguments: ACAPyAgent.Version.allCases)
    func acapyDIDPeer4InvitationConnects(version: ACAPyAgent.Version) async throws {
        let agent = try await ACAPyAgent.start(version: version)
        do {
            try await LiveServer.with(server: { $0.outbound.allowPrivateURLs = true }) { server in
                let (alice, _) = try await server.tenantClient(label: "alice")
                defer { Task { await alice.close() } }
                let (connectionId, acapyConnection) = try await Self.connectThroughDIDPeer4Invitation(alice, agent)
                let pinged = try await alice.call(
                    "connections.ping", params: ["connectionId": .string(connectionId), "timeoutSeconds": 20])
                #expect(pinged["responseUid"]?.stringValue != nil, "\(pinged)")
                _ = try await agent.admin("POST", "/connections/\(acapyConnection)/send-ping", body: ["comment": "to Aerie"])
                var answered = false
                for _ in 0..<100 where !answered {
                    let download = try await alice.call("messages.download")
                    answered = SendMessagesTests.messages(download).values.contains {
                        $0["type"] == "trustPing" && ($0["decryptedPayload"]?.stringValue ?? "").contains("to Aerie")
                    }
                    if !answered { try await Task.sleep(for: .milliseconds(100)) }
                }
                #expect(answered, "ACA-Py's ping never reached Aerie")
            }
        } catch {
            print("ACA-Py \(version.rawValue) log:\n\(agent.log().suffix(4000))")
            await agent.stop()
            throw error
        }
        await agent.stop()
    }

    /// Accepts ACA-Py's did:peer:4 invitation in `alice`'s tenant: (Aerie's, ACA-Py's) connection ids.
    static func connectThroughDIDPeer4Invitation(_ alice: AerieClient, _ agent: ACAPyAgent) async throws
        -> (aerie: String, acapy: String)
    {
        let created = try await agent.admin(
            "POST", "/out-of-band/create-invitation",
            body: [
                "handshake_protocols": ["https://didcomm.org/didexchange/1.1"], "use_public_did": false,
                "use_did_method": "did:peer:4",
            ])
        let invitation = try #require(created["invitation"], "\(created)")
        let service = try #require(Self.strings(invitation["services"]).first, "\(invitation)")
        #expect(service.hasPrefix("did:peer:4"), "\(service.prefix(60))")
        let accepted = try await alice.call(
            "connections.accept", params: ["invitation": invitation, "wait": true, "timeoutSeconds": 30, "label": "Alice"])
        #expect(accepted["state"] == 4, "\(accepted)")
        let connectionId = try #require(accepted["connectionId"]?.stringValue)
        let theirs = try await ACAPyDIDExchangeTests.completedConnection(
            agent, invitationId: try #require(invitation["@id"]?.stringValue))
        return (connectionId, try #require(theirs["connection_id"]?.stringValue))
    }

    /// Each side asks the other, in both versions, on a connection from a did:peer:4 invitation.
    static func discover(_ server: LiveServer, _ agent: ACAPyAgent) async throws {
        let (alice, _) = try await server.tenantClient(label: "alice")
        defer { Task { await alice.close() } }
        let (connectionId, acapyConnection) = try await connectThroughDIDPeer4Invitation(alice, agent)

        // ACA-Py asks Aerie: 1.0 and 2.0 through its admin API, answered from Aerie's plugins.
        _ = try await agent.admin("GET", "/discover-features/query?connection_id=\(acapyConnection)&query=*")
        let disclose = try await Self.record(agent, "/discover-features/records?connection_id=\(acapyConnection)", field: "disclose")
        let v1 = Self.ids(disclose["protocols"], key: "pid")
        for expected in Self.aerieProtocols { #expect(v1.contains(expected), "1.0: \(v1)") }
        _ = try await agent.admin(
            "GET", "/discover-features-2.0/queries?connection_id=\(acapyConnection)&query_protocol=*&query_goal_code=*")
        let disclosures = try await Self.record(
            agent, "/discover-features-2.0/records?connection_id=\(acapyConnection)", field: "disclosures")
        let v2 = Self.ids(disclosures["disclosures"], key: "id")
        for expected in Self.aerieProtocols { #expect(v2.contains(expected), "2.0: \(v2)") }

        // Aerie asks ACA-Py.
        for version in ["1.0", "2.0"] {
            let found = try await alice.call(
                "connections.discoverFeatures",
                params: ["connectionId": .string(connectionId), "version": .string(version), "timeoutSeconds": 20])
            let protocols = Self.strings(found["protocols"])
            #expect(protocols.contains { $0.hasSuffix("/trust_ping/1.0") }, "\(version): \(protocols)")
            #expect(protocols.contains { $0.hasSuffix("/didexchange/1.1") }, "\(version): \(protocols)")
            #expect(protocols.contains { $0.hasSuffix("/discover-features/2.0") }, "\(version): \(protocols)")
        }
    }

    /// The `field` of ACA-Py's discovery record once its peer's answer arrived (20 s at most).
    static func record(_ agent: ACAPyAgent, _ path: String, field: String) async throws -> JSONValue {
        var last = JSONValue.null
        for _ in 0..<100 {
            last = try await agent.admin("GET", path)
            if case .array(let results)? = last["results"], let answer = results.first?[field], answer != .null {
                return answer
            }
            try await Task.sleep(for: .milliseconds(200))
        }
        Issue.record("ACA-Py never recorded a \(field): \(last)")
        return .null
    }

    static func ids(_ entries: JSONValue?, key: String) -> [String] {
        guard case .array(let items)? = entries else { return [] }
        return items.compactMap { $0[key]?.stringValue }
    }
}
