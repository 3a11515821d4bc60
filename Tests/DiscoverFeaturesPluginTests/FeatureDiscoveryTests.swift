import AerieCore
@testable import DiscoverFeaturesPlugin
import Testing

/// Discover features 1.0 / 2.0 without I/O: reading queries (bounded), matching, the answers'
/// shape, reading a peer's answer, and the served list derived from a router's inbound types.
@Suite struct FeatureDiscoveryTests {
    typealias Feature = FeatureDiscovery.Feature
    static let served: [Feature] = [
        "https://didcomm.org/basicmessage/1.0", "https://didcomm.org/connections/1.0",
        "https://didcomm.org/didexchange/1.1", "https://didcomm.org/trust_ping/1.0",
    ].map { Feature(.protocol, $0) }

    @Test(arguments: [
        ("*", "https://didcomm.org/trust_ping/1.0", true),
        ("https://didcomm.org/*", "https://didcomm.org/trust_ping/1.0", true),
        ("https://didcomm.org/trust_ping/1.*", "https://didcomm.org/trust_ping/1.0", true),
        ("https://didcomm.org/trust_ping/1.0", "https://didcomm.org/trust_ping/1.0", true),
        ("https://didcomm.org/trust_ping/2.*", "https://didcomm.org/trust_ping/1.0", false),
        ("*/trust_ping/*", "https://didcomm.org/trust_ping/1.0", true),
        ("*ping*0", "https://didcomm.org/trust_ping/1.0", true),
        ("https://didcomm.org/trust", "https://didcomm.org/trust_ping/1.0", false),
        ("did:sov:BzCbsNYhMrjHiqZDTUASHg;spec/trust_ping/*", "https://didcomm.org/trust_ping/1.0", true),
        ("", "https://didcomm.org/trust_ping/1.0", false),
        ("**", "", true),
    ])
    func globMatching(pattern: String, id: String, expected: Bool) {
        #expect(FeatureDiscovery.matches(id, pattern: pattern) == expected)
    }

    /// A pathological pattern against a long id stays fast (the cap bounds it anyway).
    @Test func globIsNotExponential() {
        let id = String(repeating: "a", count: 256)
        let pattern = String(repeating: "*a", count: 127) + "b"
        let start = ContinuousClock.now
        #expect(!FeatureDiscovery.matches(id, pattern: pattern))
        #expect(ContinuousClock.now - start < .seconds(1))
    }

    @Test func v1QueryGetsDiscloseThreadedToIt() throws {
        let query: JSONValue = [
            "@type": "did:sov:BzCbsNYhMrjHiqZDTUASHg;spec/discover-features/1.0/query", "@id": "q-1",
            "query": "https://didcomm.org/connections/*",
        ]
        let queries = try FeatureDiscovery.queries(in: query, version: .v1)
        let disclosed = FeatureDiscovery.disclosed(Self.served, matching: queries)
        #expect(disclosed == [Feature(.protocol, "https://didcomm.org/connections/1.0")])
        let answer = FeatureDiscovery.answer(disclosed, to: "q-1", version: .v1, id: "a-1")
        #expect(answer["@type"] == "https://didcomm.org/discover-features/1.0/disclose")
        #expect(answer["@id"] == "a-1")
        #expect(answer["~thread"]?["thid"] == "q-1")
        #expect(answer["protocols"] == [["pid": "https://didcomm.org/connections/1.0"]])
        #expect(FeatureDiscovery.features(in: answer, version: .v1) == disclosed)
    }

    @Test func v2QueriesGetDisclosuresOfProtocolsOnly() throws {
        let queries: JSONValue = [
            "@type": "https://didcomm.org/discover-features/2.0/queries", "@id": "q-2",
            "queries": [
                ["feature-type": "protocol", "match": "https://didcomm.org/trust_ping/*"],
                ["feature-type": "protocol", "match": "*basicmessage*"],
                ["feature-type": "goal-code", "match": "*"],
                ["feature-type": "gov-fw", "match": "*"],
            ],
        ]
        let read = try FeatureDiscovery.queries(in: queries, version: .v2)
        #expect(read.count == 3, "an unknown feature type is skipped")
        let disclosed = FeatureDiscovery.disclosed(Self.served, matching: read)
        #expect(disclosed.map(\.id) == ["https://didcomm.org/basicmessage/1.0", "https://didcomm.org/trust_ping/1.0"])
        let answer = FeatureDiscovery.answer(disclosed, to: "q-2", version: .v2, id: "a-2")
        #expect(answer["@type"] == "https://didcomm.org/discover-features/2.0/disclosures")
        #expect(answer["~thread"]?["thid"] == "q-2")
        guard case .array(let entries)? = answer["disclosures"] else { Issue.record("no disclosures array"); return }
        #expect(entries.first == ["feature-type": "protocol", "id": "https://didcomm.org/basicmessage/1.0"])
        #expect(FeatureDiscovery.features(in: answer, version: .v2) == disclosed)
    }

