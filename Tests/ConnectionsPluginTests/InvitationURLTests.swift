import AerieCore
import AerieCrypto
import ConnectionsPlugin
import Testing

/// `?c_i=`, `?oob=`, `?d_m=` in every encoding peers use, decoded without any network.
@Suite(.timeLimit(.minutes(10))) struct InvitationURLTests {
    func invitation(_ url: String) throws -> Invitation {
        let json = try #require(try InvitationURL.embeddedInvitation(in: url))
        return try InvitationParser.parse(json)
    }

    @Test func seed003ConnectionURLPaddedBase64() throws {
        let invitation = try invitation(Fixtures.ariesURLSeed003)
        #expect(invitation.kind == .aries)
        #expect(invitation.id == "8aa5e6c9-ff6d-4445-9e56-b455241e5edb")
        #expect(invitation.recipientKeys == ["3aVHVdAqfpJJeQ8mfvnTWF41ZhaLbuUKArwRUBFWeZ3Q"])
        #expect(invitation.label == "Acme")
    }

    @Test func seed003OutOfBandURLUnpadded() throws {
        let invitation = try invitation(Fixtures.outOfBandURLSeed003)
        #expect(invitation.kind == .outOfBand)
        #expect(invitation.id == "69212a3a-d068-4f9d-a2dd-4741bca89af3")
        #expect(invitation.publicDid == "did:sov:LjgpST2rjsoxYegQDRm7EL")
    }

    @Test func acapyURLs() throws {
        #expect(try invitation(Fixtures.acapyCiURL).json == Fixtures.json(Fixtures.acapyCi))
        #expect(try invitation(Fixtures.acapyCiPublicURL).json == Fixtures.json(Fixtures.acapyCiPublic))
        #expect(try invitation(Fixtures.acapyOob11URL).json == Fixtures.json(Fixtures.acapyOob11))
        #expect(try invitation(Fixtures.acapyOob10PublicURL).json == Fixtures.json(Fixtures.acapyOob10Public))
        #expect(try invitation(Fixtures.acapyOobAttachURL).hasAttachment)
    }

    /// The same invitation in each alphabet, with and without padding, raw or percent-encoded.
    @Test func everyEncodingOfOnePayload() throws {
        // A label chosen so the standard alphabet needs '+' and '/' and the length needs padding.
        var label = "Fab>>?er ~~~ Coll??ege"
        var json = Fixtures.json(Fixtures.acapyCi).setting("label", to: .string(label))
        while json.serialized().count % 3 == 0 {
            label += "!"
            json = json.setting("label", to: .string(label))
        }
        let bytes = json.serialized()
        let standard = Base64.encode(bytes)
        #expect(standard.contains("+") || standard.contains("/"))
        #expect(standard.hasSuffix("="))
        let forms = [
            standard,
            String(standard.prefix { $0 != "=" }),
            Base64.encodeURL(bytes),
            Base64.encodeURL(bytes, padding: true),
            percentEncodeAll(standard),
            standard.replacingOccurrences(of: "=", with: "%3D").replacingOccurrences(of: "+", with: "%2B")
                .replacingOccurrences(of: "/", with: "%2f"),
            standard.replacingOccurrences(of: "+", with: " "),
            // Wrapped by a mail client.
            String(standard.prefix(40)) + "%0D%0A" + String(standard.dropFirst(40)),
        ]
        for (index, value) in forms.enumerated() {
            for name in ["c_i", "oob", "d_m"] {
                let url = "https://agent.example.org/path?x=1&\(name)=\(value)&y=2#frag"
                let decoded = try InvitationURL.embeddedInvitation(in: url)
                #expect(decoded == json, "form \(index) via \(name)")
            }
        }
    }

    @Test func percentEncodedJSONInsteadOfBase64() throws {
        let text = Fixtures.json(Fixtures.acapyOob10Public).jsonString
        let decoded = try InvitationURL.embeddedInvitation(in: "https://x.example/?oob=" + percentEncodeAll(text))
        #expect(decoded == Fixtures.json(Fixtures.acapyOob10Public))
    }

    @Test func parameterInTheFragmentAndOtherSchemes() throws {
        let value = Base64.encodeURL(Fixtures.json(Fixtures.acapyOob11).serialized())
        for url in [
            "https://wallet.example.org/#/invite?oob=\(value)",
            "didcomm://invite?oob=\(value)",
            "?oob=\(value)",
            "https://x.example/invite?c%5Fi=\(value)",
        ] {
            #expect(try invitation(url).id == "9d8c7b6a-5f4e-4d3c-8b2a-1f0e9d8c7b6a", "\(url.prefix(40))")
        }
    }

    /// The query split on its bytes: empty pairs skipped, a name without `=` has an empty value,
    /// percent-encoded names, the first `#` ends the query and a `?…` in the fragment is read too,
    /// the first parameter name in `parameterNames` order wins, non-ASCII text passes through.
    @Test func queryItemsAreSplitOnBytes() throws {
        let value = Base64.encodeURL(Fixtures.json(Fixtures.acapyOob11).serialized())
        for url in [
            "https://x.example/?&&oob=\(value)&&",
            "https://x.example/?c_i&oob=\(value)",
            "https://x.example/?%6F%6Fb=\(value)",
            "https://x.example/?a=1#/p?oob=\(value)",
            "https://x.example/?c_i=bad!#?oob=\(value)",
            "https://ex.example/é?ü=ö&oob=\(value)",
        ] {
            #expect(try invitation(url).id == "9d8c7b6a-5f4e-4d3c-8b2a-1f0e9d8c7b6a", "\(url.prefix(40))")
        }
    }

    @Test func queryItemsWithoutUsableValues() async {
        await expectAerieError(.invalidInvitation, field: "url", containing: "is empty") {
            try InvitationURL.embeddedInvitation(in: "https://x.example/?c_i") as Any
        }
        // Only the first '=' separates: the value is "a=b".
        await expectAerieError(.invalidInvitation, field: "url", containing: "not valid base64") {
            try InvitationURL.embeddedInvitation(in: "https://x.example/?oob=a=b&x") as Any
        }
    }

    @Test func noInvitationParameter() throws {
        for url in ["https://vty.im/cnf4m", "https://x.example/?c_id=abc&oobx=1", "", "no url at all", "https://x/#c_i=abc"] {
            #expect(try InvitationURL.embeddedInvitation(in: url) == nil, "\(url)")
            #expect(!InvitationURL.hasInvitationParameter(url))
        }
    }

    @Test func badParameters() async {
        await expectAerieError(.invalidInvitation, field: "url", containing: "not valid base64") {
            try InvitationURL.embeddedInvitation(in: "https://x.example/?c_i=@@@@") as Any
        }
        await expectAerieError(.invalidInvitation, field: "url", containing: "not valid base64") {
            try InvitationURL.embeddedInvitation(in: "https://x.example/?c_i=a") as Any
        }
        await expectAerieError(.invalidInvitation, field: "url", containing: "does not hold JSON") {
            try InvitationURL.embeddedInvitation(in: "https://x.example/?c_i=aGVsbG8") as Any
        }
        await expectAerieError(.invalidInvitation, field: "url", containing: "percent-encoding") {
            try InvitationURL.embeddedInvitation(in: "https://x.example/?oob=abc%zz") as Any
        }
        await expectAerieError(.invalidInvitation, field: "url", containing: "is empty") {
            try InvitationURL.embeddedInvitation(in: "https://x.example/?oob=&c_i=") as Any
        }
        let huge = "https://x.example/?oob=" + String(repeating: "A", count: 200 * 1024)
        await expectAerieError(.invalidInvitation, field: "url", containing: "longer than") {
            try InvitationURL.embeddedInvitation(in: huge) as Any
        }
        // Decodes to more than 64 KiB.
        let big = "https://x.example/?oob=" + String(repeating: "A", count: 100 * 1024)
        await expectAerieError(.invalidInvitation, field: "url", containing: "larger than 64 KiB") {
            try InvitationURL.embeddedInvitation(in: big) as Any
        }
    }

    private func percentEncodeAll(_ text: String) -> String {
        text.utf8.map { byte in
            let hex = String(byte, radix: 16, uppercase: true)
            return "%" + (hex.count == 1 ? "0" + hex : hex)
        }.joined()
    }
}

extension String {
    func replacingOccurrences(of target: String, with replacement: String) -> String {
        split(separator: target, omittingEmptySubsequences: false).joined(separator: replacement)
    }
}
