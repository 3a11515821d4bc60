import AerieCore
@testable import AerieCrypto
import Testing

@testable import ConnectionsPlugin

/// Every rule of the connection state machine, each transition and each refusal, without any
/// I/O: the events carry the keys and packed messages their actions need.
@Suite(.timeLimit(.minutes(10))) struct ConnectionStateMachineTests {
    typealias Machine = ConnectionStateMachine

    // MARK: - Events and records, made without I/O

    static let invitationKey = "INVKEY"
    static let pairwise = try! Ed25519KeyPair(seed: Array("aerie-test-machine-pairwise-0000".utf8))
    static let key = PendingKey(pair: pairwise, sealed: [1, 2, 3])
    static let peer = ConnectionMessages.PeerConnection(did: "PEERDID", verkey: "PEERKEY", endpoint: "http://peer.example/in", routingKeys: ["R1"])

    static func packed(_ tag: UInt8) -> Outbound {
        Outbound(senderVerkey: pairwise.verkeyBase58, endpoint: "http://peer.example/in", envelope: [tag])
    }

    static func request(handshake: HandshakeProtocol = .connections10) -> Machine.Request {
        Machine.Request(handshake: handshake, key: key, did: "MYDID", requestId: "req-1", message: packed(1))
    }

    static func answer(thread: String? = "req-1") -> Machine.Answer {
        Machine.Answer(threadId: thread, peer: peer, reply: packed(2))
    }

    /// An invitee's connection in `state`, connected over `handshake` (nil: not connected yet).
    static func invitee(_ state: ConnectionRecord.State, handshake: HandshakeProtocol? = .connections10) -> ConnectionRecord {
        ConnectionRecord(
            state: state, invitation: ["@id": "inv-1"], invitationKind: "aries", invitationId: "inv-1",
            firstRecipientKey: invitationKey, invitationEndpoint: "http://inviter.example/in",
            myDid: handshake == nil ? nil : "MYDID", myVerkey: handshake == nil ? nil : pairwise.verkeyBase58,
            threadId: handshake == nil ? nil : "req-1", handshakeProtocol: handshake?.rawValue)
    }

    /// An invitation of ours, open (`initialized`).
    static func invitation(multiUse: Bool = false, id: String? = "inv-9", kind: Invitation.Kind = .aries) -> ConnectionRecord {
        var json: JSONValue = ["label": "us"]
        if let id, case .object(var fields) = json {
            fields["@id"] = .string(id)
            json = .object(fields)
        }
        return ConnectionRecord(
            invitation: json, invitationKind: kind.rawValue, myVerkey: invitationKey, role: .inviter, multiUse: multiUse,
            alias: "shop")
    }

    static func requester(parent: String? = "inv-9") -> ConnectionMessages.Requester {
        ConnectionMessages.Requester(peer: peer, label: "Bob", threadId: "their-req", parentThreadId: parent)
    }

    static func requestAnswer(
        handshake: HandshakeProtocol = .connections10, at key: String = invitationKey, parent: String? = "inv-9"
    ) -> Machine.RequestAnswer {
        Machine.RequestAnswer(
            requester: requester(parent: parent), handshake: handshake, invitationKey: key, key: Self.key, did: "OURDID",
            response: packed(3))
    }

    static func expectConflict(
        _ event: Machine.Event, on record: ConnectionRecord, containing text: String? = nil,
        sourceLocation: SourceLocation = #_sourceLocation
    ) async {
        let error = await expectAerieError(.conflict, containing: text, sourceLocation: sourceLocation) {
            try Machine.apply(event, to: record)
        }
        #expect(!Machine.accepts(event, to: record), sourceLocation: sourceLocation)
        if text == nil {
            #expect(error?.data["stateName"] == .string(record.state.rawValue), sourceLocation: sourceLocation)
        }
    }

    // MARK: - Invitee

    @Test func connectStoresTheKeyAndSendsTheRequest() throws {
        let initialized = Self.invitee(.initialized, handshake: nil)
        let requested = try Machine.apply(.connect(Self.request(handshake: .didExchange11)), to: initialized)
        #expect(requested.record.state == .requested)
        #expect(requested.record.id == initialized.id && !requested.inserts && requested.changes)
        #expect(requested.record.myDid == "MYDID")
        #expect(requested.record.myVerkey == Self.pairwise.verkeyBase58)
        #expect(requested.record.threadId == "req-1")
        #expect(requested.record.handshakeProtocol == HandshakeProtocol.didExchange11.rawValue)
        #expect(requested.actions == [.storeKey(Self.key), .send(Self.packed(1))])
        try Machine.checkConnect(initialized)
    }

    @Test(arguments: [ConnectionRecord.State.requested, .responded, .accepted, .reused, .failed, .deleted])
    func connectAppliesOnlyOnce(state: ConnectionRecord.State) async {
        await Self.expectConflict(.connect(Self.request()), on: Self.invitee(state))
        await expectAerieError(.conflict) { try Machine.checkConnect(Self.invitee(state)) }
    }

    @Test func aVerifiedResponseStoresThePeerAndSendsTheReply() throws {
        var requested = Self.invitee(.requested)
        requested.failureReason = "an earlier problem"
        requested.problemReport = ["x": 1]
        let accepted = try Machine.apply(.responseVerified(Self.answer()), to: requested)
        #expect(accepted.record.state == .accepted)
        #expect(accepted.record.theirDid == "PEERDID" && accepted.record.theirVerkey == "PEERKEY")
        #expect(accepted.record.theirEndpoint == "http://peer.example/in" && accepted.record.theirRoutingKeys == ["R1"])
        #expect(accepted.record.failureReason == nil && accepted.record.problemReport == nil)
        #expect(accepted.actions == [.send(Self.packed(2))])
        let expected = try Machine.checkResponse(threadId: "req-1", on: requested)
        #expect(expected == .init(invitationKey: Self.invitationKey, myVerkey: Self.pairwise.verkeyBase58))
    }

    @Test func aDIDExchangeResponseNamesOurRequestsThread() throws {
        let requested = Self.invitee(.requested, handshake: .didExchange10)
        let accepted = try Machine.apply(.exchangeResponseVerified(Self.answer(thread: nil)), to: requested)
        #expect(accepted.record.state == .accepted && accepted.actions == [.send(Self.packed(2))])
        let (expected, requestId) = try Machine.checkExchangeResponse(threadId: nil, on: requested)
        #expect(expected.invitationKey == Self.invitationKey && requestId == "req-1")
    }

    /// The inviter's signed Response to our Request wins over an earlier failure (a problem
    /// report ACA-Py sends for a Request sent again after a crash, a forged Response).
    @Test func aVerifiedResponseEstablishesAFailedConnection() throws {
        #expect(try Machine.apply(.responseVerified(Self.answer()), to: Self.invitee(.failed)).record.state == .accepted)
        #expect(try Machine.apply(.responseVerified(Self.answer()), to: Self.invitee(.responded)).record.state == .accepted)
        let exchange = Self.invitee(.failed, handshake: .didExchange11)
        #expect(try Machine.apply(.exchangeResponseVerified(Self.answer()), to: exchange).record.state == .accepted)
    }

    @Test(arguments: [ConnectionRecord.State.initialized, .accepted, .reused, .deleted])
    func aResponseOutOfTurnIsAConflict(state: ConnectionRecord.State) async {
        await Self.expectConflict(.responseVerified(Self.answer()), on: Self.invitee(state))
        await Self.expectConflict(.exchangeResponseVerified(Self.answer()), on: Self.invitee(state, handshake: .didExchange11))
    }

    @Test func aResponseMustAnswerOurRequestOverItsHandshakeAndThread() async {
        let requested = Self.invitee(.requested)
        await Self.expectConflict(.responseVerified(Self.answer(thread: "other")), on: requested, containing: "another thread")
        await expectAerieError(.conflict, containing: "another thread") { try Machine.checkResponse(threadId: "other", on: requested) }
        await Self.expectConflict(.exchangeResponseVerified(Self.answer()), on: requested, containing: "does not use didexchange")
        await Self.expectConflict(
            .responseVerified(Self.answer()), on: Self.invitee(.requested, handshake: .didExchange11), containing: "uses didexchange")
        // No Request sent: no pairwise key (or, for didexchange, no thread) to answer.
        var unsent = Self.invitee(.requested, handshake: nil)
        await Self.expectConflict(.responseVerified(Self.answer()), on: unsent, containing: "has not sent a request")
        unsent = Self.invitee(.requested, handshake: .didExchange11)
        unsent.threadId = nil
        await Self.expectConflict(.exchangeResponseVerified(Self.answer()), on: unsent, containing: "has not sent a request")
        await expectAerieError(.conflict, containing: "has not sent a request") {
            try Machine.checkExchangeResponse(threadId: nil, on: unsent)
        }
        // A connection made from an invitation of ours sent no Request.
        var ours = Self.invitee(.responded)
        ours.role = .inviter
        await Self.expectConflict(.responseVerified(Self.answer()), on: ours, containing: "invitation of ours")
    }

    @Test(arguments: [ConnectionRecord.State.initialized, .requested, .responded])
    func problemsAndDeliveryFailuresFailAConnectionBeingSetUp(state: ConnectionRecord.State) throws {
        let report: JSONValue = ["explain": "no"]
        let failed = try Machine.apply(.problem(.init(reason: "no", report: report, threadId: "req-1")), to: Self.invitee(state))
        #expect(failed.record.state == .failed && failed.record.failureReason == "no" && failed.record.problemReport == report)
        #expect(failed.actions.isEmpty)
        let undelivered = try Machine.apply(.deliveryFailed(reason: "down"), to: Self.invitee(state))
        #expect(undelivered.record.state == .failed && undelivered.record.failureReason == "down")
        #expect(undelivered.record.problemReport == nil && undelivered.actions.isEmpty)
    }

    @Test func aProblemReportOfAnotherThreadIsAConflict() async throws {
        let requested = Self.invitee(.requested)
        await Self.expectConflict(.problem(.init(reason: "no", threadId: "other")), on: requested, containing: "another thread")
        // No thread named, or a connection with no thread yet: it applies.
        #expect(try Machine.apply(.problem(.init(reason: "no")), to: requested).record.state == .failed)
        let initialized = Self.invitee(.initialized, handshake: nil)
        #expect(try Machine.apply(.problem(.init(reason: "no", threadId: "any")), to: initialized).record.state == .failed)
    }

    @Test(arguments: [ConnectionRecord.State.accepted, .reused, .failed, .deleted])
    func lateFailuresAreConflicts(state: ConnectionRecord.State) async {
        await Self.expectConflict(.problem(.init(reason: "late")), on: Self.invitee(state))
        await Self.expectConflict(.deliveryFailed(reason: "late"), on: Self.invitee(state))
    }

    /// A Request the server gave up delivering an answer to fails no open invitation of ours: it
    /// stays open for the next Request, and nothing is written.
    @Test func aDeliveryFailureLeavesAnOpenInvitationAsItIs() throws {
        for invitation in [Self.invitation(), Self.invitation(multiUse: true)] {
            let transition = try Machine.apply(.deliveryFailed(reason: "down"), to: invitation)
            #expect(!transition.changes && transition.actions.isEmpty && transition.record == invitation)
            #expect(!Machine.accepts(.deliveryFailed(reason: "down"), to: invitation))
        }
    }

    @Test func aHangupFailsOnlyAnEstablishedConnection() async throws {
        for state in [ConnectionRecord.State.accepted, .reused] {
            let transition = try Machine.apply(.hangup, to: Self.invitee(state))
            #expect(transition.record.state == .failed)
            #expect(transition.record.failureReason == "the peer ended the connection (hangup)")
            #expect(transition.actions.isEmpty)
        }
        for state in [ConnectionRecord.State.initialized, .requested, .responded, .failed, .deleted] {
            await Self.expectConflict(.hangup, on: Self.invitee(state))
        }
    }

    // MARK: - Inviter

    @Test func aSingleUseInvitationBecomesTheConnectionAndItsKeyGoes() throws {
        let invitation = Self.invitation()
        let responded = try Machine.apply(.requestReceived(Self.requestAnswer()), to: invitation)
        #expect(responded.record.id == invitation.id && !responded.inserts)
        #expect(responded.record.state == .responded && responded.record.state.number == 3)
        #expect(responded.record.myDid == "OURDID" && responded.record.myVerkey == Self.pairwise.verkeyBase58)
        #expect(responded.record.threadId == "their-req" && responded.record.label == "Bob")
        #expect(responded.record.theirVerkey == "PEERKEY" && responded.record.theirDid == "PEERDID")
        #expect(responded.record.handshakeProtocol == HandshakeProtocol.connections10.rawValue)
        #expect(responded.record.multiUse == nil && responded.record.alias == "shop")
        #expect(responded.actions == [.removeKey(Self.invitationKey), .storeKey(Self.key), .send(Self.packed(3))])
        #expect(responded.record.awaitsPeerConfirmation)
    }

    @Test func aMultiUseInvitationMakesANewConnectionPerRequest() throws {
        let invitation = Self.invitation(multiUse: true)
        let made = try Machine.apply(.requestReceived(Self.requestAnswer()), to: invitation)
        #expect(made.inserts && made.record.id != invitation.id)
        #expect(made.record.state == .responded && made.record.role == .inviter && made.record.alias == "shop")
        #expect(made.record.invitation == invitation.invitation && made.record.multiUse == nil)
        // The invitation keeps its key for the next Request.
        #expect(made.actions == [.storeKey(Self.key), .send(Self.packed(3))])
    }

    /// The tenant's invitation DID has no `@id` of its own: the connection keeps the invitation
    /// the Request names, whatever handshake it offers.
    @Test func theInvitationDIDsConnectionKeepsTheInvitationTheRequestNames() throws {
        let invitationDID = Self.invitation(multiUse: true, id: nil, kind: .outOfBand)
        let made = try Machine.apply(
            .requestReceived(Self.requestAnswer(handshake: .didExchange10, parent: "oob-7")), to: invitationDID)
        #expect(made.inserts && made.record.invitation["@id"] == "oob-7" && made.record.alias == nil)
        #expect(made.record.handshakeProtocol == HandshakeProtocol.didExchange10.rawValue)
    }

    @Test func aRequestIsRefusedUnlessTheInvitationIsOpenAtItsKeyAndOffersItsHandshake() throws {
        var used = Self.invitation()
        used.state = .responded
        used.theirVerkey = "PEERKEY"
        var oob = Self.invitation(kind: .outOfBand)
        oob.invitation = ["@id": "inv-9", "handshake_protocols": [.string(HandshakeProtocol.didExchange11.rawValue)]]
        let refused: [(Machine.RequestAnswer, ConnectionRecord)] = [
            (Self.requestAnswer(), used),
            (Self.requestAnswer(at: "OTHERKEY"), Self.invitation()),
            (Self.requestAnswer(handshake: .didExchange11), Self.invitation()),
            (Self.requestAnswer(handshake: .connections10), oob),
            (Self.requestAnswer(), Self.invitee(.initialized, handshake: nil)),
        ]
        for (answer, record) in refused {
            #expect(throws: InboundSender.Refused.self) { try Machine.apply(.requestReceived(answer), to: record) }
            #expect(throws: InboundSender.Refused.self) { try Machine.checkRequest(answer.handshake, at: answer.invitationKey, to: record) }
        }
        #expect(try Machine.apply(.requestReceived(Self.requestAnswer(handshake: .didExchange11)), to: oob).record.state == .responded)
    }

    @Test func aRequestNamingAnotherInvitationIsAConflict() async throws {
        await Self.expectConflict(
            .requestReceived(Self.requestAnswer(parent: "inv-other")), on: Self.invitation(), containing: "another invitation")
        await expectAerieError(.conflict) { try Machine.checkRequester(Self.requester(parent: "inv-other"), of: Self.invitation()) }
        // No parent named: it applies.
        #expect(try Machine.apply(.requestReceived(Self.requestAnswer(parent: nil)), to: Self.invitation()).record.state == .responded)
    }

    @Test func theInviteesFirstMessageAcceptsAConnectionWaitingForIt() async throws {
        let responded = try Machine.apply(.requestReceived(Self.requestAnswer()), to: Self.invitation()).record
        let accepted = try Machine.apply(.peerConfirmed, to: responded)
        #expect(accepted.record.state == .accepted && accepted.record.state.number == 4 && accepted.actions.isEmpty)
        // Any other connection: nothing to confirm, nothing written.
        for record in [accepted.record, Self.invitation(), Self.invitee(.responded), Self.invitee(.requested)] {
            let transition = try Machine.apply(.peerConfirmed, to: record)
            #expect(!transition.changes && transition.record == record)
            #expect(!Machine.accepts(.peerConfirmed, to: record))
        }
        // The invitee may still refuse our Response.
        #expect(try Machine.apply(.problem(.init(reason: "no")), to: responded).record.state == .failed)
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
