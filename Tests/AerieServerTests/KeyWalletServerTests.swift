import AerieClient
import AerieCore
import AerieCrypto
import AerieStore
import AerieTesting
import Foundation
import Testing

/// The wallet as plugins reach it on a running server: through each call's `TenantContext`,
/// whose keyring unwraps the tenant's data key with the server's master key.
@Suite(.timeLimit(.minutes(10))) struct KeyWalletServerTests {
    @Test func tenantSessionsUseTheirOwnWalletsOnly() async throws {
        try await LiveServer.with(extraPlugins: [KeyProbePlugin()]) { server in
            let (alice, aliceID) = try await server.tenantClient(label: "alice")
            let (bob, bobID) = try await server.tenantClient(label: "bob")
            defer {
                Task {
                    await alice.close()
                    await bob.close()
                }
            }

            let aliceKey = try #require(try await alice.call("keyprobe.create").stringValue)
            let bobKey = try #require(try await bob.call("keyprobe.create").stringValue)
            #expect(try await alice.call("keyprobe.list") == .array([.string(aliceKey)]))
            #expect(try await bob.call("keyprobe.list") == .array([.string(bobKey)]))

            let signature = try #require(
                try await alice.call("keyprobe.sign", params: ["verkey": .string(aliceKey), "data": "hi"]).stringValue)
            #expect(KeyWallet.verify(signature: try Base64.decode(signature), of: Array("hi".utf8), by: aliceKey))
            await expectCode("not_found") {
                try await bob.call("keyprobe.sign", params: ["verkey": .string(aliceKey), "data": "hi"])
            }

            let envelope = try #require(
                try await bob.call(
                    "keyprobe.pack",
                    params: ["message": "{\"x\":1}", "to": [.string(aliceKey)], "from": .string(bobKey)]
                ).stringValue)
            let opened = try await alice.call("keyprobe.unpack", params: ["envelope": .string(envelope)])
            #expect(opened["message"] == "{\"x\":1}")
            #expect(opened["sender"] == .string(bobKey))
            #expect(opened["recipient"] == .string(aliceKey))
            await expectCode("internal_error") {  // unknown_recipient is a CryptoError, not an AerieError
                try await bob.call("keyprobe.unpack", params: ["envelope": .string(envelope)])
            }

            let runtime = server.database.runtime()
            defer { Task { await runtime.shutdown() } }
            #expect(try await runtime.tenants.owner(ofVerkey: aliceKey)?.tenant == aliceID)
            #expect(try await runtime.tenants.owner(ofVerkey: bobKey)?.tenant == bobID)
        }
    }

    @Test func deletingATenantDeletesItsKeysAndSparesTheOther() async throws {
        try await LiveServer.with(extraPlugins: [KeyProbePlugin()]) { server in
            let admin = try await server.adminClient()
            let (alice, aliceID) = try await server.tenantClient(label: "alice")
            let (bob, _) = try await server.tenantClient(label: "bob")
            defer {
                Task {
                    await admin.close()
                    await alice.close()
                    await bob.close()
                }
            }
            let aliceKeys = [
                try #require(try await alice.call("keyprobe.create").stringValue),
                try #require(try await alice.call("keyprobe.create").stringValue),
            ]
            let bobKey = try #require(try await bob.call("keyprobe.create").stringValue)

            let deleted = try await admin.call("admin.tenants.delete", params: ["tenantId": .string(aliceID.rawValue)])
            #expect(deleted["rowsRemoved"]?["tenant_keys"] == 2)
            #expect(deleted["rowsRemoved"]?["tenant_settings"] == 0)

            let left = try await WalletFixture.asSuperuser(server.database) { session in
                try session.query("SELECT tenant_id::text, verkey FROM aerie.tenant_keys").allRows()
            }
            #expect(left.map { $0[1] } == [bobKey])
            let runtime = server.database.runtime()
            defer { Task { await runtime.shutdown() } }
            for key in aliceKeys { #expect(try await runtime.tenants.owner(ofVerkey: key)?.tenant == nil) }
            _ = try await bob.call("keyprobe.sign", params: ["verkey": .string(bobKey), "data": "still here"])
        }
    }
}
