import AerieClient
import AerieCore
import AerieCrypto
import AerieTesting
import Foundation
import Testing

/// Bad input to the holder on the real server and a real PostgreSQL, from a hand-made issuer
/// (`TestPeer`, `PeerInbox`): an offer from a stranger on the connection's key, offers that are
/// malformed, oversized or name a context Aerie does not have, and credentials that are
/// malformed, oversized, carry an unknown context or a proof that does not verify. Each is
/// refused with a clear reason (a problem report to the issuer, the exchange's `problem` for the
/// tenant); no credential is stored, and a second tenant sees nothing.
@Suite(.serialized, .timeLimit(.minutes(10))) struct CredentialBadInputTests {
    static let issuerKey = Ed25519KeyPair.generate()

    static func exchanges(_ tenant: AerieClient) async throws -> [JSONValue] {
        try await tenant.call("credentials.exchanges", params: [:])["exchanges"]?.arrayValue ?? []
    }

    static func credentials(_ tenant: AerieClient) async throws -> [JSONValue] {
        try await tenant.call("credentials.list", params: [:])["credentials"]?.arrayValue ?? []
    }

    /// The problem report the issuer got on `thread`.
    static func report(_ inbox: PeerInbox, thread: String) async throws -> JSONValue {
        try #require(
            try await inbox.wait { $0["~thread"]?["thid"] == .string(thread) && $0["@type"]?.stringValue?.hasSuffix("problem-report") == true },
            "no problem report on \(thread)"
        ).message
    }

    /// Alice connected to a hand-made issuer (`peer`, whose messages `inbox` receives); Bob, a
    /// second tenant, to see nothing of it.
    static func withHolder(
        _ body: (_ server: LiveServer, _ alice: AerieClient, _ bob: AerieClient, _ peer: TestPeer, _ inbox: PeerInbox) async throws -> Void
    ) async throws {
        let inbox = try await PeerInbox()
        defer { Task { await inbox.stop() } }
        try await LiveServer.with(server: { $0.outbound.allowPrivateURLs = true }) { server in
            let (alice, _) = try await server.tenantClient(label: "alice")
            let (bob, _) = try await server.tenantClient(label: "bob")
            defer { Task { await alice.close(); await bob.close() } }
            try await body(server, alice, bob, try await TestPeer.connect(alice, endpoint: inbox.url, key: inbox.key), inbox)
        }
    }

    @Test func badOffersAreAnsweredWithAProblemReportAndStoreNothing() async throws {
        try await Self.withHolder { server, alice, bob, peer, inbox in
            let port = server.didcommPort
            let issuer = try DIDKey.did(verkey: Self.issuerKey.verkey)

            // A stranger's offer to the connection's key, authcrypted by another key or anoncrypted:
            // refused at the endpoint.
            let strangers = HandMadeIssuerTests.offer(issuer: issuer, id: "offer-stranger")
            #expect(try await DIDCommEndpointTests.post(try peer.forge(strangers, from: .generate()), to: port) == 400)
            #expect(try await DIDCommEndpointTests.post(try peer.forge(strangers, from: nil), to: port) == 400)

            // Offers the peer sends that cannot be taken: a problem report naming why.
            func offer(_ detail: JSONValue, id: String) -> JSONValue { IssueCredentialWire.offer(detail, id: id) }
            let credential = ACAPyIssueCredentialTests.credential(issuer: issuer, name: "Bachelor of Input")
            guard case .object(var unknownContext) = credential, case .object(var undefinedTerm) = credential else { return }
            unknownContext["@context"] = ["https://www.w3.org/2018/credentials/v1", "https://evil.example/contexts/v1"]
            undefinedTerm["@context"] = ["https://www.w3.org/2018/credentials/v1"]
            var notJSON = offer([:], id: "offer-not-json")
            if case .object(var fields) = notJSON {
                fields["offers~attach"] = [["@id": "ld", "mime-type": "application/json", "data": ["base64": .string(Base64.encode(Array("{not json".utf8)))]]]
                notJSON = .object(fields)
            }
            let huge: JSONValue = [
                "credential": ACAPyIssueCredentialTests.credential(issuer: issuer, name: String(repeating: "x", count: 70_000)),
                "options": ["proofType": "Ed25519Signature2018"],
            ]
            var indy = offer(["credential": credential, "options": ["proofType": "Ed25519Signature2018"]], id: "offer-indy")
            if case .object(var fields) = indy {
                fields["formats"] = [["attach_id": "ld", "format": "hlindy/cred-abstract@v2.0"]]
                indy = .object(fields)
            }
            let bad: [(id: String, message: JSONValue, code: String, says: String)] = [
                ("offer-not-json", notJSON, "malformed-message", "not JSON"),
                ("offer-huge", offer(huge, id: "offer-huge"), "malformed-message", "larger than 64 KiB"),
                ("offer-indy", indy, "unsupported-format", "no aries/ld-proof-vc-detail@v1.0 attachment"),
                (
                    "offer-unknown-context", offer(["credential": .object(unknownContext), "options": ["proofType": "Ed25519Signature2018"]], id: "offer-unknown-context"),
                    "malformed-message", "https://evil.example/contexts/v1"
                ),
                (
                    "offer-undefined-term", offer(["credential": .object(undefinedTerm), "options": ["proofType": "Ed25519Signature2018"]], id: "offer-undefined-term"),
                    "malformed-message", "not defined"
                ),
                ("offer-bbs", offer(["credential": credential, "options": ["proofType": "BbsBlsSignature2020"]], id: "offer-bbs"), "malformed-message", "proofType"),
            ]
            for (id, message, code, says) in bad {
                #expect(try await DIDCommEndpointTests.post(try peer.pack(message), to: port) == 202, "\(id)")
                let report = try await Self.report(inbox, thread: id)
                #expect(report["description"]?["code"] == .string(code), "\(id): \(report)")
                #expect(report["description"]?["en"]?.stringValue?.contains(says) == true, "\(id): \(report)")
            }
            #expect(try await Self.exchanges(alice).isEmpty, "no exchange of a refused offer is stored")

            // The tenant's own proposal naming an unknown context is refused the same way.
            let proposal = await #expect(throws: AerieClientError.self) {
                _ = try await alice.call(
                    "credentials.propose",
                    params: [
                        "connectionId": .string(peer.connectionId),
                        "detail": ["credential": .object(unknownContext), "options": ["proofType": "Ed25519Signature2018"]],
                    ])
            }
            #expect(proposal?.data?["code"] == "invalid_params")
            #expect(proposal?.message.contains("https://evil.example/contexts/v1") == true, "\(String(describing: proposal))")
            #expect(try await Self.exchanges(alice).isEmpty)
            #expect(try await Self.exchanges(bob).isEmpty)
        }
    }

    @Test func badCredentialsEndTheirExchangeWithAReasonAndStoreNothing() async throws {
        try await Self.withHolder { server, alice, bob, peer, inbox in
            let port = server.didcommPort
            let issuer = try DIDKey.did(verkey: Self.issuerKey.verkey)
            let method = try DIDKey.keyReference(verkey: Self.issuerKey.verkey)

            /// Offers, accepts, and answers the request with `issue(requested credential)`: the
            /// exchange once it ended.
            func run(_ id: String, issue: (JSONValue) throws -> JSONValue) async throws -> JSONValue {
                #expect(try await DIDCommEndpointTests.post(try peer.pack(HandMadeIssuerTests.offer(issuer: issuer, id: id)), to: port) == 202)
                let offer = try await ACAPyIssueCredentialTests.eventually("the offer \(id)") {
                    try await Self.exchanges(alice).first { $0["threadId"] == .string(id) }
                }
                let exchangeId = try #require(offer["exchangeId"])
                _ = try await alice.call("credentials.accept", params: ["offerId": exchangeId])
                let request = try #require(
                    try await inbox.wait { $0["~thread"]?["thid"] == .string(id) && $0["@type"]?.stringValue?.hasSuffix("request-credential") == true })
                let detail = try #require(request.message["requests~attach"]?.arrayValue?.first?["data"]?["base64"]?.stringValue)
                let requested = try #require(try JSONValue(parsing: try Base64.decode(detail))["credential"])
                #expect(try await DIDCommEndpointTests.post(try peer.pack(try issue(requested)), to: port) == 202, "\(id)")
                return try await ACAPyIssueCredentialTests.eventually("the exchange \(id) to end") { () async throws -> JSONValue? in
                    let current = try await alice.call("credentials.exchange", params: ["exchangeId": exchangeId])
                    // Not `cond ? current : nil`: JSONValue takes `nil` as `.null`, which would end the wait.
                    guard ["done", "abandoned"].contains(current["state"]?.stringValue ?? "") else { return nil }
                    return current
                }
            }
            func sign(_ credential: JSONValue) throws -> JSONValue {
                try LinkedDataProofs.sign(
                    credential, suite: .ed25519Signature2018, key: Self.issuerKey, verificationMethod: method, purpose: .assertionMethod,
                    created: Date())
            }
            func attached(_ base64: String, thread: String) -> JSONValue {
                guard case .object(var message) = IssueCredentialWire.issue([:], thread: thread) else { return .null }
                message["credentials~attach"] = [["@id": "vc", "mime-type": "application/ld+json", "data": ["base64": .string(base64)]]]
                return .object(message)
            }

            let cases: [(id: String, issue: (JSONValue) throws -> JSONValue, code: String, says: String)] = [
                // Not JSON at all.
                ("cred-garbage", { _ in attached(Base64.encode(Random.bytes(256)), thread: "cred-garbage") }, "malformed-message", "not JSON"),
                // No proof.
                ("cred-unsigned", { IssueCredentialWire.issue($0, thread: "cred-unsigned") }, "malformed-message", "with a proof"),
                // Over the attachment bound (signed, then padded past 64 KiB).
                (
                    "cred-huge",
                    { requested in
                        guard case .object(var fields) = try sign(requested) else { return .null }
                        fields["padding"] = .string(String(repeating: "p", count: 70_000))
                        return IssueCredentialWire.issue(.object(fields), thread: "cred-huge")
                    }, "malformed-message", "larger than 64 KiB"
                ),
                // The issuer appended a context Aerie does not have: named, never fetched.
                (
                    "cred-unknown-context",
                    { requested in
                        guard case .object(var fields) = requested, case .array(var context)? = fields["@context"] else { return .null }
                        context.append("https://evil.example/contexts/v1")
                        fields["@context"] = .array(context)
                        return IssueCredentialWire.issue(.object(fields).merging(proofOf: try sign(requested)), thread: "cred-unknown-context")
                    }, "credential-rejected", "https://evil.example/contexts/v1"
                ),
                // Signed by a key that is not the issuer's.
                (
                    "cred-other-signer",
                    { requested in
                        let other = Ed25519KeyPair.generate()
                        let signed = try LinkedDataProofs.sign(
                            requested, suite: .ed25519Signature2018, key: other, verificationMethod: try DIDKey.keyReference(verkey: other.verkey),
                            purpose: .assertionMethod, created: Date())
                        return IssueCredentialWire.issue(signed, thread: "cred-other-signer")
                    }, "credential-rejected", "proof does not verify"
                ),
                // A signature that is not over this document (one byte of it flipped).
                (
                    "cred-bad-signature",
                    { requested in
                        guard case .object(var fields) = try sign(requested), case .object(var proof)? = fields["proof"],
                            var jws = proof["jws"]?.stringValue.map(Array.init), let dots = jws.firstIndex(of: ".")
                        else { return .null }
                        // A character well inside the signature (the last one holds padding bits).
                        let inside = dots + 2 + 10
                        jws[inside] = jws[inside] == "A" ? "B" : "A"
                        proof["jws"] = .string(String(jws))
                        fields["proof"] = .object(proof)
                        return IssueCredentialWire.issue(.object(fields), thread: "cred-bad-signature")
                    }, "credential-rejected", "proof does not verify"
                ),
            ]
            for (id, issue, code, says) in cases {
                let ended = try await run(id, issue: issue)
                #expect(ended["state"] == "abandoned", "\(id): \(ended)")
                if case .some = ended["credentialId"] { Issue.record("\(id) stored a credential: \(ended)") }
                #expect(ended["problem"]?.stringValue?.contains(says) == true, "\(id): \(ended)")
                let report = try await Self.report(inbox, thread: id)
                #expect(report["description"]?["code"] == .string(code), "\(id): \(report)")
            }
            #expect(try await Self.credentials(alice).isEmpty, "no refused credential is stored")

            // A stranger's credential on an open exchange's thread is refused at the endpoint; the
            // exchange still waits for its issuer.
            #expect(try await DIDCommEndpointTests.post(try peer.pack(HandMadeIssuerTests.offer(issuer: issuer, id: "cred-waiting")), to: port) == 202)
            let waiting = try await ACAPyIssueCredentialTests.eventually("the offer") {
                try await Self.exchanges(alice).first { $0["threadId"] == "cred-waiting" }
            }
            let waitingId = try #require(waiting["exchangeId"])
            _ = try await alice.call("credentials.accept", params: ["offerId": waitingId])
            let forged = IssueCredentialWire.issue(try sign(ACAPyIssueCredentialTests.credential(issuer: issuer, name: "Forged")), thread: "cred-waiting")
            #expect(try await DIDCommEndpointTests.post(try peer.forge(forged, from: .generate()), to: port) == 400)
            #expect(try await alice.call("credentials.exchange", params: ["exchangeId": waitingId])["state"] == "request-sent")
            #expect(try await Self.credentials(alice).isEmpty)

            // Bob, another tenant, sees none of it.
            #expect(try await Self.exchanges(bob).isEmpty)
            #expect(try await Self.credentials(bob).isEmpty)
        }
    }
}

extension JSONValue {
    /// This document with `signed`'s `proof`.
    fileprivate func merging(proofOf signed: JSONValue) -> JSONValue {
        guard case .object(var fields) = self else { return self }
        fields["proof"] = signed["proof"]
        return .object(fields)
    }
}
