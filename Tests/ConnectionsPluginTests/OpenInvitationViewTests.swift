import AerieCore
import Foundation
import Testing

@testable import ConnectionsPlugin

/// `connections.get` parses a view only when its text may be an open invitation of ours
/// (`ConnectionService.mayBeOpenInvitation`); every other view is answered as its ready text.
@Suite(.timeLimit(.minutes(5))) struct OpenInvitationViewTests {
    @Test func onlyAnOpenInvitationOfOursIsParsed() {
        let open = ConnectionView(ConnectionRecord(state: .initialized, invitation: [:], invitationKind: "aries", role: .inviter))
        #expect(ConnectionService.mayBeOpenInvitation(open.text))
        for (state, role) in [(ConnectionRecord.State.responded, ConnectionRecord.Role.inviter), (.initialized, .invitee)] {
            let view = ConnectionView(ConnectionRecord(state: state, invitation: [:], invitationKind: "aries", role: role))
            #expect(!ConnectionService.mayBeOpenInvitation(view.text), "\(state) \(role)")
        }
    }

    /// A peer's text naming the members is escaped inside its string, so it never matches.
    @Test func membersInsideAStringDoNotMatch() {
        var record = ConnectionRecord(
            state: .responded, invitation: ["label": #""role":"inviter","stateName":"initialized""#], invitationKind: "aries",
            role: .invitee)
        record.alias = #""role":"inviter" "stateName":"initialized""#
        record.label = #""role":"inviter","stateName":"initialized""#
        #expect(!ConnectionService.mayBeOpenInvitation(ConnectionView(record).text))
    }
}
