import AerieCore
import Foundation
import Testing

@testable import AerieRPC

/// The places of authenticated sessions, without a socket.
struct SessionAdmissionTests {
    let a = SessionCredential.Kind.tenant(TenantID(uuid: UUID()))
    let b = SessionCredential.Kind.tenant(TenantID(uuid: UUID()))
    let backend = SessionCredential.Kind.backend(.random())

    @Test func exactlyMaxSessionsAreAdmitted() {
        var admission = SessionAdmission(maxSessions: 40, maxPerCredential: 40, maxAdmin: 2)
        for session in 0..<40 { #expect(admission.admit(UInt64(session), as: a) == nil) }
        #expect(admission.admit(40, as: b) == .serverFull)
        #expect(admission.sharedCount == 40)
    }

    @Test func oneCredentialHoldsAtMostItsCap() {
        var admission = SessionAdmission(maxSessions: 10, maxPerCredential: 3, maxAdmin: 2)
        for session in 0..<3 { #expect(admission.admit(UInt64(session), as: a) == nil) }
        #expect(admission.admit(3, as: a) == .credentialFull)
        #expect(admission.admit(4, as: b) == nil)
        #expect(admission.admit(5, as: backend) == nil)
        admission.release(0)
        #expect(admission.admit(3, as: a) == nil)
    }

    @Test func adminSessionsHaveTheirOwnBoundedLane() {
        var admission = SessionAdmission(maxSessions: 2, maxPerCredential: 2, maxAdmin: 2)
        #expect(admission.admit(0, as: a) == nil)
        #expect(admission.admit(1, as: b) == nil)
        #expect(admission.admit(2, as: b) == .serverFull)
        #expect(admission.admit(3, as: .admin) == nil)
        #expect(admission.admit(4, as: .admin) == nil)
        #expect(admission.admit(5, as: .admin) == .adminFull)
        #expect(admission.sharedCount == 2)
        #expect(admission.adminCount == 2)
    }

    /// Authenticating again as another credential moves the session's place; a refusal leaves it.
    @Test func reauthenticationMovesThePlace() {
        var admission = SessionAdmission(maxSessions: 2, maxPerCredential: 1, maxAdmin: 1)
        #expect(admission.admit(0, as: a) == nil)
        #expect(admission.admit(0, as: a) == nil)
        #expect(admission.admit(0, as: b) == nil)
        #expect(admission.admit(1, as: a) == nil)
        #expect(admission.admit(1, as: b) == .credentialFull)
        #expect(admission.held[1] == a)
        #expect(admission.admit(0, as: .admin) == nil)
        #expect(admission.sharedCount == 1)
        admission.release(0)
        admission.release(1)
        #expect(admission.sharedCount == 0)
        #expect(admission.adminCount == 0)
        #expect(admission.held.isEmpty)
    }
}
