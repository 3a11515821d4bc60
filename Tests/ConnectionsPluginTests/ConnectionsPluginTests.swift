import AerieCore
import ConnectionsPlugin
import Foundation
import Testing

/// The two methods through the router, as a wallet backend calls them.
@Suite(.timeLimit(.minutes(10))) struct ConnectionsPluginTests {
    func router(fetcher: any URLFetcher = StubFetcher.unused, lookup: any ConnectionLookup = NoConnectionLookup()) throws
        -> MethodRouter
    {
        var router = MethodRouter()
        try router.install(ConnectionsPlugin(fetcher: fetcher, lookup: lookup, sender: Unsent()))
        return router
    }

    func call(_ router: MethodRouter, _ method: String, _ params: JSONValue, context: CallContext = .tenant()) async throws
        -> JSONValue
    {
        let method = try #require(router.method(named: method))
        return try await method.handler(params, context).value
    }

    @Test func registersDocumentedTenantMethods() throws {
        let router = try router()
        let parse = try #require(router.method(named: "connections.parseInvitation"))
        #expect(parse.plugin == "connections")
        #expect(parse.access == .tenant)
        #expect(parse.params.map(\.name) == ["invitation", "url"])
        let resolve = try #require(router.method(named: "connections.resolveUrl"))
        #expect(resolve.params.map(\.name) == ["url"])
        #expect(ConnectionsPlugin.name == "connections")
    }

    @Test func parseInvitationFromObjectTextAndURL() async throws {
        let router = try router()
        for params: JSONValue in [
            ["invitation": Fixtures.json(Fixtures.ariesSeed000)],
            ["invitation": .string(Fixtures.ariesSeed000)],
        ] {
            let result = try await call(router, "connections.parseInvitation", params)
            #expect(result["kind"] == "aries")
            #expect(result["id"] == "467f6449-7d1f-4a9f-ada7-09d6444af083")
            #expect(result["label"] == "Acme")
            #expect(result["recipientKeys"] == [.string(Fixtures.acapyVerkey)])
            #expect(result["existingConnectionId"] == nil)
        }
        let result = try await call(router, "connections.parseInvitation", ["url": .string(Fixtures.acapyOob11URL)])
        #expect(result["kind"] == "out-of-band")
        #expect(result["handshakeProtocols"] == ["https://didcomm.org/didexchange/1.1", "https://didcomm.org/connections/1.0"])
        #expect(result["hasAttachment"] == false)
    }

    @Test func existingConnectionComesFromTheLookup() async throws {
        let router = try router(lookup: KeyLookup(key: Fixtures.acapyDIDKey, connectionId: "conn-1"))
        let matched = try await call(router, "connections.parseInvitation", ["invitation": Fixtures.json(Fixtures.ariesSeed000)])
        #expect(matched["existingConnectionId"] == "conn-1")
        let other = try await call(router, "connections.parseInvitation", ["invitation": Fixtures.json(Fixtures.proprietaryStandard)])
        #expect(other["existingConnectionId"] == nil)
        #expect(other["kind"] == "proprietary")
    }

    @Test func resolveURLAnswersTheInvitationAndItsSummary() async throws {
        let router = try router()
        let result = try await call(router, "connections.resolveUrl", ["url": .string(Fixtures.ariesURLSeed003)])
        #expect(result["invitation"]?["@id"] == "8aa5e6c9-ff6d-4445-9e56-b455241e5edb")
        #expect(result["invitation"]?["@type"] == "did:sov:BzCbsNYhMrjHiqZDTUASHg;spec/connections/1.0/invitation")
        #expect(result["summary"]?["kind"] == "aries")
        #expect(result["summary"]?["serviceEndpoint"] == "http://vas.evernym.com:80/agency/msg")
    }

    @Test func resolveShortURLThroughTheFetcher() async throws {
        let fetcher = StubFetcher { FetchedURL(url: $0.url, status: 302, redirectLocation: Fixtures.outOfBandURLSeed003) }
        let result = try await call(router(fetcher: fetcher), "connections.resolveUrl", ["url": .string(Fixtures.shortURLSeed003)])
        #expect(result["summary"]?["kind"] == "out-of-band")
        #expect(result["summary"]?["publicDid"] == "did:sov:LjgpST2rjsoxYegQDRm7EL")
        #expect(fetcher.requests.map(\.url) == [Fixtures.shortURLSeed003])
    }

    @Test func paramsErrors() async throws {
        let router = try router()
        await expectAerieError(.invalidParams, field: "invitation", containing: "required") {
            try await call(router, "connections.parseInvitation", [:])
        }
        await expectAerieError(.invalidParams, field: "url", containing: "not both") {
            try await call(
                router, "connections.parseInvitation",
                ["invitation": Fixtures.json(Fixtures.acapyCi), "url": .string(Fixtures.acapyCiURL)])
        }
        await expectAerieError(.invalidParams, field: "url") {
            try await call(router, "connections.resolveUrl", [:])
        }
        await expectAerieError(.invalidParams, field: "url") {
            try await call(router, "connections.resolveUrl", ["url": 5])
        }
        await expectAerieError(.invalidInvitation, field: "url", containing: "percent-encoding") {
            try await call(router, "connections.resolveUrl", ["url": "https://x.example/?c_i=%%%"])
        }
    }

    @Test func needsATenantSession() async throws {
        let router = try router()
        await expectAerieError(.forbidden) {
            try await call(
                router, "connections.parseInvitation", ["invitation": Fixtures.json(Fixtures.acapyCi)],
                context: .anonymous)
        }
    }
}

/// These tests register and call methods that send nothing.
struct Unsent: ConnectionSender {
    func send(
        _ message: JSONValue, on connectionId: UUID, replyTo: UUID?, tenant: TenantContext,
        alongside: (@Sendable (ConnectionRecord, any TenantTransaction) throws -> Bool)?
    ) async throws -> SentMessage? {
        Issue.record("a test of the connections plugin's methods sent a message")
        return nil
    }
}
