import AerieClient
import AerieCore
import AerieCrypto
import AerieTesting
import Foundation
import Synchronization
import Testing

/// Issue-credential 2.0 from a hand-made issuer (the test holds every key: `TestPeer`,
/// `PeerInbox`), for what ACA-Py cannot be made to do: a credential tampered with after it was
/// signed, and credentials from someone who is not the connection's peer. Each is refused and
/// nothing is stored; the honest credential from the same issuer is stored.
@Suite(.serialized, .timeLimit(.minutes(10))) struct HandMadeIssuerTests {
    static let issuerKey = Ed25519KeyPair.generate()

    static func offer(issuer: String, id: String) -> JSONValue {
        let detail: JSONValue = [
            "credential": ACAPyIssueCredentialTests.credential(issuer: issuer, name: "Bachelor of Hand"),
            "options": ["proofType": "Ed25519Signature2018"],
        ]
        return IssueCredentialWire.offer(detail, id: id)
    }

    @Test func aTamperedCredentialIsRefusedAndAnHonestOneStored() async throws {
        try await LiveServer.with(server: { $0.outbound.allowPrivateURLs = true }) { server in
            let (tenant, _) = try await server.tenantClient(label: "holder")
            defer { Task { await tenant.close() } }
            let inbox = try await PeerInbox()
            defer { Task { await inbox.stop() } }
            let peer = try await TestPeer.connect(tenant, endpoint: inbox.url, key: inbox.key)
            let issuer = try DIDKey.did(verkey: Self.issuerKey.verkey)
            let method = try DIDKey.keyReference(verkey: Self.issuerKey.verkey)

            /// Offers, accepts, and answers the request with `credential(signed)`: the exchange as it ends.
            func run(_ id: String, credential: (JSONValue) throws -> JSONValue, packer: (JSONValue) throws -> [UInt8]) async throws
                -> (exchange: JSONValue, status: Int)
            {
                #expect(try await DIDCommEndpointTests.post(try peer.pack(Self.offer(issuer: issuer, id: id)), to: server.didcommPort) == 202)
                let offer = try await ACAPyIssueCredentialTests.eventually("the offer") {
                    try await tenant.call("credentials.exchanges", params: [:])["exchanges"]?.arrayValue?
                        .first { $0["threadId"]?.stringValue == id }
                }
                let exchangeId = try #require(offer["exchangeId"])
                _ = try await tenant.call("credentials.accept", params: ["offerId": exchangeId])
                let request = try #require(
                    try await inbox.wait { $0["~thread"]?["thid"]?.stringValue == id && $0["@type"]?.stringValue?.hasSuffix("request-credential") == true })
                let detail = try #require(request.message["requests~attach"]?.arrayValue?.first?["data"]?["base64"]?.stringValue)
                let requested = try JSONValue(parsing: try Base64.decode(detail))
                let signed = try LinkedDataProofs.sign(
                    try #require(requested["credential"]), suite: .ed25519Signature2018, key: Self.issuerKey,
                    verificationMethod: method, purpose: .assertionMethod, created: Date())
                let issue = IssueCredentialWire.issue(try credential(signed), thread: id)
                let status = try await DIDCommEndpointTests.post(try packer(issue), to: server.didcommPort)
                let ended = try await ACAPyIssueCredentialTests.eventually("the exchange to end") { () async throws -> JSONValue? in
                    let current = try await tenant.call("credentials.exchange", params: ["exchangeId": exchangeId])
                    // Not `cond ? current : nil`: JSONValue takes `nil` as `.null`, which would end the wait.
                    guard ["done", "abandoned"].contains(current["state"]?.stringValue ?? "") || status != 202 else { return nil }
                    return current
                }
                return (ended, status)
            }

            // Tampered after signing: abandoned, a problem report to the issuer, nothing stored.
            let tampered = try await run("offer-tampered", credential: { signed in
                guard case .object(var fields) = signed else { return signed }
                fields["credentialSubject"] = ["id": signed["credentialSubject"]?["id"] ?? .null, "degree": ["type": "BachelorDegree", "name": "Doctor of Everything"]]
                return .object(fields)
            }, packer: peer.pack)
            #expect(tampered.exchange["state"] == "abandoned", "\(tampered.exchange)")
            // The request's own subject changed: refused before the proof is even read.
            #expect(tampered.exchange["problem"]?.stringValue?.contains("credentialSubject") == true, "\(tampered.exchange)")
            let report = try await inbox.wait { $0["@type"]?.stringValue?.hasSuffix("problem-report") == true }
            #expect(report?.message["~thread"]?["thid"] == "offer-tampered")

            // Signed over a claim, then the proof swapped for one over something else: the proof fails.
            let resigned = try await run("offer-resigned", credential: { signed in
                guard case .object(var fields) = signed, let other = try? LinkedDataProofs.sign(
                    ACAPyIssueCredentialTests.credential(issuer: issuer, name: "Something else"), suite: .ed25519Signature2018,
                    key: Self.issuerKey, verificationMethod: method, purpose: .assertionMethod, created: Date())
                else { return signed }
                fields["proof"] = other["proof"]
                return .object(fields)
            }, packer: peer.pack)
            #expect(resigned.exchange["state"] == "abandoned", "\(resigned.exchange)")
            #expect(resigned.exchange["problem"]?.stringValue?.contains("proof") == true, "\(resigned.exchange)")
            #expect(try await tenant.call("credentials.list", params: [:])["credentials"]?.arrayValue?.isEmpty == true)

            // A stranger's credential on the connection's thread is refused at the endpoint.
            let stranger = try await run("offer-stranger", credential: { $0 }, packer: { try peer.forge($0, from: .generate()) })
            #expect(stranger.status == 400)
            #expect(stranger.exchange["state"] == "request-sent")
            #expect(try await tenant.call("credentials.list", params: [:])["credentials"]?.arrayValue?.isEmpty == true)

            // The same issuer's honest credential verifies and is stored; each state change is pushed.
            let pushed = PushedStates()
            _ = try await tenant.call("messages.subscribe", params: [:])
            let listening = Task {
                for await notification in tenant.notifications where notification.method == "credentials.stateChanged" {
                    pushed.append(notification.params)
                }
            }
            defer { listening.cancel() }
            let honest = try await run("offer-honest", credential: { $0 }, packer: peer.pack)
            #expect(honest.exchange["state"] == "done", "\(honest.exchange)")
            let states = try await ACAPyIssueCredentialTests.eventually("the pushed states") { () -> [String]? in
                let states = pushed.states(of: honest.exchange["exchangeId"])
                return states.last == "done" ? states : nil
            }
            #expect(states == ["offer-received", "request-sent", "credential-received", "done"])
            #expect(try await tenant.call("credentials.list", params: [:])["credentials"]?.arrayValue?.count == 1)

            // At rest: a superuser's SELECT of every table holds none of the credential's claims or DIDs.
            let rows = try await SealedStorageTests.everyRow(server.database)
            SealedStorageTests.expectNoSecrets(["Bachelor of Hand", issuer], in: rows, "a superuser's SELECT after a stored credential")
        }
    }

    /// An out-of-band invitation whose attached offer is malformed is refused as a whole before
    /// anything is stored: no connection, no exchange.
    @Test func aMalformedAttachedOfferRefusesTheInvitation() async throws {
        try await LiveServer.with(server: { $0.outbound.allowPrivateURLs = true }) { server in
            let (tenant, _) = try await server.tenantClient(label: "oob holder")
            defer { Task { await tenant.close() } }
            guard case .object(var invitation) = try HandMadeHandshake.invitation(inviter: .generate(), id: "inv-bad-offer"),
                case .object(var offer) = Self.offer(issuer: "did:key:z6MkhaXgBZDvotDkL5257faiztiGiC2QtKLGpbnnEGta2doK", id: "o-1")
            else { return }
            offer["formats"] = [["attach_id": "ld", "format": "hlindy/cred-abstract@v2.0"]]
            invitation["requests~attach"] = [["@id": "a", "data": ["json": .object(offer)]]]
            do {
                _ = try await tenant.call("outOfBand.accept", params: ["invitation": .object(invitation), "wait": false])
                Issue.record("a malformed attached offer was accepted")
            } catch let error as AerieClientError {
                #expect(error.code == -32010, "\(error)")
            }
            #expect(try await tenant.call("connections.list", params: [:])["connections"]?.arrayValue?.isEmpty == true)
            #expect(try await tenant.call("credentials.exchanges", params: [:])["exchanges"]?.arrayValue?.isEmpty == true)
        }
    }
}

