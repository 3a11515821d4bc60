import AerieCore
import AerieCrypto
import Foundation
import Testing

@testable import ConnectionsPlugin

/// The inviter side of RFC 0160 without I/O: who an open invitation takes messages from, the
/// Request it reads and the Response and invitation it writes (its transitions:
/// `ConnectionStateMachineTests`).
@Suite(.timeLimit(.minutes(10))) struct InviterUnitTests {
    static func invitation(multiUse: Bool = false) -> ConnectionRecord {
        ConnectionRecord(invitation: ["@id": "inv"], invitationKind: "aries", myVerkey: "INVKEY", role: .inviter, multiUse: multiUse)
    }

    @Test func anOpenInvitationTakesRequestsOnlyAndRequestsGoNowhereElse() {
        let open = Self.invitation()
        #expect(open.isOpenInvitation)
        #expect(InboundSender.authenticate(senderVerkey: "ANY", connection: open, accepted: .invitationRequest) == .handshakeKey("ANY"))
        #expect(InboundSender.authenticate(senderVerkey: nil, connection: open, accepted: .invitationRequest) == nil)
        for other in [InboundSenders.peer, .handshakeReport, .handshakeResponse] {
            #expect(InboundSender.authenticate(senderVerkey: "ANY", connection: open, accepted: other) == nil)
        }
        // Responded: only the invitee's key, and no more Requests.
        var responded = open
        responded.state = .responded
        responded.theirVerkey = "THEIRS"
        #expect(!responded.isOpenInvitation)
        #expect(responded.awaitsPeerConfirmation)
        #expect(InboundSender.authenticate(senderVerkey: "THEIRS", connection: responded, accepted: .peer) == .peer)
        #expect(InboundSender.authenticate(senderVerkey: "OTHER", connection: responded, accepted: .peer) == nil)
        #expect(InboundSender.authenticate(senderVerkey: "THEIRS", connection: responded, accepted: .invitationRequest) == nil)
        // An invitee's connection never takes a Request.
        let invitee = ConnectionRecord(invitation: [:], invitationKind: "aries", firstRecipientKey: "K", myVerkey: "MINE")
        #expect(!invitee.isOpenInvitation && !invitee.awaitsPeerConfirmation)
        #expect(InboundSender.authenticate(senderVerkey: "K", connection: invitee, accepted: .invitationRequest) == nil)
    }

    @Test func aRequestIsReadAndItsDIDDocMustBeItsDIDs() throws {
        let key = Ed25519KeyPair.generate()
        let did = KeyReference.unqualifiedDID(verkey: key.verkey)
        let request = ConnectionMessages.request(
            id: "req-1", label: "Bob", did: did, verkey: key.verkeyBase58, endpoint: "http://bob.example/in", invitationId: "inv")
        let read = try ConnectionMessages.readRequest(request)
        #expect(read.peer == .init(did: did, verkey: key.verkeyBase58, endpoint: "http://bob.example/in", routingKeys: []))
        #expect(read.label == "Bob")
        #expect(read.threadId == "req-1")
        #expect(read.parentThreadId == "inv")

        // A DIDDoc of another DID, or no connection at all: invalid.
        guard case .object(var fields) = request, case .object(var connection)? = fields["connection"] else {
            Issue.record("request is not an object")
            return
        }
        connection["DID"] = "SomeoneElse1111111111"
        fields["connection"] = .object(connection)
        #expect(throws: AerieError.self) { try ConnectionMessages.readRequest(.object(fields)) }
        fields["connection"] = nil
        #expect(throws: AerieError.self) { try ConnectionMessages.readRequest(.object(fields)) }
    }

    @Test func theResponseIsSignedByTheInvitationKeyAndReadsBackAsTheInviteeReadsIt() throws {
        let invitationKey = Ed25519KeyPair.generate()
        let pairwise = Ed25519KeyPair.generate()
        let did = KeyReference.unqualifiedDID(verkey: pairwise.verkey)
        let signature = try SignatureDecorator.sign(
            ConnectionMessages.connection(did: did, verkey: pairwise.verkeyBase58, endpoint: "http://aerie.example"),
            with: invitationKey)
        let response = ConnectionMessages.response(threadId: "req-1", parentThreadId: "inv", signature: signature)
        #expect(response["~thread"] == ["thid": "req-1", "pthid": "inv"])
        // Aerie's own invitee side reads it (as ACA-Py does): signed by the invitation key only.
        let peer = try ConnectionMessages.readResponse(response, invitationKey: invitationKey.verkeyBase58)
        #expect(peer == .init(did: did, verkey: pairwise.verkeyBase58, endpoint: "http://aerie.example", routingKeys: []))
        #expect(throws: CryptoError.self) { try ConnectionMessages.readResponse(response, invitationKey: pairwise.verkeyBase58) }
    }

    @Test func theInvitationURLCarriesTheInvitation() throws {
        let invitation = ConnectionMessages.invitation(id: "inv-1", label: "Alice", recipientKey: "KEY", endpoint: "http://aerie.example:7401")
        let url = ConnectionMessages.invitationURL(invitation, endpoint: "http://aerie.example:7401")
        #expect(url.hasPrefix("http://aerie.example:7401?c_i="))
        #expect(try InvitationURL.embeddedInvitation(in: url) == invitation)
    }
}
