import AerieCore
import ConnectionsPlugin
import Testing

/// Every invitation form of the seeds and of ACA-Py, read field by field.
@Suite(.timeLimit(.minutes(10))) struct InvitationParserTests {
    @Test func proprietaryStandardFromSeed000() throws {
        let invitation = try InvitationParser.parse(text: Fixtures.proprietaryStandard)
        #expect(invitation.kind == .proprietary)
        #expect(invitation.type == nil)
        #expect(invitation.id == "bbb934b7-409f-4540-b73e-1aedd0c464cb")
        #expect(invitation.label == "DEMO-Faber College")
        #expect(invitation.logoUrl == "https://s3.us-east-2.amazonaws.com/public-demo-artifacts/demo-icons/cbFaber.png")
        #expect(invitation.publicDid == "AVYNnUaVRb261zXkYCrxHz")
        #expect(invitation.recipientKeys == ["Dwp6hVe91vSQbuk49QeihmLZ7JWXognfAWwYW77eRrNz"])
        #expect(invitation.serviceEndpoint == "eas.evernym.com:80/agency/msg")
        #expect(invitation.routingKeys == ["3UX8ZEkpg6ZGPiqdTWdPm5c63z5XotrD7vSKp8DLE9iu"])
        #expect(invitation.handshakeProtocols.isEmpty)
        #expect(!invitation.hasAttachment)
        #expect(invitation.json == Fixtures.json(Fixtures.proprietaryStandard))
    }

    @Test func proprietaryAbbreviatedFromSeed000() throws {
        let invitation = try InvitationParser.parse(text: Fixtures.proprietaryAbbreviated)
        let standard = try InvitationParser.parse(text: Fixtures.proprietaryStandard)
        #expect(invitation.kind == .proprietaryAbbreviated)
        // The same invitation in both forms reads the same.
        #expect(invitation.id == standard.id)
        #expect(invitation.label == standard.label)
        #expect(invitation.logoUrl == standard.logoUrl)
        #expect(invitation.publicDid == standard.publicDid)
        #expect(invitation.recipientKeys == standard.recipientKeys)
        #expect(invitation.serviceEndpoint == standard.serviceEndpoint)
        #expect(invitation.routingKeys == standard.routingKeys)
    }

    @Test func ariesFromSeed000UnderTheLegacyPrefix() throws {
        let invitation = try InvitationParser.parse(text: Fixtures.ariesSeed000)
        #expect(invitation.kind == .aries)
        #expect(invitation.type == "did:sov:BzCbsNYhMrjHiqZDTUASHg;spec/connections/1.0/invitation")
        #expect(invitation.id == "467f6449-7d1f-4a9f-ada7-09d6444af083")
        #expect(invitation.label == "Acme")
        #expect(invitation.logoUrl == "https://s3.us-east-2.amazonaws.com/public-demo-artifacts/demo-icons/cbACME.png")
        #expect(invitation.recipientKeys == [Fixtures.acapyVerkey])
        #expect(invitation.routingKeys == [Fixtures.acapyVerkey, Fixtures.acapyRoutingVerkey])
        #expect(invitation.serviceEndpoint == "http://vas.evernym.com:80/agency/msg")
        #expect(invitation.publicDid == nil)
    }

    @Test func outOfBandFromSeed000WithRequestAttachAndDIDService() throws {
        let invitation = try InvitationParser.parse(text: Fixtures.outOfBandSeed000)
        #expect(invitation.kind == .outOfBand)
        #expect(invitation.id == "9NR9NYh5z5HHu6nLHnQWXczUqRwrdoL4KBUWvo2fE6vj")
        #expect(invitation.label == "Faber College")
        #expect(invitation.goalCode == "issue-vc")
        #expect(invitation.goal == "To issue a Faber College Graduate credential")
        #expect(
            invitation.handshakeProtocols == [
                "https://didcomm.org/didexchange/1.0", "https://didcomm.org/connections/1.0",
            ])
        #expect(invitation.hasAttachment)
        #expect(invitation.attachments.first?["@id"] == "request-0")
        #expect(invitation.services == [Invitation.Service(did: "did:sov:LjgpST2rjsoxYegQDRm7EL")])
        #expect(invitation.publicDid == "did:sov:LjgpST2rjsoxYegQDRm7EL")
        #expect(invitation.recipientKeys.isEmpty)
        #expect(invitation.serviceEndpoint == nil)
    }

    @Test func outOfBandFromSeed001WithInlineService() throws {
        let invitation = try InvitationParser.parse(text: Fixtures.outOfBandSeed001)
        #expect(invitation.kind == .outOfBand)
        #expect(invitation.recipientKeys == [Fixtures.acapyVerkey])
        #expect(invitation.routingKeys == [Fixtures.acapyVerkey, Fixtures.acapyRoutingVerkey])
        #expect(invitation.serviceEndpoint == "http://vas.evernym.com:80/agency/msg")
        #expect(invitation.services.first?.id == "#inline")
        #expect(invitation.services.first?.type == "did-communication")
        #expect(invitation.publicDid == nil)
    }

    @Test func seed001AsPrintedIsInvalidJSONNotACrash() async {
        await expectAerieError(.invalidInvitation, field: "invitation", containing: "not valid JSON") {
            try InvitationParser.parse(text: Fixtures.outOfBandSeed001WithTrailingComma)
        }
    }

    @Test func acapyConnectionInvitation() throws {
        let invitation = try InvitationParser.parse(text: Fixtures.acapyCi)
        #expect(invitation.kind == .aries)
        #expect(invitation.type == "https://didcomm.org/connections/1.0/invitation")
        #expect(invitation.id == "3b1b2b6a-4f1e-4a7a-9b6e-0b9a8d0f5c11")
        #expect(invitation.label == "ACA-Py Faber")
        #expect(invitation.logoUrl == "https://faber.example.org/logo.png")
        #expect(invitation.recipientKeys == [Fixtures.acapyVerkey])
        #expect(invitation.routingKeys == [Fixtures.acapyRoutingVerkey])
        #expect(invitation.serviceEndpoint == "https://faber.example.org/didcomm")
    }

    @Test func acapyPublicDIDConnectionInvitation() throws {
        let invitation = try InvitationParser.parse(text: Fixtures.acapyCiPublic)
        #expect(invitation.kind == .aries)
        #expect(invitation.publicDid == "did:sov:LjgpST2rjsoxYegQDRm7EL")
        #expect(invitation.recipientKeys.isEmpty)
        #expect(invitation.serviceEndpoint == nil)
    }

    @Test func unqualifiedPublicDIDIsAccepted() throws {
        var json = Fixtures.json(Fixtures.acapyCiPublic)
        json = json.setting("did", to: "LjgpST2rjsoxYegQDRm7EL")
        #expect(try InvitationParser.parse(json).publicDid == "LjgpST2rjsoxYegQDRm7EL")
    }

    @Test func acapyOutOfBand11WithDIDKeyReferences() throws {
        let invitation = try InvitationParser.parse(text: Fixtures.acapyOob11)
        #expect(invitation.kind == .outOfBand)
        #expect(invitation.type == "https://didcomm.org/out-of-band/1.1/invitation")
        #expect(invitation.id == "9d8c7b6a-5f4e-4d3c-8b2a-1f0e9d8c7b6a")
        // did:key:…#… references normalised to base58 verkeys.
        #expect(invitation.recipientKeys == [Fixtures.acapyVerkey])
        #expect(invitation.routingKeys == [Fixtures.acapyRoutingVerkey])
        #expect(invitation.serviceEndpoint == "https://faber.example.org/didcomm")
        #expect(invitation.handshakeProtocols == ["https://didcomm.org/didexchange/1.1", "https://didcomm.org/connections/1.0"])
        #expect(invitation.accept == ["didcomm/aip1", "didcomm/aip2;env=rfc19"])
        #expect(invitation.goalCode == "issue-vc")
        #expect(invitation.goal == "To issue a credential")
        #expect(!invitation.hasAttachment)
    }

    @Test func acapyOutOfBand10WithPublicDIDService() throws {
        let invitation = try InvitationParser.parse(text: Fixtures.acapyOob10Public)
        #expect(invitation.type == "https://didcomm.org/out-of-band/1.0/invitation")
        #expect(invitation.publicDid == "did:sov:LjgpST2rjsoxYegQDRm7EL")
        #expect(invitation.services == [Invitation.Service(did: "did:sov:LjgpST2rjsoxYegQDRm7EL")])
    }

    @Test func acapyOutOfBandWithRequestsAttachAndNoHandshake() throws {
        let invitation = try InvitationParser.parse(text: Fixtures.acapyOobAttach)
        #expect(invitation.handshakeProtocols.isEmpty)
        #expect(invitation.hasAttachment)
        #expect(invitation.attachments.count == 1)
        #expect(invitation.attachments[0]["data"]?["json"]?["@id"] == "req-1")
    }

    @Test func acapyOutOfBandWithBase64Attachment() throws {
        let invitation = try InvitationParser.parse(text: Fixtures.acapyOobB64attach)
        #expect(invitation.hasAttachment)
        #expect(invitation.handshakeProtocols == ["https://didcomm.org/connections/1.0"])
    }

    @Test func acapyOutOfBandWithDIDPeer2Service() throws {
        let invitation = try InvitationParser.parse(text: Fixtures.acapyOobPeer)
        #expect(invitation.recipientKeys == [Fixtures.acapyVerkey])
        #expect(invitation.routingKeys == [Fixtures.acapyRoutingVerkey])
        #expect(invitation.serviceEndpoint == "https://peer.example.org/didcomm")
        #expect(invitation.services.first?.did?.hasPrefix("did:peer:2.") == true)
        // A did:peer:2 is pairwise, not a public DID.
        #expect(invitation.publicDid == nil)
    }

    @Test(arguments: [
        "https://didcomm.org/out-of-band/1.0/invitation",
        "https://didcomm.org/out-of-band/1.1/invitation",
        "https://didcomm.org/out-of-band/1.2/invitation",
        "did:sov:BzCbsNYhMrjHiqZDTUASHg;spec/out-of-band/1.0/invitation",
        "did:sov:BzCbsNYhMrjHiqZDTUASHg;spec/out-of-band/1.1/invitation",
    ])
    func outOfBandTypesUnderBothPrefixes(type: String) throws {
        let json = Fixtures.json(Fixtures.acapyOob11).setting("@type", to: .string(type))
        let invitation = try InvitationParser.parse(json)
        #expect(invitation.kind == .outOfBand)
        #expect(invitation.type == type)
    }

    @Test(arguments: [
        "https://didcomm.org/connections/1.0/invitation",
        "did:sov:BzCbsNYhMrjHiqZDTUASHg;spec/connections/1.0/invitation",
    ])
    func connectionTypesUnderBothPrefixes(type: String) throws {
        let json = Fixtures.json(Fixtures.acapyCi).setting("@type", to: .string(type))
        #expect(try InvitationParser.parse(json).kind == .aries)
    }

    /// The endpoint check (`checkEndpoint`), read on the URL's UTF-8 bytes: an http(s) or ws(s)
    /// scheme in any case, then `://`, then a host (a port only as digits, userinfo dropped).
    @Test func endpointsAcceptedAndRefused() async throws {
        let base = Fixtures.json(Fixtures.acapyCi)
        for endpoint in [
            "http://127.0.0.1:8020", "HTTPS://Agent.Example.org/didcomm?x=1#y", "ws://h", "wss://[::1]:443/ws",
            "https://user:pass@host.example:8443/", "http://h:80/a://b", "https://é.example/",
        ] {
            #expect(try InvitationParser.parse(base.setting("serviceEndpoint", to: .string(endpoint))).serviceEndpoint == endpoint)
        }
        for endpoint in [
            "ftp://h", "http:/h", "http//h", "h", "://h", "http://", "http://:80", "http://h:", "http://h:8o",
            "http://[::1", "http://[::1]x", "ht:tp://h", "http://user@", "mailto:x@y",
        ] {
            await expectAerieError(.invalidInvitation, field: "serviceEndpoint", containing: "http(s) or ws(s)") {
                try InvitationParser.parse(base.setting("serviceEndpoint", to: .string(endpoint)))
            }
        }
    }

    @Test func serviceSpelledServicesOrServiceAndEndpointAsObject() throws {
        var json = Fixtures.json(Fixtures.acapyOob11)
        let services = json["services"]!
        json = json.setting("services", to: nil).setting("service", to: services)
        #expect(try InvitationParser.parse(json).recipientKeys == [Fixtures.acapyVerkey])

        let inline: JSONValue = [
            "id": "#inline", "type": "DIDCommMessaging",
            "recipientKeys": [.string(Fixtures.acapyDIDKey)],
            "serviceEndpoint": ["uri": "wss://ws.example.org/didcomm"],
        ]
        json = Fixtures.json(Fixtures.acapyOob11).setting("services", to: [inline])
        let invitation = try InvitationParser.parse(json)
        #expect(invitation.serviceEndpoint == "wss://ws.example.org/didcomm")
        #expect(invitation.recipientKeys == [Fixtures.acapyVerkey])
    }

    @Test func firstUsableServiceGivesKeysAndDIDServiceGivesPublicDID() throws {
        let json = Fixtures.json(Fixtures.acapyOob11).setting(
            "services", to: ["did:web:example.org", Fixtures.json(Fixtures.acapyOob11)["services"]!.items[0]])
        let invitation = try InvitationParser.parse(json)
        #expect(invitation.publicDid == "did:web:example.org")
        #expect(invitation.recipientKeys == [Fixtures.acapyVerkey])
        #expect(invitation.services.count == 2)
    }

    @Test func summaryCarriesTheDesignFields() throws {
        let invitation = try InvitationParser.parse(text: Fixtures.proprietaryAbbreviated)
        let summary = try JSONValue(encoding: InvitationSummary(invitation))
        #expect(summary["kind"] == "proprietary-abbreviated")
        #expect(summary["id"] == "bbb934b7-409f-4540-b73e-1aedd0c464cb")
        #expect(summary["hasAttachment"] == false)
        #expect(summary["recipientKeys"] == ["Dwp6hVe91vSQbuk49QeihmLZ7JWXognfAWwYW77eRrNz"])
        #expect(summary["existingConnectionId"] == nil)
        let matched = try JSONValue(encoding: InvitationSummary(invitation, existingConnectionId: "c-1"))
        #expect(matched["existingConnectionId"] == "c-1")
        for key in [
            "kind", "id", "label", "logoUrl", "publicDid", "recipientKeys", "serviceEndpoint", "routingKeys",
            "handshakeProtocols", "hasAttachment",
        ] {
            #expect(summary[key] != nil, "missing \(key)")
        }
        let oob = try JSONValue(encoding: InvitationSummary(try InvitationParser.parse(text: Fixtures.acapyOob11)))
        #expect(oob["kind"] == "out-of-band")
        #expect(oob["goal"] == "To issue a credential")
        #expect(oob["goalCode"] == "issue-vc")
    }
}

extension JSONValue {
    var items: [JSONValue] {
        if case .array(let items) = self { return items }
        return []
    }

    /// A copy with `key` set (nil removes it).
    func setting(_ key: String, to value: JSONValue?) -> JSONValue {
        guard case .object(var fields) = self else { return self }
        fields[key] = value
        return .object(fields)
    }
}
