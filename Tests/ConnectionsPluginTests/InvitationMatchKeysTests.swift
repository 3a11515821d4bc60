import AerieCore
import AerieCrypto
import ConnectionsPlugin
import Testing

/// Duplicate detection keys: `@id`, public DID, first recipient key, each normalised.
@Suite(.timeLimit(.minutes(10))) struct InvitationMatchKeysTests {
    @Test func didKeyAndBase58OfOneKeyMatch() throws {
        // ACA-Py's OOB names the key as did:key:…#…; seed 000's Aries invitation as base58.
        let oob = InvitationMatchKeys(try InvitationParser.parse(text: Fixtures.acapyOob11))
        let aries = InvitationMatchKeys(try InvitationParser.parse(text: Fixtures.ariesSeed000))
        #expect(oob.firstRecipientKey == Fixtures.acapyVerkey)
        #expect(oob.match(aries) == .recipientKey)
        #expect(aries.match(oob) == .recipientKey)
    }

    @Test func keysAreNormalisedOnTheWayIn() throws {
        let bare = InvitationMatchKeys(id: nil, publicDid: nil, firstRecipientKey: Fixtures.acapyDIDKey)
        let withFragment = InvitationMatchKeys(
            id: nil, publicDid: nil, firstRecipientKey: try DIDKey.keyReference(verkey: Base58.decode(Fixtures.acapyVerkey)))
        #expect(bare.firstRecipientKey == Fixtures.acapyVerkey)
        #expect(withFragment.firstRecipientKey == Fixtures.acapyVerkey)
        #expect(InvitationMatchKeys.normalizedKey("did:key:zNotAKey") == "did:key:zNotAKey")
        #expect(InvitationMatchKeys.normalizedKey(Fixtures.acapyVerkey) == Fixtures.acapyVerkey)
    }

    @Test func qualifiedAndUnqualifiedPublicDIDsMatch() throws {
        let oob = InvitationMatchKeys(try InvitationParser.parse(text: Fixtures.outOfBandSeed000))
        let aries = InvitationMatchKeys(try InvitationParser.parse(text: Fixtures.acapyCiPublic))
        let unqualified = InvitationMatchKeys(id: "other", publicDid: "LjgpST2rjsoxYegQDRm7EL", firstRecipientKey: nil)
        #expect(oob.publicDid == "LjgpST2rjsoxYegQDRm7EL")
        #expect(oob.match(aries) == .publicDid)
        #expect(unqualified.match(oob) == .publicDid)
        let web = InvitationMatchKeys(id: nil, publicDid: "did:web:example.org", firstRecipientKey: nil)
        #expect(web.publicDid == "did:web:example.org")
        #expect(web.match(oob) == nil)
    }

    @Test func sameIdIsTheStrongestMatch() throws {
        let standard = InvitationMatchKeys(try InvitationParser.parse(text: Fixtures.proprietaryStandard))
        let abbreviated = InvitationMatchKeys(try InvitationParser.parse(text: Fixtures.proprietaryAbbreviated))
        #expect(standard.match(abbreviated) == .id)
        let url = InvitationMatchKeys(
            try InvitationParser.parse(#require(try InvitationURL.embeddedInvitation(in: Fixtures.acapyOob11URL))))
        #expect(url.match(InvitationMatchKeys(try InvitationParser.parse(text: Fixtures.acapyOob11))) == .id)
    }

    @Test func unrelatedAndEmptyKeysNeverMatch() throws {
        let aries = InvitationMatchKeys(try InvitationParser.parse(text: Fixtures.acapyCi))
        let proprietary = InvitationMatchKeys(try InvitationParser.parse(text: Fixtures.proprietaryStandard))
        #expect(aries.match(proprietary) == nil)
        let empty = InvitationMatchKeys(id: "", publicDid: "", firstRecipientKey: "")
        #expect(empty == InvitationMatchKeys(id: nil, publicDid: nil, firstRecipientKey: nil))
        #expect(empty.match(empty) == nil)
    }
}
