import AerieCore
import AerieCrypto
@testable import ConnectionsPlugin
import Testing

/// An out-of-band invitation whose service is a DID: a did:peer:4 in its long form (what ACA-Py
/// writes with `use_did_method: did:peer:4`) is resolved from the document it carries; its short
/// form matches what the long form made and is otherwise refused by name, as a did:peer:1 and a
/// tampered did:peer:4 are.
@Suite struct InvitationPeerDIDServiceTests {
    static let peer4 = ResponderMessagesTests.peer4

    static func invitation(services: [JSONValue]) -> JSONValue {
        [
            "@type": "https://didcomm.org/out-of-band/1.1/invitation", "@id": "inv-4", "label": "ACA-Py",
            "handshake_protocols": ["https://didcomm.org/didexchange/1.1"], "services": .array(services),
        ]
    }

    @Test func aLongFormDIDPeer4ServiceIsResolved() throws {
        let invitation = try InvitationParser.parse(Self.invitation(services: [.string(Self.peer4)]))
        #expect(invitation.recipientKeys == ["4zvwRjXUKGfvwnParsHAS3HuSVzV5cA4McphgmoCtajS"])
        #expect(invitation.serviceEndpoint == "http://peer.example:8020")
        #expect(invitation.services.first?.did == Self.peer4)
        #expect(invitation.services.first?.isUsable == true)
        // The DID that names the inviter in matching, in either form: its short form.
        #expect(invitation.publicDid == PeerDID4.shortForm(Self.peer4))
    }

    /// A short form names the DID its long form named: both match by it. Connecting to one
    /// (nothing of the tenant's matched it) is refused by name.
    @Test func aShortFormDIDPeer4MatchesItsLongFormAndIsNotConnectable() throws {
        let short = Self.peer4.split(separator: ":").prefix(3).joined(separator: ":")
        let long = try InvitationParser.parse(Self.invitation(services: [.string(Self.peer4)]))
        let shortOnly = try InvitationParser.parse(Self.invitation(services: [.string(short)]))
        #expect(long.publicDid == short && shortOnly.publicDid == short)
        #expect(InvitationMatchKeys(id: nil, publicDid: Self.peer4, firstRecipientKey: nil).match(
            InvitationMatchKeys(id: nil, publicDid: short, firstRecipientKey: nil)) == .publicDid)
        let error = try #require(throws: AerieError.self) { try shortOnly.usableService() }
        #expect(error.code == .unsupportedInvitation)
        #expect(error.message.contains("short form"))
        #expect(error.field == "services")
    }

    @Test func aDIDPeer1IsRefusedAsUnsupported() throws {
        let did = "did:peer:1zQmZMygzYqNwU6Uhmewx5Xepf2VLp5S4HLSwwgf2aiKZuwa"
        let error = try #require(throws: AerieError.self) { try InvitationParser.parse(Self.invitation(services: [.string(did)])) }
        #expect(error.code == .unsupportedInvitation)
        #expect(error.message.contains("did:peer:1"))
        #expect(error.message.contains("an invitation cannot carry one"))
    }

    /// Beside a usable inline service, an unresolvable peer DID is no reason to refuse.
    @Test func anUnresolvablePeerDIDBesideAUsableServiceIsKept() throws {
        let inline: JSONValue = [
            "id": "#inline", "type": "did-communication", "serviceEndpoint": "http://peer.example:8020",
            "recipientKeys": ["did:key:z6MknpgBxnwXKcmm1bd2yMNMNiYUf1Di3gaR1CPSm4zg9Ki7"],
        ]
        let invitation = try InvitationParser.parse(Self.invitation(services: ["did:peer:1zQmZ", inline]))
        #expect(invitation.serviceEndpoint == "http://peer.example:8020")
    }

    @Test func aTamperedDIDPeer4IsInvalid() throws {
        var tampered = Array(Self.peer4)
        tampered[tampered.count - 5] = tampered[tampered.count - 5] == "a" ? "b" : "a"
        let error = try #require(throws: AerieError.self) {
            try InvitationParser.parse(Self.invitation(services: [.string(String(tampered))]))
        }
        #expect(error.code == .invalidInvitation)
        #expect(error.field == "services[0]")
    }

    @Test func longFormIsTold() {
        #expect(PeerDID4.isLongForm(Self.peer4))
        #expect(!PeerDID4.isLongForm("did:peer:4zQmNte3upk6NSag9mkD2YrK8sNMdavpgVZrvYD9MHaxPxvg"))
        #expect(!PeerDID4.isLongForm("did:peer:2.Vz6Mk"))
    }
}
