import AerieCore
import AerieCrypto
import Testing

@testable import ConnectionsPlugin

/// The invitee state machine, without any I/O.
@Suite(.timeLimit(.minutes(10))) struct ConnectionStateMachineTests {
    typealias Machine = ConnectionStateMachine

    @Test func happyPath() throws {
        let requested = try Machine.apply(.connect, in: .initialized)
        #expect(requested == .init(state: .requested, actions: [.sendRequest]))
        let accepted = try Machine.apply(.responseVerified, in: requested.state)
        #expect(accepted == .init(state: .accepted, actions: [.sendTrustPing]))
    }

    @Test func problemsAndDeliveryFailuresFailAConnectionBeingSetUp() throws {
        for state in [ConnectionRecord.State.initialized, .requested, .responded] {
            #expect(try Machine.apply(.problem(reason: "no"), in: state) == .init(state: .failed, actions: [.recordFailure(reason: "no")]))
            #expect(
                try Machine.apply(.deliveryFailed(reason: "down"), in: state)
                    == .init(state: .failed, actions: [.recordFailure(reason: "down")]))
        }
    }

    @Test(arguments: [
        (ConnectionRecord.State.requested, Machine.Event.connect),
        (.accepted, .connect),
        (.initialized, .responseVerified),
        (.accepted, .responseVerified),
        (.failed, .connect),
        (.deleted, .responseVerified),
        (.accepted, .problem(reason: "late")),
        (.deleted, .deliveryFailed(reason: "x")),
    ])
    func eventsOutOfOrderAreConflicts(state: ConnectionRecord.State, event: Machine.Event) {
        #expect(throws: AerieError.self) { try Machine.apply(event, in: state) }
        do {
            _ = try Machine.apply(event, in: state)
        } catch let error as AerieError {
            #expect(error.code == .conflict)
            #expect(error.data["stateName"] == .string(state.rawValue))
        } catch {
            Issue.record("unexpected \(error)")
        }
    }

    /// The inviter's signed Response to our Request wins over an earlier failure (a problem
    /// report ACA-Py sends for a Request sent again after a crash, a forged Response).
    @Test func aVerifiedResponseEstablishesAFailedConnection() throws {
        #expect(try Machine.apply(.responseVerified, in: .failed) == .init(state: .accepted, actions: [.sendTrustPing]))
        #expect(try Machine.apply(.exchangeResponseVerified, in: .failed) == .init(state: .accepted, actions: [.sendComplete]))
    }

    @Test func stateNumbersFollowTheSDK() {
        #expect(ConnectionRecord.State.initialized.number == 1)
        #expect(ConnectionRecord.State.requested.number == 2)
        #expect(ConnectionRecord.State.responded.number == 3)
        #expect(ConnectionRecord.State.accepted.number == 4)
    }
}

/// The messages written and read, in ACA-Py's legacy DIDDoc format.
@Suite(.timeLimit(.minutes(10))) struct ConnectionMessagesTests {
    static let inviter = try! Ed25519KeyPair(seed: Array("aerie-test-inviter-0000000000000".utf8))
    static let peer = try! Ed25519KeyPair(seed: Array("aerie-test-peer-0000000000000000".utf8))

    @Test func requestCarriesTheLegacyDIDDoc() throws {
        let request = ConnectionMessages.request(
            id: "req-1", label: "Alice", did: "DID1", verkey: "VK1", endpoint: "http://127.0.0.1:7401", invitationId: "inv-1")
        #expect(request["@type"] == "https://didcomm.org/connections/1.0/request")
        #expect(request["~thread"] == ["thid": "req-1", "pthid": "inv-1"])
        let doc = try #require(request["connection"]?["DIDDoc"])
        #expect(request["connection"]?["DID"] == "DID1")
        #expect(doc["@context"] == "https://w3id.org/did/v1")
        #expect(doc["id"] == "did:sov:DID1")
        #expect(
            doc["publicKey"] == [
                [
                    "id": "did:sov:DID1#1", "type": "Ed25519VerificationKey2018", "controller": "did:sov:DID1",
                    "publicKeyBase58": "VK1",
                ]
            ])
        #expect(doc["authentication"] == [["type": "Ed25519SignatureAuthentication2018", "publicKey": "did:sov:DID1#1"]])
        #expect(
            doc["service"] == [
                [
                    "id": "did:sov:DID1;indy", "type": "IndyAgent", "priority": 0, "recipientKeys": ["VK1"],
                    "routingKeys": [], "serviceEndpoint": "http://127.0.0.1:7401",
                ]
            ])
    }

    static func response(signedBy key: Ed25519KeyPair) throws -> JSONValue {
        let did = KeyReference.unqualifiedDID(verkey: peer.verkey)
        let connection: JSONValue = [
            "DID": .string(did),
            "DIDDoc": ConnectionMessages.didDoc(did: did, verkey: peer.verkeyBase58, endpoint: "http://peer.example/in"),
        ]
        return [
            "@type": "https://didcomm.org/connections/1.0/response", "@id": "resp-1", "~thread": ["thid": "req-1"],
            "connection~sig": try SignatureDecorator.sign(connection, with: key).json,
        ]
    }

    @Test func responseSignedByTheInvitationKeyIsRead() throws {
        let peerConnection = try ConnectionMessages.readResponse(
            try Self.response(signedBy: Self.inviter), invitationKey: Self.inviter.verkeyBase58)
        #expect(peerConnection.verkey == Self.peer.verkeyBase58)
        #expect(peerConnection.endpoint == "http://peer.example/in")
        #expect(peerConnection.did == KeyReference.unqualifiedDID(verkey: Self.peer.verkey))
        #expect(peerConnection.routingKeys.isEmpty)
    }

    @Test func responseSignedByAnotherKeyIsRefused() throws {
        #expect(throws: CryptoError.self) {
            try ConnectionMessages.readResponse(try Self.response(signedBy: Self.peer), invitationKey: Self.inviter.verkeyBase58)
        }
    }

    @Test func problemReasons() {
        #expect(ConnectionMessages.problemReason(["explain": "no thanks"]) == "no thanks")
        #expect(ConnectionMessages.problemReason(["description": ["en": "bad", "code": "c"]]) == "bad")
        #expect(ConnectionMessages.problemReason(["description": ["code": "request_not_accepted"]]) == "request_not_accepted")
        #expect(ConnectionMessages.problemReason([:]) == "the peer sent a problem report")
    }
}