/// What `credentials.stateChanged` pushed.
final class PushedStates: Sendable {
    private let received = Mutex<[JSONValue]>([])
    func append(_ params: JSONValue) { received.withLock { $0.append(params) } }
    func states(of exchangeId: JSONValue?) -> [String] {
        received.withLock { $0 }.filter { $0["exchangeId"] == exchangeId }.compactMap { $0["state"]?.stringValue }
    }
}

/// Issue-credential 2.0 messages as an issuer writes them (RFC 0453, RFC 0593 base64 attachments).
enum IssueCredentialWire {
    static func offer(_ detail: JSONValue, id: String) -> JSONValue {
        [
            "@type": "https://didcomm.org/issue-credential/2.0/offer-credential", "@id": .string(id),
            "formats": [["attach_id": "ld", "format": "aries/ld-proof-vc-detail@v1.0"]],
            "offers~attach": [["@id": "ld", "mime-type": "application/json", "data": ["base64": .string(Base64.encode(detail.serialized()))]]],
        ]
    }

    static func issue(_ credential: JSONValue, thread: String) -> JSONValue {
        [
            "@type": "https://didcomm.org/issue-credential/2.0/issue-credential", "@id": .string(UUID().uuidString),
            "~thread": ["thid": .string(thread)],
            "formats": [["attach_id": "vc", "format": "aries/ld-proof-vc@v1.0"]],
            "credentials~attach": [["@id": "vc", "mime-type": "application/ld+json", "data": ["base64": .string(Base64.encode(credential.serialized()))]]],
        ]
    }
}
