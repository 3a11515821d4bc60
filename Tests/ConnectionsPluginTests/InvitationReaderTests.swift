import AerieCore
import AerieCrypto
import ConnectionsPlugin
import Testing

/// Reading every input form, and short URLs through a stub fetcher.
@Suite(.timeLimit(.minutes(10))) struct InvitationReaderTests {
    @Test func objectTextURLAndBase64() async throws {
        let reader = InvitationReader(fetcher: StubFetcher.unused)
        let expected = Fixtures.json(Fixtures.acapyCi)
        #expect(try await reader.read(expected).json == expected)
        #expect(try await reader.read(.string(Fixtures.acapyCi)).json == expected)
        #expect(try await reader.read(.string("  \n" + Fixtures.acapyCiURL + "\n")).json == expected)
        #expect(try await reader.read(.string(Base64.encode(expected.serialized()))).json == expected)
        #expect(try await reader.read(url: Fixtures.ariesURLSeed003).kind == .aries)
        #expect(try await reader.read(url: Fixtures.acapyOob10PublicURL).kind == .outOfBand)
    }

    @Test func unreadableInputs() async {
        let reader = InvitationReader(fetcher: StubFetcher.unused)
        await expectAerieError(.invalidInvitation, field: "invitation", containing: "JSON object or a string") {
            try await reader.read(42)
        }
        await expectAerieError(.invalidInvitation, field: "invitation", containing: "neither JSON") {
            try await reader.read("just some words")
        }
        await expectAerieError(.invalidInvitation, field: "invitation", containing: "not valid JSON") {
            try await reader.read("{\"@type\": ")
        }
        await expectAerieError(.invalidInvitation, field: "url", containing: "empty") {
            try await reader.read(url: "   ")
        }
        // Not http(s) and no invitation parameter: nothing to decode, nothing fetched.
        for url in ["ftp://files.example.org/invite", "file:///etc/passwd", "gopher://x.example/1", "didcomm://invite"] {
            await expectAerieError(.invalidInvitation, field: "url", containing: "only http(s)") {
                try await reader.read(url: url)
            }
        }
    }

    @Test func shortURLAnsweringJSON() async throws {
        let fetcher = StubFetcher { request in
            FetchedURL(url: request.url, status: 200, contentType: "application/json", body: Array(Fixtures.acapyOob11.utf8))
        }
        let invitation = try await InvitationReader(fetcher: fetcher).read(url: Fixtures.shortURLSeed003)
        #expect(invitation.id == "9d8c7b6a-5f4e-4d3c-8b2a-1f0e9d8c7b6a")
        let request = try #require(fetcher.requests.first)
        #expect(request.url == "https://vty.im/cnf4m")
        #expect(request.accept == "application/json")
        #expect(request.stopAtRedirectsWithQueryItems == ["c_i", "oob", "d_m"])
    }

    @Test func shortURLRedirectingToAnInvitationURL() async throws {
        let fetcher = StubFetcher { request in
            FetchedURL(url: request.url, status: 302, redirectLocation: Fixtures.outOfBandURLSeed003)
        }
        let invitation = try await InvitationReader(fetcher: fetcher).read(url: Fixtures.shortURLSeed003)
        #expect(invitation.id == "69212a3a-d068-4f9d-a2dd-4741bca89af3")
        #expect(fetcher.requests.count == 1)
    }

    @Test func shortURLAnswersOfOtherShapes() async throws {
        let wrapped: JSONValue = [
            "invitation": Fixtures.json(Fixtures.acapyCi), "invitation_url": .string(Fixtures.acapyCiURL),
        ]
        let bodies: [(String, String)] = [
            (wrapped.jsonString, "3b1b2b6a-4f1e-4a7a-9b6e-0b9a8d0f5c11"),
            (#"{"invitation_url": "\#(Fixtures.acapyOob11URL)"}"#, "9d8c7b6a-5f4e-4d3c-8b2a-1f0e9d8c7b6a"),
            (Fixtures.ariesURLSeed003 + "\n", "8aa5e6c9-ff6d-4445-9e56-b455241e5edb"),
        ]
        for (body, id) in bodies {
            let fetcher = StubFetcher { FetchedURL(url: $0.url, status: 200, body: Array(body.utf8)) }
            #expect(try await InvitationReader(fetcher: fetcher).read(url: "https://s.example/abc").id == id)
        }
    }

    @Test func shortURLFailures() async {
        func reader(status: Int = 200, body: String = "") -> InvitationReader {
            InvitationReader(fetcher: StubFetcher { FetchedURL(url: $0.url, status: status, body: Array(body.utf8)) })
        }
        await expectAerieError(.peerUnreachable, field: "url", containing: "HTTP 404") {
            try await reader(status: 404, body: "not found").read(url: "https://s.example/x")
        }
        await expectAerieError(.invalidInvitation, field: "url", containing: "did not answer with an invitation") {
            try await reader(body: "<html>hello</html>").read(url: "https://s.example/x")
        }
        await expectAerieError(.invalidInvitation, field: "url", containing: "empty body") {
            try await reader(body: " ").read(url: "https://s.example/x")
        }
        await expectAerieError(.invalidInvitation, field: "url", containing: "valid JSON") {
            try await reader(body: "{nope").read(url: "https://s.example/x")
        }
        await expectAerieError(.invalidInvitation, field: "@type") {
            try await reader(body: #"{"hello": "world"}"#).read(url: "https://s.example/x")
        }
        let redirectNowhere = InvitationReader(
            fetcher: StubFetcher { FetchedURL(url: $0.url, status: 302, redirectLocation: "https://elsewhere.example/") })
        await expectAerieError(.invalidInvitation, field: "url", containing: "without an invitation") {
            try await redirectNowhere.read(url: "https://s.example/x")
        }
    }

    @Test func fetchErrorsMapToDesignCodes() async {
        let cases: [(URLFetchError.Code, AerieError.Code)] = [
            (.timeout, .timeout), (.unreachable, .peerUnreachable), (.forbiddenAddress, .invalidInvitation),
            (.forbiddenScheme, .invalidInvitation), (.tooManyRedirects, .invalidInvitation),
            (.tooLarge, .invalidInvitation), (.invalidURL, .invalidInvitation), (.busy, .busy),
        ]
        for (fetchCode, code) in cases {
            let reader = InvitationReader(
                fetcher: StubFetcher { _ in throw URLFetchError(fetchCode, "safe message", details: "10.0.0.1 secret") })
            let error = await expectAerieError(code, field: "url", containing: "safe message") {
                try await reader.read(url: "https://s.example/x")
            }
            #expect(error?.details?.contains("10.0.0.1") == true)
            #expect(error?.message.contains("10.0.0.1") == false)
        }
    }

    @Test func invitationURLsAreNeverFetched() async throws {
        let reader = InvitationReader(fetcher: StubFetcher.unused)
        for url in [Fixtures.ariesURLSeed003, Fixtures.acapyOob11URL, Fixtures.acapyOobAttachURL] {
            _ = try await reader.read(url: url)
        }
    }
}
