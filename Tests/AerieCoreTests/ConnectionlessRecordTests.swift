import AerieCore
import Testing

/// `ConnectionRecord.isConnectionless`: only an invitee's connection from an out-of-band
/// invitation without `handshake_protocols` and no handshake run is one (what the send service
/// puts our `~service` on).
struct ConnectionlessRecordTests {
    static func record(_ invitation: JSONValue, kind: Invitation.Kind = .outOfBand, handshake: String? = nil, role: ConnectionRecord.Role? = nil)
        -> ConnectionRecord
    {
        ConnectionRecord(
            state: .accepted, invitation: invitation, invitationKind: kind.rawValue, invitationId: "inv-1", handshakeProtocol: handshake,
            role: role)
    }

    @Test func onlyAnInvitationWithoutHandshakeMakesAConnectionlessConnection() {
        let withoutList: JSONValue = ["@id": "inv-1", "requests~attach": []]
        let emptyList: JSONValue = ["@id": "inv-1", "handshake_protocols": [], "requests~attach": []]
        let offered: JSONValue = ["@id": "inv-1", "handshake_protocols": ["https://didcomm.org/didexchange/1.1"]]
        #expect(Self.record(withoutList).isConnectionless)
        #expect(Self.record(emptyList).isConnectionless)
        #expect(!Self.record(offered).isConnectionless)
        #expect(!Self.record(offered, handshake: "https://didcomm.org/didexchange/1.1").isConnectionless)
        #expect(!Self.record(emptyList, handshake: "https://didcomm.org/didexchange/1.1").isConnectionless)
        #expect(!Self.record(withoutList, role: .inviter).isConnectionless)
        #expect(!Self.record(["@id": "inv-1"], kind: .aries).isConnectionless)
        #expect(!Self.record(["@id": "inv-1", "handshake_protocols": "not a list"]).isConnectionless)
    }
}
