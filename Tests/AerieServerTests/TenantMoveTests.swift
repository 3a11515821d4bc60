import AerieClient
import AerieCore
import AerieCrypto
import AerieServer
import AerieStore
import AerieTesting
import Foundation
import Testing

/// Issue 42: a tenant leaves one server for another (another database, another master key) as a
/// sealed archive, with its connections, mailbox and settings, and its peers keep reaching it
/// through the shared public endpoint; the old server keeps nothing readable of it.
@Suite(.serialized, .timeLimit(.minutes(15))) struct TenantMoveTests {
    static func configure(_ config: inout AerieConfiguration, endpoint: String) {
        config.outbound.allowPrivateURLs = true
        config.didcomm.publicEndpoint = endpoint
        config.delivery.backoff = .milliseconds(100)
        config.delivery.maxBackoff = .milliseconds(500)
        config.delivery.pollInterval = .milliseconds(200)
    }

    /// A tenant made with the admin token of `server`, with its token.
    static func tenant(_ server: LiveServer, label: String) async throws -> (client: AerieClient, id: TenantID, token: String) {
        let admin = try await server.adminClient()
        defer { Task { await admin.close() } }
        let created = try await admin.call("admin.tenants.create", params: ["label": .string(label)])
        let token = try #require(created["token"]?.stringValue)
        let id = try #require(created["tenantId"]?.stringValue.flatMap(TenantID.init))
        let client = try await server.client()
        try await client.authenticate(token: token)
        return (client, id, token)
    }

    /// What a backend sees of a tenant: its connections, its whole mailbox, a setting.
    static func listings(_ client: AerieClient) async throws -> [JSONValue] {
        [
            try await client.call("connections.list"),
            try await client.call(
                "messages.download", params: ["status": ["MS-101", "MS-102", "MS-103", "MS-104", "MS-105", "MS-106"]]),
            try await client.call("settings.get", params: ["key": "profile"]),
        ]
    }

    /// Rows of `tenant` left in any table of `database` (read as superuser, past row-level security).
    static func rowsLeft(_ database: TestDatabase, tenant: TenantID) async throws -> Int {
        try await WalletFixture.asSuperuser(database) { session in
            let tables = try session.query(
                """
                SELECT c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
                JOIN pg_attribute a ON a.attrelid = c.oid AND a.attname = 'tenant_id'
                WHERE n.nspname = 'aerie' AND c.relkind IN ('r', 'p') AND NOT c.relispartition
                """
            ).allRows().compactMap { $0[0] }
            var count = try session.query("SELECT count(*) FROM aerie.tenants WHERE id = $1::uuid", [.text(tenant.rawValue)]).int(0, 0) ?? 0
            for table in tables {
                count += try session.query(
                    "SELECT count(*) FROM aerie.\"\(table)\" WHERE tenant_id = $1::uuid", [.text(tenant.rawValue)]).int(0, 0) ?? 0
            }
            return count
        }
    }

    /// Both roles, a mailbox with statuses, a setting; moved; the listings are the same on the new
    /// server, the peer's next message lands there through the shared endpoint (the old server
    /// answers 503 for the moved keys), the tenant pings its peer from there, and the old
    /// server's database holds nothing of it while the other tenant there is untouched.
    @Test func aTenantMovesWithItsConnectionsAndMailboxAndPeersStillReachIt() async throws {
        let endpoint = try await SharedEndpoint()
        let source = try await LiveServer.start(server: { Self.configure(&$0, endpoint: endpoint.url) })
        let destination = try await LiveServer.start(server: { Self.configure(&$0, endpoint: endpoint.url) })
        endpoint.route(to: [source.didcommPort, destination.didcommPort])
        do {
            let alice = try await Self.tenant(source, label: "Alice Moving Label")
            let bob = try await Self.tenant(source, label: "Bob Stays")
            // Alice as invitee of Bob, and as inviter of Bob.
            let (bobToAlice, aliceInvitee) = try await DeliveryRetryLiveTests.connect(bob.client, alice.client)
            let (aliceInviter, _) = try await DeliveryRetryLiveTests.connect(alice.client, bob.client)
            var uids: [String] = []
            for n in 0..<3 {
                let sent = try await bob.client.call(
                    "messages.sendText", params: ["connectionId": .string(bobToAlice), "content": .string("before the move \(n)")])
                let uid = try #require(sent["uid"]?.stringValue)
                #expect(try await SendMessagesTests.waitForStatus(bob.client, uid: uid, status: "MS-102") != nil)
                uids.append(uid)
            }
            #expect(try await InviterTests.receives(alice.client, content: "before the move 2"))
            let received = try await alice.client.call("messages.download", params: ["status": ["MS-103"]])
            let firstUid = try #require(received.arrayValue?.first?["msgs"]?.arrayValue?.first?["uid"]?.stringValue)
            let pairwise = try #require(received.arrayValue?.first?["pairwiseDID"]?.stringValue)
            _ = try await alice.client.call(
                "messages.updateStatus",
                params: ["status": "MS-106", "messages": [["pairwiseDID": .string(pairwise), "uids": [.string(firstUid)]]]])
            _ = try await alice.client.call("settings.set", params: ["key": "profile", "value": ["name": "Alice Secret Name"]])
            _ = try await bob.client.call("settings.set", params: ["key": "profile", "value": ["name": "Bob"]])
            let before = try await Self.listings(alice.client)
            let bobBefore = try await Self.listings(bob.client)
            let aliceDIDs = (before[0]["connections"]?.arrayValue ?? []).compactMap { $0["pwDid"]?.stringValue }
            #expect(aliceDIDs.count == 2)

            let sourceAdmin = try await source.adminClient()
            let destinationAdmin = try await destination.adminClient()
            let retired = try await sourceAdmin.moveTenant(alice.id, to: destinationAdmin)
            #expect(retired["retired"] == true, "\(retired)")

            // The old server: the token no longer works, and nothing of Alice is left.
            await expectCode("unauthenticated") { try await alice.client.call("connections.list") }
            #expect(try await Self.rowsLeft(source.database, tenant: alice.id) == 0)
            let dump = try SealedStorageTests.pgDump(source.database.superuserConninfo)
            SealedStorageTests.expectNoSecrets([alice.id.rawValue] + aliceDIDs, in: dump, "the old server's pg_dump after the move")

            // The new server: same token, same listings.
            let moved = try await destination.client()
            try await moved.authenticate(token: alice.token)
            let after = try await Self.listings(moved)
            #expect(after == before)

            // Bob's next message reaches Alice on the new server through the shared endpoint.
            let sent = try await bob.client.call(
                "messages.sendText", params: ["connectionId": .string(bobToAlice), "content": "after the move"])
            let uid = try #require(sent["uid"]?.stringValue)
            #expect(try await SendMessagesTests.waitForStatus(bob.client, uid: uid, status: "MS-102") != nil)
            #expect(try await InviterTests.receives(moved, content: "after the move"))
            // Alice answers from the new server, on both connections.
            for connection in [aliceInvitee, aliceInviter] {
                let ping = try await moved.call("connections.ping", params: ["connectionId": .string(connection), "timeoutSeconds": 20])
                #expect(ping["roundTripMs"] != nil, "\(ping)")
            }
            // Bob, who stayed, is untouched (but for the message he sent after the move).
            let bobAfter = try await Self.listings(bob.client)
            #expect(bobAfter[0] == bobBefore[0])
            #expect(bobAfter[2] == bobBefore[2])

            await alice.client.close()
            await bob.client.close()
            await moved.close()
            await sourceAdmin.close()
            await destinationAdmin.close()
        } catch {
            Issue.record(error)
        }
        try await source.stop()
        try await destination.stop()
        await endpoint.stop()
    }

    /// An archive cut short, altered, of another version, opened with the wrong passphrase, or
    /// imported a second time is refused with a stable code and leaves nothing; the good one
    /// imports, and one sealed to a recipient key opens only with its secret key. Exporting does
    /// not stop the tenant (a snapshot, not a freeze).
    @Test func badArchivesAreRefusedAndLeaveNothing() async throws {
        let endpoint = try await SharedEndpoint()
        let source = try await LiveServer.start(server: { Self.configure(&$0, endpoint: endpoint.url) })
        let destination = try await LiveServer.start(server: { Self.configure(&$0, endpoint: endpoint.url) })
        do {
            let alice = try await Self.tenant(source, label: "Alice Archive")
            _ = try await alice.client.call("settings.set", params: ["key": "profile", "value": ["name": "Alice Secret Name"]])
            let sourceAdmin = try await source.adminClient()
            let destinationAdmin = try await destination.adminClient()
            let passphrase = "correct horse battery staple"
            var archive: [UInt8] = []
            try await sourceAdmin.exportTenant(alice.id, sealing: ["passphrase": .string(passphrase)]) { archive += $0 }
            #expect(!String(decoding: archive, as: UTF8.self).contains("Alice"), "the archive holds clear text")
            // The export froze nothing.
            #expect(try await alice.client.call("settings.get", params: ["key": "profile"])["value"]?["name"] == "Alice Secret Name")

            func importing(_ bytes: [UInt8], passphrase: String = passphrase) async throws -> JSONValue {
                var pieces = stride(from: 0, to: bytes.count, by: 100_000).map { Array(bytes[$0..<min($0 + 100_000, bytes.count)]) }
                return try await destinationAdmin.importTenant(opening: ["passphrase": .string(passphrase)]) {
                    pieces.isEmpty ? nil : pieces.removeFirst()
                }
            }
            var tampered = archive
            tampered[archive.count / 2] ^= 0x01
            var otherVersion = archive
            otherVersion[9] = 2
            let bad: [(String, [UInt8], String)] = [
                ("cut short", Array(archive.dropLast(5)), passphrase),
                ("cut at a chunk's end", Array(archive.prefix(200)), passphrase),
                ("altered", tampered, passphrase),
                ("another version", otherVersion, passphrase),
                ("wrong passphrase", archive, "not the passphrase at all"),
                ("garbage", Array(repeating: 0x41, count: 5000), passphrase),
            ]
            for (what, bytes, secret) in bad {
                do {
                    _ = try await importing(bytes, passphrase: secret)
                    Issue.record("\(what): imported")
                } catch let error as AerieClientError {
                    #expect(error.stableCode == "invalid_archive", "\(what): \(error)")
                }
                #expect(try await Self.rowsLeft(destination.database, tenant: alice.id) == 0, "\(what) left rows")
            }
            let imported = try await importing(archive)
            #expect(imported["tenantId"]?.stringValue == alice.id.rawValue)
            let there = try await destination.client()
            try await there.authenticate(token: alice.token)
            #expect(try await there.call("settings.get", params: ["key": "profile"])["value"]?["name"] == "Alice Secret Name")
            await expectCode("conflict") { try await importing(archive) }

            // Sealed to a recipient key: the secret key opens it, after the first copy is gone.
            _ = try await destinationAdmin.call("admin.tenants.delete", params: ["tenantId": .string(alice.id.rawValue)])
            let recipient = X25519KeyPair.generate()
            var sealed: [UInt8] = []
            try await sourceAdmin.exportTenant(alice.id, sealing: ["recipientPublicKey": .string(Base64.encode(recipient.publicKey))]) {
                sealed += $0
            }
            await expectCode("invalid_archive") {
                try await destinationAdmin.importTenant(
                    opening: ["recipientSecretKey": .string(Base64.encode(X25519KeyPair.generate().secretKeyBytes))]) { nil }
            }
            var once = Optional(sealed)
            let reimported = try await destinationAdmin.importTenant(
                opening: ["recipientSecretKey": .string(Base64.encode(recipient.secretKeyBytes))]) { defer { once = nil }; return once }
            #expect(reimported["tenantId"]?.stringValue == alice.id.rawValue)

            // A snapshot: once the export has begun (its first piece read), a change the tenant
            // makes is not in the archive, and the tenant was not stopped to make it.
            let started = try await sourceAdmin.call(
                "admin.tenants.export", params: ["tenantId": .string(alice.id.rawValue), "passphrase": .string(passphrase)])
            let exportID = try #require(started["exportId"]?.stringValue)
            var snapshot: [UInt8] = []
            var changed = false
            while true {
                let chunk = try await sourceAdmin.call("admin.tenants.exportChunk", params: ["exportId": .string(exportID)])
                if chunk["done"] == true { break }
                let text = try #require(chunk["data"]?.stringValue)
                snapshot += Array(try #require(Data(base64Encoded: text)))
                if !changed {
                    _ = try await alice.client.call("settings.set", params: ["key": "profile", "value": ["name": "Changed After"]])
                    changed = true
                }
            }
            _ = try await destinationAdmin.call("admin.tenants.delete", params: ["tenantId": .string(alice.id.rawValue)])
            _ = try await importing(snapshot)
            let copy = try await destination.client()
            try await copy.authenticate(token: alice.token)
            #expect(try await copy.call("settings.get", params: ["key": "profile"])["value"]?["name"] == "Alice Secret Name")
            #expect(try await alice.client.call("settings.get", params: ["key": "profile"])["value"]?["name"] == "Changed After")
            await copy.close()
            await alice.client.close()
            await there.close()
            await sourceAdmin.close()
            await destinationAdmin.close()
        } catch {
            Issue.record(error)
        }
        try await source.stop()
        try await destination.stop()
        await endpoint.stop()
    }

    /// A backend exports and imports its own tenants (an import it makes owns the tenant), not
    /// another's, and does not move them; a tenant's session exports itself only where the
    /// operator allows it.
    @Test func backendsExportTheirOwnTenantsAndATenantItselfWhenAllowed() async throws {
        let endpoint = try await SharedEndpoint()
        let source = try await LiveServer.start(server: { Self.configure(&$0, endpoint: endpoint.url); $0.tenants.selfExport = true })
        let destination = try await LiveServer.start(server: { Self.configure(&$0, endpoint: endpoint.url) })
        do {
            let sourceAdmin = try await source.adminClient()
            let destinationAdmin = try await destination.adminClient()
            let backend = try await BackendSessionTests.createBackend(sourceAdmin, "exporter")
            let importer = try await BackendSessionTests.createBackend(destinationAdmin, "importer")
            let session = try await BackendSessionTests.session(source, token: backend.token)
            let created = try await session.call("admin.tenants.create", params: ["label": "Owned"])
            let owned = try #require(created["tenantId"]?.stringValue.flatMap(TenantID.init))
            let other = try await Self.tenant(source, label: "Not the backend's")
            let sealing: [String: JSONValue] = ["passphrase": "a backend's passphrase"]
            var archive: [UInt8] = []
            try await session.exportTenant(owned, sealing: sealing) { archive += $0 }
            #expect(archive.starts(with: Array("AERIEARC".utf8)))
            await expectCode("not_found") { try await session.exportTenant(other.id, sealing: sealing) { _ in } }
            await expectCode("forbidden") { try await session.exportTenant(owned, sealing: sealing, move: true) { _ in } }
            await expectCode("forbidden") { try await session.call("admin.tenants.retire", params: ["tenantId": .string(owned.rawValue)]) }

            let importing = try await BackendSessionTests.session(destination, token: importer.token)
            var once = Optional(archive)
            let imported = try await importing.importTenant(opening: sealing) { defer { once = nil }; return once }
            #expect(imported["tenantId"]?.stringValue == owned.rawValue)
            let shown = try await importing.call("admin.tenants.get", params: ["tenantId": .string(owned.rawValue)])
            #expect(shown["backendId"]?.stringValue == importer.id)

            // A tenant exports itself here (allowed), not on the destination (the default: off).
            let started = try await other.client.call("tenant.export", params: ["passphrase": "the tenant's own"])
            let exportID = try #require(started["exportId"]?.stringValue)
            var own: [UInt8] = []
            while true {
                let chunk = try await other.client.call("tenant.exportChunk", params: ["exportId": .string(exportID)])
                if chunk["done"] == true { break }
                let text = try #require(chunk["data"]?.stringValue)
                own += Array(try #require(Data(base64Encoded: text)))
            }
            #expect(own.starts(with: Array("AERIEARC".utf8)))
            let elsewhere = try await destination.client()
            let token = try #require(try await destinationAdmin.call("admin.tenants.create", params: ["label": "x"])["token"]?.stringValue)
            try await elsewhere.authenticate(token: token)
            await expectCode("forbidden") { try await elsewhere.call("tenant.export", params: ["passphrase": "the tenant's own"]) }
            for client in [sourceAdmin, destinationAdmin, session, importing, other.client, elsewhere] { await client.close() }
        } catch {
            Issue.record(error)
        }
        try await source.stop()
        try await destination.stop()
        await endpoint.stop()
    }

    /// The issue's check with a real peer: a tenant connected to ACA-Py 1.2.7 in both roles, with
    /// ACA-Py's messages in its mailbox, moves; ACA-Py's next messages land on the new server
    /// through the shared endpoint, the tenant pings ACA-Py from there on both connections, and
    /// the listings are the same.
    @Test func aTenantConnectedToACAPyInBothRolesMovesAndACAPyStillReachesIt() async throws {
        let agent = try await ACAPyAgent.start()
        let endpoint = try await SharedEndpoint()
        let source = try await LiveServer.start(server: { Self.configure(&$0, endpoint: endpoint.url) })
        let destination = try await LiveServer.start(server: { Self.configure(&$0, endpoint: endpoint.url) })
        endpoint.route(to: [source.didcommPort, destination.didcommPort])
        do {
            let alice = try await Self.tenant(source, label: "Alice ACA-Py Mover")
            _ = try await alice.client.call("settings.set", params: ["key": "profile", "value": ["name": "Alice Secret Name"]])
            // Alice as invitee: ACA-Py's invitation.
            let invitation = try await agent.admin("POST", "/connections/create-invitation", body: [:])
            let acapyInviter = try #require(invitation["connection_id"]?.stringValue)
            let accepted = try await alice.client.call(
                "connections.accept", params: ["url": invitation["invitation_url"]!, "wait": true, "timeoutSeconds": 30])
            #expect(accepted["state"] == 4, "\(accepted)")
            let aliceInvitee = try #require(accepted["connectionId"]?.stringValue)
            _ = try await agent.waitForConnection(acapyInviter, states: ["active", "completed"])
            // Alice as inviter: ACA-Py takes hers.
            let created = try await alice.client.call("connections.createInvitation", params: ["label": "Aerie Alice"])
            let aliceInviter = try #require(created["connectionId"]?.stringValue)
            let theirs = try await agent.admin("POST", "/connections/receive-invitation?auto_accept=true", body: created["invitation"])
            let acapyInvitee = try #require(theirs["connection_id"]?.stringValue)
            _ = try await agent.waitForConnection(acapyInvitee, states: ["active", "completed"])
            _ = try await InviterTests.waitForState(alice.client, aliceInviter, 4)
            for (n, connection) in [acapyInviter, acapyInvitee].enumerated() {
                _ = try await agent.admin("POST", "/connections/\(connection)/send-message", body: ["content": .string("before \(n)")])
                #expect(try await InviterTests.receives(alice.client, content: "before \(n)"))
            }
            let before = try await Self.listings(alice.client)
            let aliceDIDs = (before[0]["connections"]?.arrayValue ?? []).compactMap { $0["pwDid"]?.stringValue }
            #expect(aliceDIDs.count == 2)

            let (sourceAdmin, destinationAdmin) = (try await source.adminClient(), try await destination.adminClient())
            _ = try await sourceAdmin.moveTenant(alice.id, to: destinationAdmin)
            let moved = try await destination.client()
            try await moved.authenticate(token: alice.token)
            #expect(try await Self.listings(moved) == before)
            for (n, connection) in [acapyInviter, acapyInvitee].enumerated() {
                _ = try await agent.admin("POST", "/connections/\(connection)/send-message", body: ["content": .string("after \(n)")])
                #expect(try await InviterTests.receives(moved, content: "after \(n)"), "ACA-Py's message \(n) after the move")
            }
            for connection in [aliceInvitee, aliceInviter] {
                let pong = try await moved.call("connections.ping", params: ["connectionId": .string(connection), "timeoutSeconds": 20])
                #expect(pong["roundTripMs"] != nil, "\(pong)")
            }
            #expect(try await Self.rowsLeft(source.database, tenant: alice.id) == 0)
            let dump = try SealedStorageTests.pgDump(source.database.superuserConninfo)
            SealedStorageTests.expectNoSecrets([alice.id.rawValue] + aliceDIDs, in: dump, "the old server's pg_dump after the move")
            for client in [alice.client, moved, sourceAdmin, destinationAdmin] { await client.close() }
        } catch {
            Issue.record("\(error)\nACA-Py log:\n\(agent.log().suffix(3000))")
        }
        try await source.stop()
        try await destination.stop()
        await endpoint.stop()
        await agent.stop()
    }

    /// A move to a server with another public endpoint: each server its own endpoint, database
    /// and master key. After the move, the tenant rotates every connection's DID at the new
    /// server (`rotateEveryConnection`), and ACA-Py 1.2.7, in both roles, follows: its next
    /// messages land on the new server, and the tenant's reach it. (ACA-Py sends its ack to the
    /// old DID's endpoint, the old server, which answers 503: the rotation is not waited for.)
    @Test func aMoveToAnotherEndpointIsAnnouncedByDIDRotateAndACAPyFollows() async throws {
        let hooks = try await ACAPyWebhooks()
        let agent = try await ACAPyAgent.start(extraArguments: ["--webhook-url", hooks.url])
        let source = try await LiveServer.start(server: TenantImportTests.configure)
        let destination = try await LiveServer.start(server: TenantImportTests.configure)
        do {
            let alice = try await Self.tenant(source, label: "Alice Rotating Mover")
            let invitation = try await agent.admin("POST", "/connections/create-invitation", body: [:])
            let acapyInviter = try #require(invitation["connection_id"]?.stringValue)
            let accepted = try await alice.client.call(
                "connections.accept", params: ["url": invitation["invitation_url"]!, "wait": true, "timeoutSeconds": 30])
            #expect(accepted["state"] == 4, "\(accepted)")
            _ = try await agent.waitForConnection(acapyInviter, states: ["active", "completed"])
            let created = try await alice.client.call("connections.createInvitation", params: ["label": "Aerie Alice"])
            let aliceInviter = try #require(created["connectionId"]?.stringValue)
            let theirs = try await agent.admin("POST", "/connections/receive-invitation?auto_accept=true", body: created["invitation"])
            let acapyInvitee = try #require(theirs["connection_id"]?.stringValue)
            _ = try await agent.waitForConnection(acapyInvitee, states: ["active", "completed"])
            _ = try await InviterTests.waitForState(alice.client, aliceInviter, 4)

            let (sourceAdmin, destinationAdmin) = (try await source.adminClient(), try await destination.adminClient())
            _ = try await sourceAdmin.moveTenant(alice.id, to: destinationAdmin)
            let moved = try await destination.client()
            try await moved.authenticate(token: alice.token)
            var before: [String: JSONValue] = [:]
            for connection in [acapyInviter, acapyInvitee] {
                before[connection] = try await agent.admin("GET", "/connections/\(connection)")["their_did"]
            }
            let rotated = try await moved.rotateEveryConnection()
            #expect(rotated.count == 2, "\(rotated)")
            // The rotate is delivered after the call answers: ACA-Py sends to the new endpoint
            // once it has taken the new DID, so wait for that (its `their_did` changes).
            for connection in [acapyInviter, acapyInvitee] {
                var theirDid = before[connection]
                for _ in 0..<150 where theirDid == before[connection] {
                    try await Task.sleep(for: .milliseconds(200))
                    theirDid = try await agent.admin("GET", "/connections/\(connection)")["their_did"]
                }
                #expect(theirDid != before[connection], "ACA-Py never took the rotated DID of \(connection)")
            }
            for (n, connection) in [acapyInviter, acapyInvitee].enumerated() {
                _ = try await agent.admin("POST", "/connections/\(connection)/send-message", body: ["content": .string("rotated \(n)")])
                #expect(try await InviterTests.receives(moved, content: "rotated \(n)"), "ACA-Py's message \(n) after the rotation")
            }
            let listed = try await moved.call("connections.list")
            for (n, connection) in (listed["connections"]?.arrayValue ?? []).compactMap({ $0["connectionId"]?.stringValue }).enumerated() {
                let text = "from the new server \(n)"
                _ = try await moved.call("messages.sendText", params: ["connectionId": .string(connection), "content": .string(text)])
                let seen = try await hooks.wait("basicmessages") { $0["content"] == .string(text) }
                #expect(seen != nil, "\(text) never reached ACA-Py")
            }
            for client in [alice.client, moved, sourceAdmin, destinationAdmin] { await client.close() }
        } catch {
            Issue.record("\(error)\nACA-Py log:\n\(agent.log().suffix(3000))")
        }
        try await source.stop()
        try await destination.stop()
        await agent.stop()
    }
}