    @Test func ourQueriesAskForEverythingMatching() {
        let v1 = FeatureDiscovery.query("https://didcomm.org/*", version: .v1, id: "x")
        #expect(v1 == ["@type": "https://didcomm.org/discover-features/1.0/query", "@id": "x", "query": "https://didcomm.org/*"])
        let v2 = FeatureDiscovery.query("*", version: .v2, id: "y")
        #expect(v2["queries"] == [["feature-type": "protocol", "match": "*"], ["feature-type": "goal-code", "match": "*"]])
    }

    @Test func badQueriesAreInvalidParams() {
        let cases: [(JSONValue, FeatureDiscovery.Version)] = [
            (["@id": "a"], .v1),
            (["query": .int(3)], .v1),
            (["query": ""], .v1),
            (["query": .string(String(repeating: "x", count: FeatureDiscovery.maxMatchBytes + 1))], .v1),
            (["query": "a\u{0}b"], .v1),
            (["queries": "*"], .v2),
            (["queries": [["feature-type": "protocol"]]], .v2),
            (["queries": .array(Array(repeating: ["feature-type": "protocol", "match": "*"], count: FeatureDiscovery.maxQueries + 1))], .v2),
        ]
        for (message, version) in cases {
            #expect(throws: AerieError.self, "\(message)") { try FeatureDiscovery.queries(in: message, version: version) }
            do {
                _ = try FeatureDiscovery.queries(in: message, version: version)
            } catch let error as AerieError {
                #expect(error.code == .invalidParams)
            } catch {
                Issue.record("unexpected \(error)")
            }
        }
    }

    /// A peer's answer is kept bounded: at most `maxDisclosed` features, junk entries skipped.
    @Test func peerAnswersAreBounded() {
        let many = JSONValue.array((0..<(FeatureDiscovery.maxDisclosed + 50)).map { ["pid": .string("https://x/p/\($0)")] })
        #expect(FeatureDiscovery.features(in: ["protocols": many], version: .v1).count == FeatureDiscovery.maxDisclosed)
        let junk: JSONValue = [
            "disclosures": [
                ["feature-type": "protocol", "id": .string(String(repeating: "p", count: FeatureDiscovery.maxFeatureIdBytes + 1))],
                ["feature-type": "protocol", "id": "bad\nid"],
                ["feature-type": "protocol", "id": .int(1)],
                ["feature-type": "gov-fw", "id": "x"],
                ["feature-type": "goal-code", "id": "aries.vc.issue"],
                "not an object",
            ],
        ]
        #expect(FeatureDiscovery.features(in: junk, version: .v2) == [Feature(.goalCode, "aries.vc.issue")])
        #expect(FeatureDiscovery.features(in: ["protocols": "x"], version: .v1).isEmpty)
    }

    /// What is served comes from the router's inbound types: a plugin not installed is not listed.
    @Test func servedProtocolsComeFromTheRouter() throws {
        var router = MethodRouter()
        try router.registerInbound("https://didcomm.org/trust_ping/1.0/ping") { _, _ in }
        try router.registerInbound("https://didcomm.org/trust_ping/1.0/ping_response") { _, _ in }
        try router.registerInbound("did:sov:BzCbsNYhMrjHiqZDTUASHg;spec/connections/1.0/request") { _, _ in }
        let served = ServedProtocols()
        #expect(served.all.isEmpty)
        served.install(router)
        #expect(served.all == ["https://didcomm.org/connections/1.0", "https://didcomm.org/trust_ping/1.0"])
    }

    @Test func methodParams() throws {
        let checked = try DiscoverFeaturesParams(connectionId: "6f1c1c2e-8d1a-4b7e-9a51-2d3f4c5b6a70").validated()
        #expect(checked.query == "*" && checked.version == .v2 && checked.timeout == .seconds(10))
        for params in [
            DiscoverFeaturesParams(connectionId: "nope"),
            DiscoverFeaturesParams(connectionId: "6f1c1c2e-8d1a-4b7e-9a51-2d3f4c5b6a70", version: "3.0"),
            DiscoverFeaturesParams(connectionId: "6f1c1c2e-8d1a-4b7e-9a51-2d3f4c5b6a70", timeoutSeconds: 0),
            DiscoverFeaturesParams(
                connectionId: "6f1c1c2e-8d1a-4b7e-9a51-2d3f4c5b6a70", query: String(repeating: "*", count: 300)),
        ] {
            #expect(throws: AerieError.self) { try params.validated() }
        }
    }
}
