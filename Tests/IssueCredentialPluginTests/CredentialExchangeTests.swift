import AerieCore
import Testing

@testable import IssueCredentialPlugin

/// RFC 0453's holder states: every transition allowed, every other refused with `conflict`.
@Suite(.timeLimit(.minutes(10))) struct CredentialExchangeTests {
    typealias State = CredentialExchange.State

    @Test func theHolderPathsOfRFC0453() throws {
        #expect(try CredentialExchange.next(nil, on: .offerReceived) == .offerReceived)
        #expect(try CredentialExchange.next(.offerReceived, on: .requestSent) == .requestSent)
        #expect(try CredentialExchange.next(.requestSent, on: .credentialReceived) == .credentialReceived)
        #expect(try CredentialExchange.next(.credentialReceived, on: .ackSent) == .done)
        #expect(try CredentialExchange.next(nil, on: .proposalSent) == .proposalSent)
        #expect(try CredentialExchange.next(.proposalSent, on: .offerReceived) == .offerReceived)
        // A counter-offer after our request.
        #expect(try CredentialExchange.next(.requestSent, on: .offerReceived) == .offerReceived)
        for state in [State.proposalSent, .offerReceived, .requestSent, .credentialReceived] {
            #expect(try CredentialExchange.next(state, on: .problemReport) == .abandoned)
        }
    }

    @Test func everythingElseIsAConflict() {
        let allowed: Set<String> = [
            "nil offerReceived", "nil proposalSent", "offerReceived requestSent", "requestSent credentialReceived",
            "credentialReceived ackSent", "proposalSent offerReceived", "requestSent offerReceived",
            "proposalSent problemReport", "offerReceived problemReport", "requestSent problemReport",
            "credentialReceived problemReport",
        ]
        let events: [CredentialExchange.Event] = [.proposalSent, .offerReceived, .requestSent, .credentialReceived, .ackSent, .problemReport]
        for state in [nil] + State.allCases.map(Optional.some) {
            for event in events where !allowed.contains("\(state.map { "\($0)" } ?? "nil") \(event)") {
                #expect {
                    try CredentialExchange.next(state, on: event)
                } throws: { error in
                    (error as? AerieError)?.code == .conflict
                }
            }
        }
    }
}
