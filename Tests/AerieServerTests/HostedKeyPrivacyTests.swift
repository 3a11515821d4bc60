import AerieClient
import AerieCore
import AerieCrypto
import AerieTesting
import Foundation
import Testing

/// Issue 13 item 6: the inbound endpoint does not tell which verkeys are hosted; the admin token
/// can be rotated (over RPC, with `aerie-admin admin rotate-token`, or directly in the database
/// when no token is at hand); strings PostgreSQL cannot store are refused as invalid params.
@Suite(.timeLimit(.minutes(10))) struct HostedKeyPrivacyTests {
    @Test func unknownAndHostedRecipientsGetTheSameAnswer() async throws {
        try await LiveServer.with(server: { $0.outbound.allowPrivateURLs = true }) { server in
            let (alice, _) = try await server.tenantClient(label: "alice")
            defer { Task { await alice.close() } }
            let created = try await alice.call("connections.createWithInvite", params: ["invitation": try DIDCommEndpointTests.deadInvitation()])
            let id = try #require(created["connectionId"]?.stringValue)
            let connected = try await alice.call("connections.connect", params: ["connectionId": .string(id)])
            let hosted = try #require(connected["pwVerkey"]?.stringValue)
            let stranger = Ed25519KeyPair.generate()
            let sender = Ed25519KeyPair.generate()
            let message = Array(#"{"@type":"https://didcomm.org/trust_ping/1.0/ping","@id":"p"}"#.utf8)

            // A hosted key listed in an envelope that does not open for it.
            var forged = try JSONValue(parsing: try DIDCommEnvelope.pack(message, to: [stranger.verkeyBase58], from: sender))
            let header = try JSONValue(parsing: try Base64.decode(try #require(forged["protected"]?.stringValue)))
            let swapped = header.jsonString.replacingOccurrences(of: stranger.verkeyBase58, with: hosted)
            if case .object(var fields) = forged {
                fields["protected"] = .string(Base64.encodeURL(Array(swapped.utf8)))
                forged = .object(fields)
            }
            let bodies: [String: [UInt8]] = [
                "garbage": Array("not an envelope".utf8),
                "unknown recipient": try DIDCommEnvelope.pack(message, to: [stranger.verkeyBase58], from: sender),
                "hosted, does not open": forged.serialized(),
                "huge kid": HostileEnvelopes.anoncrypt(kids: [String(repeating: "z", count: 300_000)]),
            ]
            for (name, body) in bodies {
                #expect(try await DIDCommEndpointTests.post(body, to: server.didcommPort) == 400, "\(name)")
            }
        }
    }

    @Test func adminTokenRotatesOverRPC() async throws {
        try await LiveServer.with { server in
            let old = try await server.adminClient()
            defer { Task { await old.close() } }
            let rotated = try await old.call("admin.rotateToken")
            let token = try #require(rotated["token"]?.stringValue)
            #expect(token.hasPrefix("aerie_a_") && token != server.adminToken)
            await expectCode("unauthenticated") { try await old.call("admin.tenants.list") }
            let stale = try await server.client()
            await expectCode("unauthenticated") { try await stale.authenticate(token: server.adminToken) }
            await stale.close()
            let fresh = try await server.client()
            _ = try await fresh.authenticate(token: token)
            _ = try await fresh.call("admin.tenants.list")
            await fresh.close()
        }
    }

    @Test func adminToolRotatesTheTokenAndWritesItPrivately() async throws {
        try await LiveServer.with { server in
            let home = FileManager.default.temporaryDirectory.appendingPathComponent("aerie-rotate-\(UUID().uuidString)")
            defer { try? FileManager.default.removeItem(at: home) }
            let result = try await AdminTool(server: server).run(["admin", "rotate-token", "--home", home.path])
            #expect(result.status == 0, "\(result.stderr)")
            let file = home.appendingPathComponent("admin-token")
            let mode = try FileManager.default.attributesOfItem(atPath: file.path)[.posixPermissions] as? NSNumber
            #expect(mode?.intValue == 0o600)
            let token = try String(contentsOf: file, encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines)
            #expect(!result.stdout.contains(token))
            let client = try await server.client()
            _ = try await client.authenticate(token: token)
            _ = try await client.call("admin.tenants.list")
            await client.close()
            let stale = try await AdminTool(server: server).run(["tenant", "list"])
            #expect(stale.status == 4)
        }
    }

    /// The way back in: no token file, no token; `--direct` issues one in the database.
    @Test func directRotationIsTheWayBackIn() async throws {
        try await LiveServer.with { server in
            let home = FileManager.default.temporaryDirectory.appendingPathComponent("aerie-direct-\(UUID().uuidString)")
            defer { try? FileManager.default.removeItem(at: home) }
            var environment = ProcessInfo.processInfo.environment.filter { !$0.key.hasPrefix("AERIE_") }
            environment["AERIE_HOME"] = home.path
            environment["AERIE_DATABASE_URL"] = server.database.runtimeConninfo
            environment["AERIE_OWNER_DATABASE_URL"] = server.database.ownerConninfo
            let result = try await runProcess(
                try BuiltProducts.executable("aerie-admin"), ["admin", "rotate-token", "--direct"], environment: environment)
            #expect(result.status == 0, "\(result.stderr)")
            let file = home.appendingPathComponent("admin-token")
            let mode = try FileManager.default.attributesOfItem(atPath: file.path)[.posixPermissions] as? NSNumber
            #expect(mode?.intValue == 0o600)
            #expect(!FileManager.default.fileExists(atPath: file.path + ".new"))
            let token = try String(contentsOf: file, encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines)
            let client = try await server.client()
            _ = try await client.authenticate(token: token)
            _ = try await client.call("admin.tenants.list")
            await client.close()
            let old = try await server.client()
            await expectCode("unauthenticated") { try await old.authenticate(token: server.adminToken) }
            await old.close()
        }
    }

    @Test func nulCharactersAreInvalidParamsNamingTheField() async throws {
        try await LiveServer.with { server in
            let (tenant, _) = try await server.tenantClient(label: "nul")
            defer { Task { await tenant.close() } }
            for (method, params, field) in [
                ("settings.set", JSONValue.object(["key": "a\u{0}b", "value": "x"]), "key"),
                ("settings.set", ["key": "k", "value": ["nested": ["x", "y\u{0}"]]], "value.nested[1]"),
                ("messages.updateStatus", ["status": "MS-106", "messages": [["pairwiseDID": "d\u{0}", "uids": ["u"]]]], "messages[0].pairwiseDID"),
                ("connections.parseInvitation", ["url": "https://x.example/?c_i=\u{0}"], "url"),
            ] {
                do {
                    _ = try await tenant.call(method, params: params)
                    Issue.record("\(method) accepted U+0000")
                } catch let error as AerieClientError {
                    #expect(error.code == -32602, "\(method): \(error)")
                    #expect(error.data?["field"]?.stringValue == field, "\(method): \(error)")
                }
            }
            // The session and the database are fine afterwards.
            _ = try await tenant.call("settings.set", params: ["key": "k", "value": "ok"])
        }
    }
}
