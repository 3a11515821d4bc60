import AerieClient
import AerieCore
import AerieCrypto
import AerieStore
import AerieTesting
import Foundation
import Testing

@testable import AerieServer

/// A tenant imported from an archive gets a data key of its own on the importing server: the
/// key the archive carried opens nothing stored there. `newId` imports a copy next to a tenant
/// of the same id, and keys another tenant already owns are refused.
@Suite(.serialized, .timeLimit(.minutes(15))) struct TenantImportTests {
    static let passphrase = "correct horse battery staple"

    /// Each server its own database, master key and endpoint (the one it binds).
    @Sendable static func configure(_ config: inout AerieConfiguration) {
        config.outbound.allowPrivateURLs = true
        config.delivery.backoff = .milliseconds(100)
        config.delivery.maxBackoff = .milliseconds(500)
        config.delivery.pollInterval = .milliseconds(200)
    }

    static func export(_ admin: AerieClient, _ tenant: TenantID) async throws -> [UInt8] {
        var bytes: [UInt8] = []
        try await admin.exportTenant(tenant, sealing: ["passphrase": .string(passphrase)]) { bytes += $0 }
        return bytes
    }

    static func importing(_ admin: AerieClient, _ archive: [UInt8], newId: Bool = false) async throws -> JSONValue {
        var opening: [String: JSONValue] = ["passphrase": .string(passphrase)]
        if newId { opening["newId"] = true }
        var rest: [UInt8]? = archive
        return try await admin.importTenant(opening: opening) {
            defer { rest = nil }
            return rest
        }
    }

    /// The data key an archive carries, read as its holder would.
    static func archivedDataKey(_ archive: [UInt8]) throws -> DataKey {
        let reader = TenantArchiveReader(opening: .passphrase(passphrase))
        var body: [UInt8] = []
        for chunk in try reader.feed(archive) { chunk.withUnsafeBytes { body.append(contentsOf: $0) } }
        try reader.finish()
        let manifest = try JSONValue(parsing: Array(body.prefix(while: { $0 != UInt8(ascii: "\n") })))
        return try DataKey.archived(try Base64.decode(try #require(manifest["dataKey"]?.stringValue)))
    }

    /// Every sealed value of `tenant` in `database`, tried with `key`: answers how many were
    /// tried and how many opened.
    static func open(_ database: TestDatabase, tenant: TenantID, with key: DataKey) async throws -> (tried: Int, opened: Int) {
        let tables = try PluginRegistry.standard.stores(selected: PluginRegistry.standard.select(nil)).sealedTables + SealedTable.core
        let sealer = DataSealer(dataKey: key, tenantID: tenant)
        return try await WalletFixture.asSuperuser(database) { session in
            var tried = 0
            var opened = 0
            for table in tables {
                let owner = table.table == "tenants" ? "id" : "tenant_id"
                for value in table.values {
                    let rows = try session.query(
                        """
                        SELECT "\(table.rowColumn)"::text, "\(value.stored)" FROM aerie."\(table.table)"
                        WHERE \(owner) = $1::uuid AND "\(value.stored)" IS NOT NULL
                        """, [.text(tenant.rawValue)])
                    for row in 0..<rows.rowCount {
                        let name = try #require(rows.string(row, 0))
                        let sealed = try #require(rows.bytes(row, 1))
                        tried += 1
                        switch value.sealing {
                        case .value(let column):
                            if (try? sealer.open(sealed, table: table.table, column: column, row: name)) != nil { opened += 1 }
                        case .privateKey:
                            let verkey = try Base58.decode(name)
                            if (try? key.open(sealed: sealed, tenantID: tenant.rawValue, verkey: verkey)) != nil { opened += 1 }
                        }
                    }
                }
            }
            return (tried, opened)
        }
    }

    /// Alice (connected to Bob both ways, with messages and a setting) is exported and imported
    /// on another server with another master key: everything reads back the same there, and the
    /// archive's data key, which opens every sealed value of hers on the source, opens none on
    /// the destination.
    @Test func anImportedTenantIsSealedUnderANewDataKey() async throws {
        let source = try await LiveServer.start(server: Self.configure)
        let destination = try await LiveServer.start(server: Self.configure)
        do {
            let (alice, bob) = try await Self.aliceAndBob(source)
            let before = try await TenantMoveTests.listings(alice.client)
            let sourceAdmin = try await source.adminClient()
            let destinationAdmin = try await destination.adminClient()
            let archive = try await Self.export(sourceAdmin, alice.id)
            let archivedKey = try Self.archivedDataKey(archive)
            let onSource = try await Self.open(source.database, tenant: alice.id, with: archivedKey)
            #expect(onSource.tried >= 8 && onSource.opened == onSource.tried, "\(onSource)")

            let imported = try await Self.importing(destinationAdmin, archive)
            #expect(imported["tenantId"]?.stringValue == alice.id.rawValue)
            #expect(imported["token"] == nil)
            let onDestination = try await Self.open(destination.database, tenant: alice.id, with: archivedKey)
            #expect(onDestination.tried == onSource.tried && onDestination.opened == 0, "\(onDestination)")

            let moved = try await destination.client()
            try await moved.authenticate(token: alice.token)
            #expect(try await TenantMoveTests.listings(moved) == before)

            await moved.close()
            await alice.client.close()
            await bob.client.close()
            await sourceAdmin.close()
            await destinationAdmin.close()
        } catch {
            Issue.record(error)
        }
        try await source.stop()
        try await destination.stop()
    }

    /// An id taken on the importing server is refused without `newId`; with it the tenant comes
    /// in under a fresh id and token, everything of it moved to that id and readable, next to the
    /// other tenant of the old id, each seeing only its own. Keys another tenant owns are refused
    /// with or without `newId`, leaving nothing.
    @Test func newIdImportsACopyAndKeysAnotherTenantOwnsAreRefused() async throws {
        let source = try await LiveServer.start(server: Self.configure)
        let destination = try await LiveServer.start(server: Self.configure)
        do {
            let (alice, bob) = try await Self.aliceAndBob(source)
            let before = try await TenantMoveTests.listings(alice.client)
            let sourceAdmin = try await source.adminClient()
            let destinationAdmin = try await destination.adminClient()

            // Back into the server it came from: the id is taken, and with a new id its keys are
            // still Alice's here.
            let copy = try await Self.export(sourceAdmin, alice.id)
            await expectCode("conflict") { _ = try await Self.importing(sourceAdmin, copy) }
            let tenantsBefore = try await sourceAdmin.call("admin.tenants.list")
            await expectCode("conflict") { _ = try await Self.importing(sourceAdmin, try await Self.export(sourceAdmin, alice.id), newId: true) }
            #expect(try await sourceAdmin.call("admin.tenants.list") == tenantsBefore)

            // On the destination: Alice once; her copy there lets go of its connections (and keys).
            _ = try await Self.importing(destinationAdmin, copy)
            let first = try await destination.client()
            try await first.authenticate(token: alice.token)
            for connection in (before[0]["connections"]?.arrayValue ?? []).compactMap({ $0["connectionId"]?.stringValue }) {
                _ = try await first.call("connections.delete", params: ["connectionId": .string(connection)])
            }
            let firstListings = try await TenantMoveTests.listings(first)

            let again = try await Self.export(sourceAdmin, alice.id)
            await expectCode("conflict") { _ = try await Self.importing(destinationAdmin, again) }
            let imported = try await Self.importing(destinationAdmin, again, newId: true)
            let newID = try #require(imported["tenantId"]?.stringValue.flatMap(TenantID.init))
            let token = try #require(imported["token"]?.stringValue)
            #expect(newID != alice.id)
            #expect(try await TenantMoveTests.rowsLeft(destination.database, tenant: newID) > 0)

            let second = try await destination.client()
            try await second.authenticate(token: token)
            #expect(try await TenantMoveTests.listings(second) == before)
            #expect(try await TenantMoveTests.listings(first) == firstListings)
            // The old token is still the first Alice's on the destination.
            let third = try await destination.client()
            try await third.authenticate(token: alice.token)
            #expect(try await TenantMoveTests.listings(third) == firstListings)
            // Sealed for the new id under the new key: the archive's key opens nothing of it.
            let opened = try await Self.open(destination.database, tenant: newID, with: try Self.archivedDataKey(again))
            #expect(opened.tried >= 8 && opened.opened == 0, "\(opened)")

            for client in [first, second, third, alice.client, bob.client, sourceAdmin, destinationAdmin] { await client.close() }
        } catch {
            Issue.record(error)
        }
        try await source.stop()
        try await destination.stop()
    }

    /// Every keyed lookup hash the tables declare (`SealedTable`) is made again by the import under
    /// the new data key, and each lookup it serves answers on the destination as on the source
    /// before the export: a connection found by invitation `@id`, public DID and first recipient
    /// key (`connections.findExisting`); an out-of-band invitation scanned again found by its
    /// record (its decision row, not only its connection); a stored credential by issuer and by
    /// type (`credentials.list`); an open credential exchange and a proof request by their thread,
    /// from the peer's next message on it. Carol, a tenant of the destination, finds none of it.
    @Test func everyLookupHashAnswersAfterAnImportAsBefore() async throws {
        let inbox = try await PeerInbox()
        let source = try await LiveServer.start(server: Self.configure)
        let destination = try await LiveServer.start(server: Self.configure)
        do {
            let alice = try await TenantMoveTests.tenant(source, label: "Alice Lookups")
            let carol = try await TenantMoveTests.tenant(destination, label: "Carol Stays")
            let peer = try await TestPeer.connect(alice.client, endpoint: inbox.url, key: inbox.key)

            // Connections: one by a public DID invitation (created only), one by an out-of-band
            // invitation (connecting to nobody).
            let publicDid: JSONValue = [
                "@type": "https://didcomm.org/connections/1.0/invitation", "@id": "inv-public", "label": "Public Inviter",
                "did": "did:sov:LjgpST2rjsoxYegQDRm7EL",
            ]
            let byPublicDid = try #require(
                try await alice.client.call("connections.createWithInvite", params: ["invitation": publicDid])["connectionId"])
            let inviter = Ed25519KeyPair.generate()
            let outOfBand = try HandMadeHandshake.invitation(inviter: inviter, id: "oob-lookups")
            let accepted = try await alice.client.call("outOfBand.accept", params: ["invitation": outOfBand, "wait": false])
            let byOutOfBand = try #require(accepted["connection"]?["connectionId"])
            #expect(accepted["sameInvitation"] == false, "\(accepted)")
            // Each probe matches on one key only.
            let probes: [(String, JSONValue, JSONValue, String?)] = [
                ("@id", try HandMadeHandshake.invitation(inviter: .generate(), id: "oob-lookups"), byOutOfBand, "id"),
                ("first recipient key", try HandMadeHandshake.invitation(inviter: inviter, id: "oob-other"), byOutOfBand, "recipientKey"),
                (
                    "public DID",
                    [
                        "@type": "https://didcomm.org/connections/1.0/invitation", "@id": "inv-public-2", "label": "Public Inviter",
                        "did": "LjgpST2rjsoxYegQDRm7EL",
                    ], byPublicDid, "publicDid"
                ),
                ("nothing", try HandMadeHandshake.invitation(inviter: .generate(), id: "oob-stranger"), .null, nil),
            ]
            /// The answers of every probe; `expected`: each also held to what it should find.
            func found(_ client: AerieClient, expected: Bool = true) async throws -> [JSONValue] {
                var answers: [JSONValue] = []
                for (name, invitation, connection, match) in probes {
                    let existing = try await client.call("connections.findExisting", params: ["invitation": invitation])
                    if expected {
                        #expect((existing["connectionId"] ?? .null) == connection, "by \(name): \(existing)")
                        #expect(existing["match"]?.stringValue == match, "by \(name): \(existing)")
                    }
                    answers.append(existing)
                }
                // The out-of-band invitation again: its record, so the row first taken, and no new connection.
                let again = try await client.call("outOfBand.accept", params: ["invitation": outOfBand, "wait": false])
                if expected {
                    #expect(again["sameInvitation"] == true && again["row"] == accepted["row"] && again["row"] != nil, "\(again)")
                    #expect(again["connection"]?["connectionId"] == byOutOfBand && again["state"]?.stringValue != nil, "\(again)")
                }
                answers.append(again["row"] ?? .null)
                answers.append(again["connection"]?["connectionId"] ?? .null)
                return answers
            }

            // A credential stored (issuer and type hashes), another offer accepted and waiting for its credential.
            let issuer = try DIDKey.did(verkey: HandMadeIssuerTests.issuerKey.verkey)
            /// The offer on `thread` accepted: its exchange id and the credential the request asks for.
            func offer(_ thread: String, server: LiveServer, client: AerieClient) async throws -> (exchangeId: JSONValue, requested: JSONValue) {
                #expect(
                    try await DIDCommEndpointTests.post(try peer.pack(HandMadeIssuerTests.offer(issuer: issuer, id: thread)), to: server.didcommPort)
                        == 202)
                let offered = try await ACAPyIssueCredentialTests.eventually("the offer \(thread)") {
                    try await client.call("credentials.exchanges", params: [:])["exchanges"]?.arrayValue?
                        .first { $0["threadId"]?.stringValue == thread }
                }
                let exchangeId = try #require(offered["exchangeId"])
                _ = try await client.call("credentials.accept", params: ["offerId": exchangeId])
                let request = try #require(
                    try await inbox.wait {
                        $0["~thread"]?["thid"]?.stringValue == thread && $0["@type"]?.stringValue?.hasSuffix("request-credential") == true
                    })
                let detail = try #require(request.message["requests~attach"]?.arrayValue?.first?["data"]?["base64"]?.stringValue)
                return (exchangeId, try #require(try JSONValue(parsing: try Base64.decode(detail))["credential"]))
            }
            /// The issuer's credential on `thread`, sent to `server`: the exchange as it ends.
            func issue(_ thread: String, _ offered: (exchangeId: JSONValue, requested: JSONValue), server: LiveServer, client: AerieClient)
                async throws -> JSONValue
            {
                let signed = try LinkedDataProofs.sign(
                    offered.requested, suite: .ed25519Signature2018,
                    key: HandMadeIssuerTests.issuerKey, verificationMethod: try DIDKey.keyReference(verkey: HandMadeIssuerTests.issuerKey.verkey),
                    purpose: .assertionMethod, created: Date())
                #expect(
                    try await DIDCommEndpointTests.post(try peer.pack(IssueCredentialWire.issue(signed, thread: thread)), to: server.didcommPort)
                        == 202)
                return try await ACAPyIssueCredentialTests.eventually("the exchange \(thread) to end") { () async throws -> JSONValue? in
                    let current = try await client.call("credentials.exchange", params: ["exchangeId": offered.exchangeId])
                    guard ["done", "abandoned"].contains(current["state"]?.stringValue ?? "") else { return nil }
                    return current
                }
            }
            let kept = try await offer("offer-kept", server: source, client: alice.client)
            let issued = try await issue("offer-kept", kept, server: source, client: alice.client)
            #expect(issued["state"] == "done", "\(issued)")
            let open = try await offer("offer-open", server: source, client: alice.client)
            let filters: [JSONValue] = [
                ["issuer": .string(issuer)], ["types": ["UniversityDegreeCredential"]],
                ["issuer": .string(issuer), "types": ["VerifiableCredential", "UniversityDegreeCredential"]],
                ["issuer": "did:key:z6MkhaXgBZDvotDkL5257faiztiGiC2QtKLGpbnnEGta2doK"], ["types": ["PermanentResident"]],
            ]
            func credentials(_ client: AerieClient) async throws -> [Int] {
                var counts: [Int] = []
                for filter in filters {
                    counts.append(try await client.call("credentials.list", params: filter)["credentials"]?.arrayValue?.count ?? -1)
                }
                return counts
            }

            // A proof request, and another on its thread (a new @id): the second is refused as one
            // already known, so one request stays.
            func requests(_ client: AerieClient, server: LiveServer, again: String) async throws -> Int {
                guard case .object(var repeated) = PresentProofPeerTests.request(id: again, definition: PresentProofPeerTests.definition)
                else { return -1 }
                repeated["~thread"] = ["thid": "req-lookups"]
                #expect(try await DIDCommEndpointTests.post(try peer.pack(.object(repeated)), to: server.didcommPort) == 202)
                try await Task.sleep(for: .milliseconds(500))
                return try await PresentProofPeerTests.requests(client).count
            }
            #expect(
                try await DIDCommEndpointTests.post(
                    try peer.pack(PresentProofPeerTests.request(id: "req-lookups", definition: PresentProofPeerTests.definition)),
                    to: source.didcommPort) == 202)
            let request = try #require(try await PresentProofPeerTests.waitForRequest(alice.client, thread: "req-lookups"))

            let connectionsBefore = try await found(alice.client)
            let credentialsBefore = try await credentials(alice.client)
            #expect(credentialsBefore == [1, 1, 1, 0, 0])
            #expect(try await requests(alice.client, server: source, again: "req-lookups-source") == 1)
            let listedBefore = try await alice.client.call("connections.list")

            let (sourceAdmin, destinationAdmin) = (try await source.adminClient(), try await destination.adminClient())
            _ = try await Self.importing(destinationAdmin, try await Self.export(sourceAdmin, alice.id))
            let moved = try await destination.client()
            try await moved.authenticate(token: alice.token)

            #expect(try await found(moved) == connectionsBefore)
            #expect(try await moved.call("connections.list") == listedBefore)
            #expect(try await credentials(moved) == credentialsBefore)
            #expect(try await requests(moved, server: destination, again: "req-lookups-destination") == 1)
            // The peer's next message on each open thread finds its exchange on the destination.
            let ended = try await issue("offer-open", open, server: destination, client: moved)
            #expect(ended["state"] == "done", "\(ended)")
            #expect(try await credentials(moved) == [2, 2, 2, 0, 0])
            let report: JSONValue = [
                "@type": "https://didcomm.org/present-proof/2.0/problem-report", "@id": "report-lookups",
                "~thread": ["thid": "req-lookups"], "description": ["code": "abandoned", "en": "no longer needed"],
            ]
            #expect(try await DIDCommEndpointTests.post(try peer.pack(report), to: destination.didcommPort) == 202)
            let requestId = try #require(request["requestId"])
            let abandoned = try await ACAPyIssueCredentialTests.eventually("the request abandoned") { () async throws -> JSONValue? in
                let current = try await moved.call("proofs.get", params: ["requestId": requestId])
                guard current["state"] == "abandoned" else { return nil }
                return current
            }
            #expect(abandoned["problem"]?.stringValue?.contains("no longer needed") == true, "\(abandoned)")

            // Carol, on the destination, matches none of Alice's invitations and holds no credential.
            let carols = try await found(carol.client, expected: false)
            #expect(carols.prefix(probes.count).allSatisfy { ($0["connectionId"] ?? .null) == .null }, "\(carols)")
            #expect(try await credentials(carol.client) == [0, 0, 0, 0, 0])

            for client in [alice.client, carol.client, moved, sourceAdmin, destinationAdmin] { await client.close() }
        } catch {
            Issue.record(error)
        }
        try await source.stop()
        try await destination.stop()
        await inbox.stop()
    }

    /// A message for a key of a tenant being moved, or moved away within the grace period, is
    /// answered 503 with a `Retry-After` of at most a minute and not past the grace period; a
    /// stranger's key 400 without one.
    @Test func movedKeysAreAnsweredRetryAfter() async throws {
        let server = try await LiveServer.start(server: { config in
            Self.configure(&config)
            config.tenants.movedGraceSeconds = 30
        })
        do {
            let (alice, bob) = try await Self.aliceAndBob(server)
            let verkey = try await WalletFixture.asSuperuser(server.database) { session in
                try session.query("SELECT verkey FROM aerie.tenant_keys WHERE tenant_id = $1::uuid LIMIT 1", [.text(alice.id.rawValue)])
                    .string(0, 0)
            }
            func post(_ key: String) async throws -> LoopbackHTTP.Response {
                let envelope = try DIDCommEnvelope.pack(Array(#"{"@type":"x","@id":"1"}"#.utf8), to: [key], from: nil)
                return try await LoopbackHTTP.request(
                    "POST", port: server.didcommPort, path: "/", body: envelope, contentType: "application/didcomm-envelope-enc")
            }
            let key = try #require(verkey)
            let admin = try await server.adminClient()
            _ = try await admin.exportTenant(alice.id, sealing: ["passphrase": .string(Self.passphrase)], move: true) { _ in }
            let moving = try await post(key)
            #expect(moving.status == 503)
            #expect(moving.headers["retry-after"] == "60", "\(moving.headers)")
            _ = try await admin.call("admin.tenants.retire", params: ["tenantId": .string(alice.id.rawValue)])
            let moved = try await post(key)
            #expect(moved.status == 503)
            let seconds = try #require(moved.headers["retry-after"].flatMap(Int.init))
            #expect((1...30).contains(seconds))
            let stranger = try await post(try Ed25519KeyPair(seed: Random.bytes(32)).verkeyBase58)
            #expect(stranger.status == 400 && stranger.headers["retry-after"] == nil)
            for client in [alice.client, bob.client, admin] { await client.close() }
        } catch {
            Issue.record(error)
        }
        try await server.stop()
    }

    /// The import counts the mailbox once and holds it to the importing server's quota: over it,
    /// `quota_exceeded` and nothing left; within it, the usage row counts every message, so the
    /// next message is held to the quota like any other.
    @Test func anImportIsHeldToTheMailboxQuota() async throws {
        let source = try await LiveServer.start(server: Self.configure)
        let tight = try await LiveServer.start(server: {
            Self.configure(&$0)
            $0.database.quotas.mailboxMessages = 2
        })
        let roomy = try await LiveServer.start(server: Self.configure)
        do {
            let (alice, bob) = try await Self.aliceAndBob(source)
            let sourceAdmin = try await source.adminClient()
            let (tightAdmin, roomyAdmin) = (try await tight.adminClient(), try await roomy.adminClient())
            let archive = try await Self.export(sourceAdmin, alice.id)
            await expectCode("quota_exceeded") { _ = try await Self.importing(tightAdmin, archive) }
            #expect(try await TenantMoveTests.rowsLeft(tight.database, tenant: alice.id) == 0)

            let imported = try await Self.importing(roomyAdmin, archive)
            let messages = try #require(imported["rows"]?["mailbox"]?.intValue)
            let counted = try await WalletFixture.asSuperuser(roomy.database) { session in
                try session.query("SELECT sum(mailbox_messages) FROM aerie.tenant_usage WHERE tenant_id = $1::uuid", [.text(alice.id.rawValue)])
                    .int(0, 0)
            }
            #expect(counted == Int(messages) && messages >= 3, "usage \(String(describing: counted)) for \(messages) messages")
            for client in [alice.client, bob.client, sourceAdmin, tightAdmin, roomyAdmin] { await client.close() }
        } catch {
            Issue.record(error)
        }
        try await source.stop()
        try await tight.stop()
        try await roomy.stop()
    }

    /// Bytes of tenant tables that are not sealed under the tenant's data key, and why; every other
    /// bytea column of a tenant table must be declared in a `SealedTable`, or an import would
    /// carry it under the archive's key.
    static let notSealedByTheDataKey: Set<String> = [
        "tenants.token_hash",  // a hash of the token, checked at authentication
        "tenants.data_key_wrapped",  // the data key itself, wrapped by the master key
        "outbox.envelope",  // packed for the peer, not for us
    ]

    @Test func everySealedColumnIsDeclared() async throws {
        try await LiveServer.with { server in
            let tables = try PluginRegistry.standard.stores(selected: PluginRegistry.standard.select(nil)).sealedTables + SealedTable.core
            let declared = Set(tables.flatMap { table in
                table.values.map { "\(table.table).\($0.stored)" } + table.hashes.map { "\(table.table).\($0.stored)" }
            })
            let columns = try await WalletFixture.asSuperuser(server.database) { session in
                try session.query(
                    """
                    SELECT c.relname || '.' || a.attname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
                    JOIN pg_attribute a ON a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped
                    WHERE n.nspname = 'aerie' AND c.relkind IN ('r', 'p') AND NOT c.relispartition
                        AND (a.atttypid = 'bytea'::regtype OR a.attname LIKE '%hash%')
                        AND (c.relname = 'tenants' OR EXISTS (
                            SELECT 1 FROM pg_attribute t WHERE t.attrelid = c.oid AND t.attname = 'tenant_id'))
                    """
                ).allRows().compactMap { $0[0] }
            }
            let undeclared = Set(columns).subtracting(declared).subtracting(Self.notSealedByTheDataKey)
            #expect(undeclared.isEmpty, "bytea or hash columns of tenant tables no SealedTable declares: \(undeclared.sorted())")
            #expect(declared.isSubset(of: Set(columns)), "declared but not in the schema: \(declared.subtracting(columns).sorted())")
        }
    }

    /// Alice and Bob on `server`, connected both ways, with messages in Alice's mailbox (one
    /// reviewed) and a setting each.
    static func aliceAndBob(
        _ server: LiveServer
    ) async throws -> (alice: (client: AerieClient, id: TenantID, token: String), bob: (client: AerieClient, id: TenantID, token: String)) {
        let alice = try await TenantMoveTests.tenant(server, label: "Alice Import Label")
        let bob = try await TenantMoveTests.tenant(server, label: "Bob")
        let (bobToAlice, _) = try await DeliveryRetryLiveTests.connect(bob.client, alice.client)
        _ = try await DeliveryRetryLiveTests.connect(alice.client, bob.client)
        for n in 0..<3 {
            let sent = try await bob.client.call(
                "messages.sendText", params: ["connectionId": .string(bobToAlice), "content": .string("for the archive \(n)")])
            let uid = try #require(sent["uid"]?.stringValue)
            #expect(try await SendMessagesTests.waitForStatus(bob.client, uid: uid, status: "MS-102") != nil)
        }
        #expect(try await InviterTests.receives(alice.client, content: "for the archive 2"))
        _ = try await alice.client.call("settings.set", params: ["key": "profile", "value": ["name": "Alice Secret Name"]])
        return (alice, bob)
    }
}
